"""``SCOREP_EXPERIMENT_DIRECTORY=P`` in a notebook: Score-P's rule, for many runs.

Plain Score-P writes one run into ``P``; when ``P`` exists already it moves it aside first
(to ``P-<YYYYMMDD_HHMM>_<number>``, ``SCOREP_OVERWRITE_EXPERIMENT_DIRECTORY``'s default),
so the newest run is always at ``P`` and no run is lost. A notebook profiles many cells in
one kernel, and a cell's panel must keep showing its own run after the next one, so each
run is written into a directory of its own beside ``P``, ``P-<experiment id>`` (stable:
the bundle's path), and ``P`` becomes a symbolic link to the newest of them. Reading
``P/traces.otf2`` gives the latest trace, as under plain Score-P; every run lies beside it
(the history finds them there). A real directory or file at ``P`` (a plain Score-P run,
say) is moved aside by Score-P's rule the first time; an empty directory is removed, as
nothing in it would be kept. With ``SCOREP_OVERWRITE_EXPERIMENT_DIRECTORY=false`` Score-P
refuses an existing ``P``; so does the kernel, with the cause and the fix.
"""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path

from scorep_kernel.settings import SettingsError, flag

OVERWRITE_VARIABLE = "SCOREP_OVERWRITE_EXPERIMENT_DIRECTORY"


def run_directory(named: Path, exp_id: str) -> Path:
    """Where the run ``exp_id`` is written when the user named ``named``."""
    return named.parent / f"{named.name}-{exp_id}"


def named_for(run_dir: Path, exp_id: str) -> Path | None:
    """The user's ``P`` of a run directory made by ``run_directory``, else None."""
    suffix = f"-{exp_id}"
    if run_dir.name.endswith(suffix) and len(run_dir.name) > len(suffix):
        return run_dir.parent / run_dir.name[: -len(suffix)]
    return None


def _moved_aside_name(named: Path) -> Path:
    stamp = time.strftime("%Y%m%d_%H%M")
    while True:  # Score-P's pattern: <name>-<date>_<time>_<number>
        candidate = named.parent / f"{named.name}-{stamp}_{secrets.randbelow(10**12)}"
        if not os.path.lexists(candidate):
            return candidate


def point_at(run_dir: Path, exp_id: str, scorep_env: dict[str, str] | None = None) -> str | None:
    """Make the user's ``P`` (if ``run_dir`` was made for one) point at ``run_dir``. Returns
    a sentence for the run's output when something the user had was moved aside."""
    named = named_for(run_dir, exp_id)
    if named is None:
        return None
    said = None
    if os.path.lexists(named) and not named.is_symlink():
        said = move_aside(named, scorep_env or {})
    link = named.parent / f".{named.name}.{secrets.token_hex(4)}.link"
    os.symlink(run_dir.name, link)  # relative: the pair can be moved together
    try:
        os.replace(link, named)  # a link replaces a link atomically
    except OSError:
        os.unlink(link)
        raise
    return said


def move_aside(named: Path, scorep_env: dict[str, str]) -> str | None:
    """Score-P's rule for an existing ``named``: moved aside (an empty directory removed);
    a sentence saying so, or None. SettingsError where the user forbade it."""
    overwrite = scorep_env.get(OVERWRITE_VARIABLE) or os.environ.get(OVERWRITE_VARIABLE)
    if overwrite and not flag(OVERWRITE_VARIABLE, overwrite):
        raise SettingsError(
            f"SCOREP_EXPERIMENT_DIRECTORY names {named}, which exists, and "
            f"{OVERWRITE_VARIABLE}={overwrite} forbids moving it aside (as Score-P refuses "
            f"to). Remove or rename {named}, or unset {OVERWRITE_VARIABLE}."
        )
    if named.is_dir() and not any(named.iterdir()):
        named.rmdir()  # nothing in it to keep
        return None
    aside = _moved_aside_name(named)
    named.rename(aside)
    return (
        f"{named.name} existed and was moved aside to {aside.name}, as Score-P does; "
        f"{named.name} now points at this run."
    )
