"""Compile calltrace.c into the builtin tracer's recorder, ``scorep_kernel.measure._calltrace``
(a CPython extension: one per Python version). Used by the wheel's build hook
(hatch_build.py) and by `make setup` (`python kernel/native/build_calltrace.py`, in place).

Built for CPython 3.11 only: there the profile function (PyEval_SetProfile) is the way to
see calls, and ours costs less than VizTracer's (benchmarks/tracer_overhead.py). From 3.12
on calls are seen through sys.monitoring, which VizTracer's tracer uses; the kernel uses that
one there (measure.engine). Without a C compiler the build says so and goes on; the kernel
then records with VizTracer's tracer everywhere.
"""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "calltrace.c"
MODULE = "_calltrace"
PACKAGE_DIR = HERE.parent / "scorep_kernel" / "measure"
SUPPORTED = ((3, 11),)


def file_name() -> str:
    return MODULE + str(sysconfig.get_config_var("EXT_SUFFIX") or ".so")


def _scanner_build() -> Any:
    """server_ext/native/build_scanner.py: the compiler lookup and the atomic compile."""
    sys.path.insert(0, str(HERE.parent.parent / "server_ext" / "native"))
    try:
        import build_scanner
    finally:
        sys.path.pop(0)
    return build_scanner


def build(target_dir: Path = PACKAGE_DIR, force: bool = False) -> Path | None:
    """The extension in ``target_dir``, or None (with the reason printed) where it is not
    built. Rebuilt when the source is newer, or always with ``force``."""
    if sys.version_info[:2] not in SUPPORTED or sys.implementation.name != "cpython":
        print(
            f"build_calltrace: Python {sys.version.split()[0]} records with VizTracer's "
            "tracer (sys.monitoring); the C recorder is for CPython 3.11",
            file=sys.stderr,
        )
        return None
    target = target_dir / file_name()
    if not force and target.exists() and target.stat().st_mtime >= SOURCE.stat().st_mtime:
        return target
    cc = _scanner_build().compiler()
    if cc is None:
        print(
            f"build_calltrace: no C compiler (set CC or install gcc): {target.name} is not "
            "built; the kernel records with VizTracer's tracer instead (slower)",
            file=sys.stderr,
        )
        return None
    target_dir.mkdir(parents=True, exist_ok=True)
    return _scanner_build().compile_shared(
        [*cc, "-O2", "-Wall", "-Wextra", "-Wno-missing-field-initializers", "-shared", "-fPIC",
         f"-I{sysconfig.get_paths()['include']}", str(SOURCE)],
        target,
        "build_calltrace",
        "the kernel records with VizTracer's tracer instead (slower)",
    )  # fmt: skip


if __name__ == "__main__":
    built = build(force="--force" in sys.argv)
    print(built or "not built")
