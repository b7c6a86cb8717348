"""Build hook: the native OTF2 scanner (server_ext/native/) goes into the wheel.

An editable install builds it in place (the package is the source tree there); a wheel
gets it built under build/ and placed at jupyterlab_scorep/trace/libotf2_scan.so, tagged
py3-none-<platform> (it holds no Python-version-specific code). Without a C compiler the
wheel stays pure Python and the server reads event files with numpy.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

ROOT = Path(__file__).resolve().parent


def _build_scanner() -> Any:
    spec = importlib.util.spec_from_file_location(
        "build_scanner", ROOT / "server_ext" / "native" / "build_scanner.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class NativeScannerHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        scanner = _build_scanner()
        if version == "editable":
            scanner.build()
            return
        built = scanner.build(ROOT / "build" / "native" / scanner.LIBRARY)
        if built is None:
            return
        build_data["pure_python"] = False
        build_data["tag"] = scanner.wheel_platform_tag()
        build_data["force_include"][str(built)] = f"jupyterlab_scorep/trace/{scanner.LIBRARY}"
