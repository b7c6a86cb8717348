"""The service's side of GET ranks and of the MPI verdicts of GET summary: the reads
(``experiment_reads``) give the index and the MPI records, ``analysis.ranks`` the
answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scorep_kernel import experiment as ex
from scorep_kernel import manifest as mf

from ..analysis import ranks
from ..domain_errors import BadParameter, Unreadable
from ..trace import matrix_pairs
from ..trace.index_store import LoadedIndex
from ..trace.otf2_read import TraceReadError
from .experiment_reads import ExperimentReads


async def answer(
    reads: ExperimentReads, path: str | None, matrix: str | None = None
) -> dict[str, Any]:
    """GET ranks (docs/API.md); ``matrix`` "pairs": the matrix as its non-zero cells,
    found once per index build (``matrix_pairs``: kept with the index)."""
    if matrix is not None and matrix not in ranks.MATRIX_FORMS:
        raise BadParameter(
            f"matrix={matrix!r} is not a matrix form: use {' or '.join(ranks.MATRIX_FORMS)}"
        )
    exp, manifest = await reads.open(path)
    index = await reads.index(exp, manifest)
    body = dict(await summary_of(reads, exp, index))
    if matrix == "pairs":
        dense = body["matrix"]
        pairs = await reads.compute(
            "the matrix's pairs", matrix_pairs.of_index, index, dense["bytes"], dense["messages"]
        )
        body["matrix"] = ranks.pairs_matrix(pairs)
    body["mpi"] = manifest.get("mpi")
    return body


async def summary_of(reads: ExperimentReads, exp: Path, index: LoadedIndex) -> dict[str, Any]:
    """``ranks.summarize`` of the experiment, once per index build (pure over the index and
    the traffic, both fixed until the trace changes): 1,024 ranks take ~130 ms."""
    key = "ranks_summary"
    found = getattr(index, "_derived", {}).get(key)  # (LoadedIndex.cached's store)
    if found is not None:
        return found
    traffic = await traffic_of(reads, exp, index)
    body = await reads.compute("the ranks' summary", ranks.summarize, index, traffic)
    return index.cached(key, lambda _index: body)


async def traffic_of(reads: ExperimentReads, exp: Path, index: LoadedIndex) -> dict[str, Any]:
    """``mpi_read.read_traffic`` of the experiment's trace, once per index build."""
    from ..trace import mpi_read

    key = "mpi_traffic"
    found = getattr(index, "_derived", {}).get(key)  # (LoadedIndex.cached's store)
    if found is not None:
        return found
    anchor = str(exp / ex.OTF2_ANCHOR)
    try:
        traffic = await reads.in_worker(
            "the MPI records of the OTF2 trace", mpi_read.read_traffic, anchor
        )
    except TraceReadError as e:  # a record the index steps over, refused by libotf2
        raise Unreadable(
            f"the MPI records of the OTF2 trace cannot be read: {e}", "Unreadable trace"
        ) from None
    return index.cached(key, lambda _index: traffic)


async def summary_verdicts(reads: ExperimentReads, exp: Path, manifest: mf.Manifest) -> list[dict]:
    """The MPI verdicts of GET summary: only for runs of several processes (the manifest's
    ``mpi``, or a trace of several process groups); never fails the summary."""
    try:
        index = await reads.index(exp, manifest)
        groups = {loc.get("group") for loc in index.locations if loc.get("kind") != "metric"}
        if not manifest.get("mpi") and len(groups) < 2:
            return []
        return ranks.verdicts(await summary_of(reads, exp, index))
    except Exception:
        return []
