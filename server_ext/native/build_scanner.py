"""Compile otf2_scan.c (and lod_merge.c, busy_search.c) into the shared library the server loads with ctypes
(jupyterlab_scorep/trace/otf2_scan.py). Used by the wheel's build hook (hatch_build.py) and by
`make setup` (`python server_ext/native/build_scanner.py`, which builds it in place).

It needs only a C compiler: the library uses no Python headers. Without one the build
says so and goes on; the server then reads OTF2 event files with numpy (~10x slower).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "otf2_scan.c"
# the scanner, the timeline levels' merge, the heat map's search
SOURCES = (SOURCE, HERE / "lod_merge.c", HERE / "busy_search.c")
LIBRARY = "libotf2_scan.so"  # otf2_scan.LIBRARY
IN_PLACE = HERE.parent / "jupyterlab_scorep" / "trace" / LIBRARY


def compiler() -> list[str] | None:
    """$CC, else the compiler Python was built with, else cc/gcc/clang on PATH."""
    for candidate in (os.environ.get("CC"), sysconfig.get_config_var("CC")):
        if candidate:
            argv = shlex.split(candidate)
            if shutil.which(argv[0]):
                return argv
    for name in ("cc", "gcc", "clang"):
        if shutil.which(name):
            return [name]
    return None


def build(target: Path = IN_PLACE, force: bool = False) -> Path | None:
    """The library at ``target``, or None (with the reason printed) where it cannot be
    built. Rebuilt when the source is newer, or always with ``force``."""
    newest = max(source.stat().st_mtime for source in SOURCES)
    if not force and target.exists() and target.stat().st_mtime >= newest:
        return target
    cc = compiler()
    if cc is None:
        print(
            f"build_scanner: no C compiler (set CC or install gcc): {LIBRARY} is not built; "
            "the server reads OTF2 event files with numpy instead (slower)",
            file=sys.stderr,
        )
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    return compile_shared(
        [*cc, "-O2", "-std=c99", "-Wall", "-Wextra", "-shared", "-fPIC", *map(str, SOURCES),
         "-lm"],  # rint: the clock correction rounds as libotf2 does
        target,
        "build_scanner",
        "the server reads OTF2 event files with numpy instead (slower)",
    )  # fmt: skip


def compile_shared(args: list[str], target: Path, who: str, instead: str) -> Path | None:
    """Run the compiler (``args``: the command without its output) into a file beside
    ``target``, then move it into place at once: a running process never loads half a
    library. None, with the compiler's message and ``instead`` printed, where it fails."""
    tmp = target.with_name(target.name + ".tmp")
    argv = [*args, "-o", str(tmp)]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        print(
            f"{who}: {' '.join(argv)} failed:\n{done.stderr}\n{target.name} is not built; "
            + instead,
            file=sys.stderr,
        )
        return None
    if done.stderr.strip():
        print(done.stderr, file=sys.stderr)
    tmp.replace(target)
    return target


def wheel_platform_tag() -> str:
    """The library is tied to the platform, not to a Python version: py3-none-<platform>."""
    return "py3-none-" + sysconfig.get_platform().replace("-", "_").replace(".", "_")


if __name__ == "__main__":
    sys.exit(0 if build(force=True) else 1)
