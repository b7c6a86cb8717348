"""The line a headless run prints per cell: ``[3/6] profiled ok   1.02 s  first line of
source``, written in place while the cell runs when the output is a terminal, painted
when colour is on; an error's traceback below its cell's line."""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING, TextIO

from . import cells as cellsel
from . import run_summary as hs

if TYPE_CHECKING:
    from .run_results import CellRun


class ProgressLines:
    def __init__(self, out: TextIO, *, color: bool, tty: bool, cells: int):
        self.out = out
        self.color = color
        self.tty = tty
        self.cells = cells  # how many code cells the notebook has

    def say(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    def _paint(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text

    @staticmethod
    def _colour(status: str) -> str:
        return {"ok": "32", "error": "31", "died": "31"}.get(status, "33")

    def _line(self, c: CellRun, status: str | None, profiled: str, width: int = 0) -> str:
        """``[3/6] profiled ok          1.02 s  first line of source``; ``width`` > 0 cuts it
        to one screen line (before the status is painted)."""
        n = self.cells
        number = f"[{c.code.number}/{n}]".ljust(len(f"[{n}/{n}]"))
        word = (status or "running").ljust(11)
        wall = hs.fmt_seconds(c.wall_s) if status is not None else ""
        head = f"{number} {profiled.ljust(8)} {word} {wall.rjust(8)}  "
        line = (head + cellsel.first_line(c.code.cell.source)).rstrip()
        if width and len(line) > width:
            line = line[: max(width - 1, len(head))] + "…"
        if status is not None and self.color:
            line = line.replace(word, self._paint(word, self._colour(status)), 1)
        return line

    def start(self, c: CellRun) -> None:
        if self.tty:  # rewritten in place when the cell ends
            line = self._line(c, None, "profile" if c.toggled else "", self._width())
            print(line, end="", file=self.out, flush=True)

    def end(self, c: CellRun) -> None:
        profiled = "profiled" if c.experiment_paths else ""
        if self.tty:
            self.say("\r\x1b[K" + self._line(c, c.status, profiled, self._width()))
        else:
            self.say(self._line(c, c.status, profiled))
        if c.error and c.status == hs.CELL_ERROR:
            tb = c.error["traceback"]
            self.say("\n".join("    " + line for line in tb.splitlines()))

    @staticmethod
    def _width() -> int:
        return shutil.get_terminal_size().columns - 1
