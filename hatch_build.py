"""Build hook: the native code goes into the wheel.

- The OTF2 scanner (server_ext/native/): placed at jupyterlab_scorep/trace/libotf2_scan.so;
  it holds no Python-version-specific code, so alone it makes the wheel
  py3-none-<platform>.
- The builtin tracer's C recorder (kernel/native/calltrace.c): a CPython 3.11 extension,
  scorep_kernel/measure/_calltrace.cpython-311-*.so, built when the wheel is built on 3.11.
  It is optional: the kernel imports it where it can and records with VizTracer's tracer
  otherwise (3.12+ uses sys.monitoring there). So the wheel stays py3-none-<platform>: one
  wheel for every supported Python, the 3.11 one faster (it holds no stable-ABI code, but
  nothing of it is needed to run elsewhere).

An editable install builds both in place (the package is the source tree there); a wheel
gets them built under build/. Without a C compiler the wheel stays pure Python: the server
reads event files with numpy and the kernel records with VizTracer's tracer.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

ROOT = Path(__file__).resolve().parent


def _load(name: str, path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _build_scanner() -> Any:
    return _load("build_scanner", ROOT / "server_ext" / "native" / "build_scanner.py")


def _build_calltrace() -> Any:
    return _load("build_calltrace", ROOT / "kernel" / "native" / "build_calltrace.py")


class NativeScannerHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        scanner, calltrace = _build_scanner(), _build_calltrace()
        if version == "editable":
            scanner.build()
            calltrace.build()
            return
        built = scanner.build(ROOT / "build" / "native" / scanner.LIBRARY)
        if built is not None:
            build_data["pure_python"] = False
            build_data["tag"] = scanner.wheel_platform_tag()
            build_data["force_include"][str(built)] = f"jupyterlab_scorep/trace/{scanner.LIBRARY}"
        recorder = calltrace.build(ROOT / "build" / "native-calltrace")
        if recorder is not None:
            build_data["pure_python"] = False
            build_data["tag"] = scanner.wheel_platform_tag()
            build_data["force_include"][str(recorder)] = f"scorep_kernel/measure/{recorder.name}"
