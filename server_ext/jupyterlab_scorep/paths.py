"""Which directories and files a request may touch.

An experiment is served only when its real path (symlinks resolved) lies under the server
root or one of ``ScorePExtension.experiment_roots`` and it holds a manifest.json. Files
inside it are served only when their real path stays inside the experiment.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from scorep_kernel import experiment as ex
from scorep_kernel import manifest as mf

from .domain_errors import BadParameter, NotFound, OutsideRoots


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


class Roots:
    def __init__(self, server_root: str | os.PathLike, extra: Iterable[str] = ()):
        self.server_root = os.path.realpath(os.path.expanduser(str(server_root)))
        self.extra = [os.path.realpath(os.path.expanduser(r)) for r in extra if r]

    @property
    def all(self) -> list[str]:
        return [self.server_root, *self.extra]

    def allowed(self, real: str) -> bool:
        return any(_within(real, root) for root in self.all)

    def resolve(self, param: str | None, what: str = "path") -> Path:
        """The real path a request parameter names, if it may be served."""
        if param is None or not param.strip():
            raise BadParameter(
                f"the {what} parameter is missing: pass the experiment "
                "directory, absolute or relative to the server root",
            )
        if "\x00" in param:
            raise BadParameter(f"the {what} parameter holds a NUL character")
        raw = Path(os.path.expanduser(param))
        if ".." in raw.parts:
            raise OutsideRoots(
                f"{param!r} climbs out with '..': name the directory "
                "directly (absolute or relative to the server root)",
                "Outside the roots",
            )
        candidate = raw if raw.is_absolute() else Path(self.server_root) / raw
        real = os.path.realpath(candidate)
        if not self.allowed(real):
            raise OutsideRoots(
                f"{param!r} lies outside the server root and the configured "
                "experiment roots; add its parent to "
                "c.ScorePExtension.experiment_roots to serve it",
                "Outside the roots",
            )
        return Path(real)

    def experiment(self, param: str | None) -> Path:
        exp = self.resolve(param)
        if not exp.is_dir():
            raise NotFound(f"no directory {param!r}: the experiment was moved or deleted")
        if not (exp / ex.MANIFEST).is_file():
            raise NotFound(
                f"{param!r} is not an experiment: it has no {ex.MANIFEST}. "
                "Pass a directory the kernel wrote under scorep-experiments/",
            )
        return exp


def experiment_file(exp: Path, name: str) -> Path | None:
    """``exp/name`` if it exists and its real path stays inside ``exp``, else None; a
    symlink pointing elsewhere is refused, not followed."""
    path = exp / name
    if not os.path.lexists(path):
        return None
    real = os.path.realpath(path)
    if not _within(real, str(exp)):
        raise OutsideRoots(
            f"{name} in this experiment links outside it; refusing to read it",
            "Outside the roots",
        )
    return Path(real)


def archive_files(exp: Path) -> list[tuple[str, Path]]:
    """The OTF2 archive's files as ``(name inside the archive, real path)``."""
    out = []
    for name in (ex.OTF2_ANCHOR, ex.OTF2_DEFS):
        real = experiment_file(exp, name)
        if real is not None and real.is_file():
            out.append((name, real))
    events = experiment_file(exp, ex.OTF2_EVENTS_DIR)
    if events is not None and events.is_dir():
        for entry in sorted(os.scandir(events), key=lambda e: e.name):
            name = f"{ex.OTF2_EVENTS_DIR}/{entry.name}"
            if entry.is_symlink():
                real = experiment_file(exp, name)
                if real is not None and real.is_file():
                    out.append((name, real))
            elif entry.is_file():
                # in a real directory, not a link: its real path (1,024 ranks' files
                # resolved one by one took ~100 ms per request)
                out.append((name, events / entry.name))
    return out


def refuse_links_out(exp: Path) -> None:
    """``archive_files``'s check without its list: raises ``OutsideRoots`` where an
    archive file links outside the experiment (libotf2 would follow it). Cheap enough for
    every request: only symlinks are resolved."""
    for name in (ex.OTF2_ANCHOR, ex.OTF2_DEFS):
        experiment_file(exp, name)
    events = experiment_file(exp, ex.OTF2_EVENTS_DIR)
    if events is not None and events.is_dir():
        with os.scandir(events) as entries:
            for entry in entries:
                if entry.is_symlink():
                    experiment_file(exp, f"{ex.OTF2_EVENTS_DIR}/{entry.name}")


def list_experiments(roots: Roots, parents) -> list[tuple[str, mf.Manifest]]:
    """Like ``experiment.list_experiments`` over several parents, skipping what is not
    readable or lies outside the roots; the roots are checked before a manifest is read,
    which is why that helper is not reused."""
    seen, out = set(), []
    for parent in parents:
        try:
            entries = list(os.scandir(parent))
        except OSError:
            continue
        for entry in entries:
            if not entry.is_dir(follow_symlinks=False):
                continue
            real = os.path.realpath(entry.path)
            if real in seen or not roots.allowed(real):
                continue
            try:
                manifest = mf.read_manifest(entry.path)
            except ex.ExperimentError:
                continue
            seen.add(real)
            out.append((real, manifest))
    out.sort(key=lambda pm: (pm[1].get("start_ns") or 0, pm[1]["id"]), reverse=True)
    return out
