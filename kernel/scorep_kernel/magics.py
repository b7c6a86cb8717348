"""The paper's cell magics, recognised by the kernel before IPython sees the cell.

    %%execute_with_scorep               profile this cell
    %%scorep_env                        lines KEY=VALUE for SCOREP_* variables
    %%scorep_python_binding_arguments   arguments for `python -m scorep`
    %%enable_multicellmode              start a multi-cell run (this cell's code, if any, is its first cell)
    %%finalize_multicellmode            end it (this cell's code, if any, is its last cell)
    %%abort_multicellmode               drop it
    %%scorep_mpi -n N [launcher args]   profile this cell as N MPI ranks (scorep_kernel.mpi)
    %scorep_mpi [stop]                  (a cell of its own) the MPI ranks kept up; stop ends them

scorep-jupyter 1.2's own (``PEER_MAGICS``, their meaning here: scorep_kernel.peer_magics),
and the ``%scorep`` line magic (registered in the kernel's IPython shell).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from scorep_kernel.settings import SettingsError

PEER_MAGICS = (
    "marshalling_settings",
    "start_writefile",
    "end_writefile",
    "abort_writefile",
    "enable_vampir_launch_on_scorep_instrumented",
    "disable_vampir_launch_on_scorep_instrumented",
    "disable_vampir_launch",  # scorep-jupyter accepts this shorter name too
)
CELL_MAGICS = (
    "execute_with_scorep",
    "scorep_env",
    "scorep_python_binding_arguments",
    "enable_multicellmode",
    "finalize_multicellmode",
    "abort_multicellmode",
    "scorep_mpi",
    *PEER_MAGICS,
)


@dataclass
class CellMagic:
    name: str
    args: str  # rest of the magic's line
    body: str  # the cell below the magic line


def parse_cell_magic(code: str) -> CellMagic | None:
    """The paper magic this cell starts with, or None. Blank lines before it are allowed."""
    stripped = code.lstrip()
    if not stripped.startswith("%%"):
        return None
    first, _, body = stripped.partition("\n")
    name, _, args = first[2:].partition(" ")
    name = name.strip()
    if name not in CELL_MAGICS:
        return None
    return CellMagic(name=name, args=args.strip(), body=body)


def parse_scorep_env(body: str) -> dict[str, str]:
    """``KEY=VALUE`` lines; only SCOREP_* variables (others would silently change the
    worker's environment, which the user can do with os.environ in the cell)."""
    env: dict[str, str] = {}
    for number, raw in enumerate(body.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export ") :].strip()
        key, eq, value = line.partition("=")
        key = key.strip()
        if not eq or not key:
            raise SettingsError(
                f"%%scorep_env line {number}: {raw!r} is not KEY=VALUE "
                "(e.g. SCOREP_ENABLE_TRACING=true)"
            )
        if not key.startswith("SCOREP_"):
            raise SettingsError(
                f"%%scorep_env line {number}: {key} is not a Score-P variable; only SCOREP_* "
                "variables are set here (set others with os.environ in a cell)"
            )
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        env[key] = value
    return env


def parse_binding_arguments(body: str) -> list[str]:
    try:
        args = shlex.split(body, comments=True)
    except ValueError as e:
        raise SettingsError(
            f"%%scorep_python_binding_arguments: cannot split the line ({e})"
        ) from None
    for arg in args:
        if not arg.startswith("-"):
            raise SettingsError(
                f"%%scorep_python_binding_arguments: {arg!r} is not an option; the bindings "
                "take options only (e.g. --instrumenter-type=cTrace --noinstrumenter)"
            )
    return args
