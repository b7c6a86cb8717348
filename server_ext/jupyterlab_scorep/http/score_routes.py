"""GET score and POST filter: Score-P's estimate of a run (scorep-score on its
profile.cubex), the filter it suggests, and that filter written beside the experiments for
the cell's next run, merged with the filter the run used."""

from __future__ import annotations

import logging
import os
from collections import OrderedDict
from pathlib import Path
from typing import Any

from scorep_kernel import manifest as mf

from ..analysis import scorep_score
from ..domain_errors import NotFound, NotReady, OutsideRoots, Refused, Unprocessable
from .experiment_reads import ExperimentReads
from .export import file_stem

log = logging.getLogger(__name__)


def _scorep_config(manifest: mf.Manifest) -> dict[str, str]:
    """The SCOREP_* settings of a run: Score-P's own record (scorep.cfg, in the manifest's
    measurement) over the environment the kernel gave it."""
    measurement = manifest.get("measurement")
    written = measurement.get("scorep_config") if isinstance(measurement, dict) else None
    env = manifest.get("scorep_env")
    out = {k: str(v) for k, v in env.items()} if isinstance(env, dict) else {}
    if isinstance(written, dict):
        out.update({k: str(v) for k, v in written.items()})
    return out


class Scores:
    """GET score and POST filter (held by ``Service``): scorep-score's report of a run,
    kept while its profile.cubex stays as it is, and the filter it suggests written for
    the cell's next run."""

    def __init__(self, reads: ExperimentReads, filter_heuristics: str = scorep_score.HEURISTICS):
        self.reads = reads
        # what scorep-score -g filters (ScorePExtension.filter_heuristics): a bad value is
        # said in the log and Score-P's defaults used, rather than no extension at all
        try:
            self.filter_heuristics = scorep_score.check_heuristics(filter_heuristics)
        except ValueError as e:
            log.warning(
                "scorep: ScorePExtension.filter_heuristics=%r: %s; using scorep-score's "
                "defaults (%s)",
                filter_heuristics,
                e,
                scorep_score.HEURISTICS,
            )
            self.filter_heuristics = scorep_score.HEURISTICS
        # ("score", cubex path) -> ((mtime_ns, size), scorep-score's report), LRU
        self._reports: OrderedDict[tuple, tuple[tuple, dict[str, Any]]] = OrderedDict()

    async def score(self, path: str | None) -> dict[str, Any]:
        """GET score: Score-P's estimate of the run (scorep-score on its profile.cubex) and
        the filter it suggests for the next run, with the configuration the run had and
        the filter already applied from it, if any."""
        exp, manifest = await self.reads.open(path)
        report = await self._score_report(exp, manifest)
        config = _scorep_config(manifest)
        target = await self.reads.in_thread(self._filter_target, exp, manifest, False)
        return {
            **report,
            "heuristics": self.filter_heuristics,
            "tool": await self.reads.in_thread(scorep_score.executable),
            "configured": {
                k: config.get(k) for k in ("SCOREP_TOTAL_MEMORY", "SCOREP_FILTERING_FILE")
            },
            "applied": str(target) if target is not None and target.is_file() else None,
        }

    async def apply_filter(self, path: str | None) -> dict[str, Any]:
        """POST filter: write the suggested filter (with the rules of the filter the run
        used) into ``scorep-filters/`` beside the experiments, for the cell's next run."""
        exp, manifest = await self.reads.open(path)
        target = await self.reads.in_thread(self._filter_target, exp, manifest, True)
        report = await self._score_report(exp, manifest)
        suggestion = report["filter"]
        if suggestion is None:
            raise NotFound(
                "Score-P's heuristics select no region of this run (none with "
                f"{scorep_score.describe_heuristics(self.filter_heuristics)}): there is "
                "nothing to filter",
                "Nothing to filter",
            )
        return await self.reads.in_thread(self._write_filter, target, manifest, suggestion)

    async def _score_report(self, exp: Path, manifest: mf.Manifest) -> dict[str, Any]:
        if manifest.get("files_status") == mf.FILES_PENDING:
            raise NotReady("the profile is still being written; try again in a moment")
        found = await self.reads.in_thread(self.reads.cubex_identity, exp)
        if found is None:
            raise NotFound(
                "this experiment has no profile.cubex, which scorep-score reads: the run "
                "was measured with profiling off (SCOREP_ENABLE_PROFILING=false)",
                "No profile",
            )
        if await self.reads.in_thread(scorep_score.executable) is None:
            raise NotFound(
                "scorep-score is not on the server's PATH: put Score-P's bin/ on it (it "
                "comes with Score-P) to see Score-P's estimate of this run",
                "Tool not found",
            )
        cubex, signature = found

        async def run() -> dict[str, Any]:
            try:
                return await self.reads.in_waiters(
                    scorep_score.report, cubex, self.reads.build_timeout, self.filter_heuristics
                )
            except scorep_score.ScoreError as e:
                raise Unprocessable(str(e), "scorep-score failed") from None

        return await self.reads.once_kept(self._reports, ("score", str(cubex)), signature, run)

    def _filter_target(self, exp: Path, manifest: mf.Manifest, check: bool) -> Path | None:
        """``scorep-filters/<id>.filter`` beside the experiments (else beside the
        experiment) where that lies inside the roots; None (or 403 with ``check``)
        when neither does."""
        name = file_stem(manifest) + scorep_score.FILTER_SUFFIX
        for directory in (scorep_score.filter_dir(exp), exp.parent / scorep_score.FILTER_DIR):
            if self.reads.roots.allowed(os.path.realpath(directory)):
                return Path(os.path.realpath(directory)) / name
        if check:
            raise OutsideRoots(
                f"the filter's folder ({scorep_score.FILTER_DIR}/ beside the experiments) "
                "lies outside the server root and the experiment roots",
                "Outside the roots",
            )
        return None

    def _write_filter(
        self, target: Path, manifest: mf.Manifest, suggestion: dict[str, Any]
    ) -> dict[str, Any]:
        previous = self._previous_filter(manifest)
        text = scorep_score.filter_text(
            manifest, suggestion["text"], previous, self.filter_heuristics
        )
        try:
            written = scorep_score.write_filter(target.parent, target.name, text)
        except OSError as e:
            raise Refused(
                f"the filter file cannot be written to {target.parent} "
                f"({e.strerror or type(e).__name__}); make that folder writable",
                "Not writable",
            ) from None
        root = Path(self.reads.roots.server_root)
        return {
            "path": str(written),
            # relative to the server root (as the notebook's path is), when inside it
            "root_path": str(written.relative_to(root)) if written.is_relative_to(root) else None,
            "regions": [r["name"] for r in suggestion["regions"]],
            "merged": previous[0] if previous is not None else None,
        }

    def _previous_filter(self, manifest: mf.Manifest) -> tuple[str, str] | None:
        """The filter file the run used, when it lies inside the roots and reads as one."""
        used = _scorep_config(manifest).get("SCOREP_FILTERING_FILE")
        if not used:
            return None
        real = os.path.realpath(used)
        if not self.reads.roots.allowed(real):
            return None
        try:
            with open(real, encoding="utf-8", errors="replace") as f:
                text = f.read(scorep_score.MAX_PREVIOUS_BYTES + 1)
        except OSError:
            return None
        if len(text) > scorep_score.MAX_PREVIOUS_BYTES or not scorep_score.looks_like_filter(text):
            return None
        return used, text
