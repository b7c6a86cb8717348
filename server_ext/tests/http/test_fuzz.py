"""Property: whatever bytes a damaged experiment holds, the readers answer or refuse with a
domain error (a 4xx); they never raise anything else (a 500) and never hang.

Goes through the ``Service`` methods the handlers call (one per route), so libotf2 and
pycubexr run in the worker process exactly as in the server, crashes included. The
service turns any exception of its pure functions (timeline, call tree, bucketing,
summary) into a 422 too; the test also requires that this catch-all was not needed: such
an exception is a bug to fix, not a damaged file."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from experiment_factory import write_experiment
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jupyterlab_scorep.domain_errors import ScorePError
from jupyterlab_scorep.http.error_status import status_of
from jupyterlab_scorep.http.service import Service

pytestmark = pytest.mark.timeout(300)

FILES = [
    "traces.otf2",
    "traces.def",
    "traces/0.evt",
    "traces/1.evt",
    "traces/0.def",
    "profile.cubex",
    "metrics.json",
    "metrics.npz",
    "manifest.json",
]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    return write_experiment(tmp_path_factory.mktemp("pristine") / "exp")


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzzroot")
    svc = Service(str(root), version="test", build_timeout=60)
    yield svc
    svc.shutdown()


async def exercise(svc: Service, exp: Path) -> list[ScorePError]:
    """Every JSON route's service method, as the handlers call them, each on its own (one
    refusing does not keep the next from reading); returns the refusals."""
    path = str(exp)
    refused = []
    for call in (
        lambda: svc.describe(path),
        lambda: svc.timeline(path, None, None, 300),
        lambda: svc.calltree(path, None),
        lambda: svc.calltree(path, 0),
        lambda: svc.metrics(path, None, None, 50),
        lambda: svc.summary(path),
        lambda: svc.compare(path, path),
        lambda: svc.experiments(None, None, "c1"),
        lambda: svc.score(path),  # scorep-score on a damaged profile.cubex
        lambda: svc.ranks(path, "pairs"),  # the MPI records (mpi_read, mpi_scan)
    ):
        try:
            await call()
        except ScorePError as e:
            refused.append(e)
    return refused


damage = st.tuples(
    st.sampled_from(FILES),
    st.sampled_from(["truncate", "flip", "zero", "empty", "garbage"]),
    st.floats(0.0, 1.0),
    st.binary(min_size=1, max_size=64),
)


def _damage(exp: Path, damages) -> None:
    for name, how, where, junk in damages:
        path = exp / name
        if not path.exists():
            continue
        data = bytearray(path.read_bytes())
        at = int(where * len(data))
        if how == "truncate":
            data = data[:at]
        elif how == "flip" and data:
            for i, b in enumerate(junk):
                data[(at + i) % len(data)] ^= b or 0xFF
        elif how == "zero":
            data[at : at + len(junk)] = bytes(len(data[at : at + len(junk)]))
        elif how == "empty":
            data = bytearray()
        else:
            data[at : at + len(junk)] = junk
        path.write_bytes(bytes(data))


@settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(damages=st.lists(damage, min_size=1, max_size=3))
def test_damaged_experiments_never_5xx(damages, pristine, service, caplog):
    caplog.clear()
    exp = Path(service.reads.roots.server_root) / f"e{abs(hash(str(damages))) % 10**12}"
    shutil.rmtree(exp, ignore_errors=True)
    shutil.copytree(pristine, exp)
    _damage(exp, damages)
    try:
        refused = asyncio.run(asyncio.wait_for(exercise(service, exp), 90))
    finally:
        shutil.rmtree(exp, ignore_errors=True)
    for e in refused:
        assert 400 <= status_of(e) < 500, e.message
        assert e.message
    # Service.compute's catch-all logs "scorep: <what> failed"; it must not have been needed.
    unexpected = [r.getMessage() for r in caplog.records if r.getMessage().startswith("scorep: ")]
    assert not unexpected, unexpected


@pytest.fixture(scope="module")
def pristine_mpi(tmp_path_factory):
    """A 4-rank MPI run (synthetic_mpi): MpiSend / MpiRecv and collectives in every rank's
    event file, which GET ranks reads with the native scanner (mpi_scan)."""
    from synthetic_mpi import write_mpi_experiment

    out = tmp_path_factory.mktemp("pristine-mpi") / "exp"
    write_mpi_experiment(out, ranks=4, events=4000, slow=frozenset({3}))
    return out


mpi_damage = st.tuples(
    st.sampled_from([f"traces/{r}.evt" for r in range(4)] + ["traces.def"]),
    st.sampled_from(["truncate", "flip", "zero", "garbage"]),
    st.floats(0.0, 1.0),
    st.binary(min_size=1, max_size=8),
)


@settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(damages=st.lists(mpi_damage, min_size=1, max_size=2))
def test_damaged_mpi_runs_never_5xx(damages, pristine_mpi, service, caplog):
    """GET ranks (and the rest) on an MPI run's damaged event files: the matrix, or a 4xx."""
    test_damaged_experiments_never_5xx.hypothesis.inner_test(  # type: ignore[attr-defined]
        damages, pristine_mpi, service, caplog
    )
