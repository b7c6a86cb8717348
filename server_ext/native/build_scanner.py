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
    tmp = target.with_suffix(".so.tmp")
    argv = [
        *cc,
        "-O2",
        "-std=c99",
        "-Wall",
        "-Wextra",
        "-shared",
        "-fPIC",
        "-o",
        str(tmp),
        *map(str, SOURCES),
        "-lm",  # rint: the clock correction rounds as libotf2 does
    ]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        print(
            f"build_scanner: {' '.join(argv)} failed:\n{done.stderr}\n{LIBRARY} is not built; "
            "the server reads OTF2 event files with numpy instead (slower)",
            file=sys.stderr,
        )
        return None
    if done.stderr.strip():
        print(done.stderr, file=sys.stderr)
    tmp.replace(target)  # atomic: a running server never loads half a library
    return target


def wheel_platform_tag() -> str:
    """The library is tied to the platform, not to a Python version: py3-none-<platform>."""
    return "py3-none-" + sysconfig.get_platform().replace("-", "_").replace(".", "_")


if __name__ == "__main__":
    sys.exit(0 if build(force=True) else 1)
