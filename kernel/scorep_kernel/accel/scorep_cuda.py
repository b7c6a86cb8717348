"""Score-P's own CUDA adapter under the Score-P backend.

Where ``scorep-info config-summary`` reports CUDA support, a cell measured by Score-P
with the ``accelerators`` setting on (the default) gets ``SCOREP_CUDA_ENABLE`` =
``default,kernel_callsite`` (kernels, copies, the runtime API, and the launch ->
kernel callsite links the panel draws), unless the user set the variable
(``%%scorep_env``, the kernel's environment): Score-P then writes the device streams
("CUDA[0:7]") into its own trace and profile, which the server reads as the builtin
writer's. Where Score-P has no CUDA support the manifest's ``measurement.cuda`` says so
in words, and the panel shows them.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from typing import TypedDict

VARIABLE = "SCOREP_CUDA_ENABLE"
FEATURES = "default,kernel_callsite"
_LINE = re.compile(r"^\s*CUDA support:\s*(.+?)\s*$", re.M)


class CudaChoice(TypedDict):
    enabled: bool
    supported: bool
    value: str | None  # SCOREP_CUDA_ENABLE as the run got it
    message: str  # for the panel; "" when there is nothing to say


@functools.lru_cache(maxsize=4)
def cuda_support(scorep_info: str | None = None) -> tuple[bool, str]:
    """(supported, the config summary's own words) for the Score-P on PATH."""
    tool = scorep_info or shutil.which("scorep-info")
    if not tool:
        config = shutil.which("scorep-config")
        candidate = os.path.join(os.path.dirname(config), "scorep-info") if config else ""
        tool = candidate if candidate and os.path.exists(candidate) else None
    if not tool:
        return False, "scorep-info was not found beside scorep-config"
    try:
        out = subprocess.run([tool, "config-summary"], capture_output=True, text=True,
                             timeout=30, check=False).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError) as e:
        return False, f"scorep-info config-summary failed: {e}"
    found = _LINE.search(out)
    if found is None:
        return False, "scorep-info config-summary names no CUDA support"
    words = found.group(1)
    return words.lower().startswith("yes"), f"CUDA support: {words}"


def choose(
    scorep_env: Mapping[str, str], wanted: bool, base_env: Mapping[str, str] | None = None
) -> tuple[dict[str, str], CudaChoice]:
    """The run's %%scorep_env with SCOREP_CUDA_ENABLE where it applies, and what the
    manifest records of it."""
    env = dict(scorep_env)
    base = os.environ if base_env is None else base_env
    given = env.get(VARIABLE) or base.get(VARIABLE)
    supported, words = cuda_support()
    if given:
        return env, {"enabled": given.lower() not in ("no", "false", "0"), "supported": supported,
                     "value": given, "message": ""}  # fmt: skip
    if not wanted:
        return env, {"enabled": False, "supported": supported, "value": None, "message": ""}
    if not supported:
        message = (
            f"Score-P here records no GPU activity: it was built without CUDA support "
            f"(scorep-info config-summary: {words}). Use the builtin backend, whose "
            "torch.profiler records kernels and copies, or a Score-P configured with CUDA "
            "(--with-libcudart)."
        )
        return env, {"enabled": False, "supported": False, "value": None, "message": message}
    env[VARIABLE] = FEATURES
    return env, {"enabled": True, "supported": True, "value": FEATURES, "message": ""}
