"""What write mode records, and the two files it writes.

``<base>.py``: the recorded cells in order, each under a comment naming it; cells that were
not profiled run with the instrumenter off. ``<base>_run.sh``: exports the recorded
``SCOREP_*`` settings (``%%scorep_env``, ``%env SCOREP_...`` in the cells), then runs the
script with this kernel's interpreter under Score-P (``python -m scorep --thread=pthread
<recorded binding arguments>``) where Score-P is installed, else under the builtin tracer
(``python -m scorep_kernel.script <the same arguments>``); ``SCOREP_KERNEL_BACKEND=scorep``
or ``builtin`` chooses. Both files are rewritten after every recorded cell, so they always
hold what was recorded so far; ``%%abort_writefile`` removes them.
"""

from __future__ import annotations

import os
import shlex
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path

from scorep_kernel.write_mode.cell_code import IPYTHON_PRELUDE, script_cell

RUN_SUFFIX = "_run.sh"


def base_path(argument: str, cwd: str | os.PathLike) -> Path:
    """``%%start_writefile [path]``: the files' common path, without ``.py``."""
    path = Path(argument.strip() or "jupyter_to_script").expanduser()
    if path.suffix == ".py":
        path = path.with_suffix("")
    return (Path(cwd) / path).absolute()


@dataclass
class Recorded:
    label: str
    instrumented: bool
    code: str


@dataclass
class ScriptRecording:
    base: Path
    cells: list[Recorded] = field(default_factory=list)
    scorep_env: dict[str, str] = field(default_factory=dict)
    binding_args: list[str] = field(default_factory=list)
    uses_ipython: bool = False
    multicell: bool = False  # %%enable_multicellmode: the following cells are instrumented

    @property
    def script(self) -> Path:
        return self.base.with_name(self.base.name + ".py")

    @property
    def run_script(self) -> Path:
        return self.base.with_name(self.base.name + RUN_SUFFIX)

    def start(self) -> None:
        self.base.parent.mkdir(parents=True, exist_ok=True)
        self.write()

    def add(self, source: str, instrumented: bool) -> bool:
        """Record a cell; False when all it held were Score-P settings (for the run script)."""
        cell = script_cell(source, instrumented=instrumented)
        self.scorep_env.update(cell.scorep_env)
        if cell.empty and cell.scorep_env:
            self.write()
            return False
        self.uses_ipython = self.uses_ipython or cell.uses_ipython
        label = f"cell {len(self.cells) + 1}"
        self.cells.append(Recorded(label, instrumented, cell.code))
        self.write()
        return True

    def write(self) -> None:
        self.script.write_text(self.script_text())
        self.run_script.write_text(self.run_text())
        mode = self.run_script.stat().st_mode
        self.run_script.chmod(mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)

    def remove(self) -> None:
        for path in (self.script, self.run_script):
            path.unlink(missing_ok=True)

    def script_text(self) -> str:
        parts = [
            "# Recorded from a notebook by the Score-P kernel's write mode (%%start_writefile).\n"
            f"# Run it with {self.run_script.name}: under Score-P where it is installed, else\n"
            "# under the builtin tracer of jupyterlab-scorep. Cells that were not profiled run\n"
            "# with the instrumenter off (scorep.instrumenter.disable()).\n"
            "import sys\n\n"
            "import scorep\n\n"
            "# whole lines, in the order the notebook showed them (into a pipe, too)\n"
            "sys.stdout.reconfigure(line_buffering=True)\n",
        ]
        if self.uses_ipython:
            parts.append("\n\n" + IPYTHON_PRELUDE)
        for cell in self.cells:
            kind = "instrumented" if cell.instrumented else "not instrumented"
            parts.append(f"\n\n# --- {cell.label} ({kind}) ---\n{cell.code}")
        return "".join(parts)

    def run_text(self) -> str:
        args = [shlex.quote(a) for a in self.binding_args]
        # Score-P aborts on a second Python thread without a thread model
        threads = (
            [] if any(a.startswith("--thread") for a in self.binding_args) else ["--thread=pthread"]
        )
        exports = "".join(
            f"export {k}={shlex.quote(v)}\n" for k, v in sorted(self.scorep_env.items())
        )
        python, script = shlex.quote(sys.executable), shlex.quote(str(self.script))
        return (
            "#!/usr/bin/env bash\n"
            f"# Runs {self.script.name} as the notebook recorded it (the Score-P kernel's write\n"
            "# mode): under Score-P where it is installed, else under the builtin tracer.\n"
            "# SCOREP_KERNEL_BACKEND=scorep|builtin chooses; PYTHON=... another interpreter.\n"
            "set -euo pipefail\n"
            f"{exports}"
            f'PYTHON="${{PYTHON:-{python}}}"\n'
            'BACKEND="${SCOREP_KERNEL_BACKEND:-auto}"\n'
            'if [ "$BACKEND" = auto ]; then\n'
            '  if command -v scorep-config >/dev/null 2>&1 && "$PYTHON" -c "import scorep" 2>/dev/null; then\n'
            "    BACKEND=scorep\n"
            "  else\n"
            "    BACKEND=builtin\n"
            "  fi\n"
            "fi\n"
            'if [ "$BACKEND" = scorep ]; then\n'
            f"  exec {_command('-m scorep', *threads, *args, script)}\n"
            "fi\n"
            f"exec {_command('-m scorep_kernel.script', *args, script)}\n"
        )


def _command(*words: str) -> str:
    return " ".join(['"$PYTHON"', *words, '"$@"'])
