"""End to end with the kernel's builtin tracer: record real Python code in a subprocess
(as a profiled cell would), then read the experiment through every endpoint."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(180)

RECORD = textwrap.dedent('''
    import sys
    from scorep_kernel import experiment as ex
    from scorep_kernel import manifest as mf
    from scorep_kernel.measure.measure_config import MeasureConfig
    from scorep_kernel.measure.session import Measurement

    exp_id, exp_dir = ex.create_experiment_dir(cwd=sys.argv[1])
    mf.write_manifest(exp_dir, mf.new_manifest(exp_id, backend="builtin",
                                               isolation="inprocess"))
    m = Measurement(str(exp_dir), MeasureConfig.from_mapping({}))
    m.start()
    code = """
    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)
    for _ in range(3):
        fib(12)
    """
    with m.cell("cell [1]", code_filename="<cell 1>"):
        exec(compile(code, "<cell 1>", "exec"), {"__name__": "__main__"})
    rec = m.stop()
    mf.update_manifest(exp_dir, status="ok", measurement=dict(rec.notes),
                       wall_s=(rec.end_ns - rec.start_ns) / 1e9)
    m.write_files(rec, background=False)
    print(exp_dir)
''')


@pytest.fixture
def recorded(jp_root_dir):
    pytest.importorskip("scorep_kernel.measure.session")
    out = subprocess.run(
        [sys.executable, "-c", RECORD, str(jp_root_dir)],
        text=True,
        capture_output=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return Path(out.stdout.strip().splitlines()[-1])


async def test_a_real_recording_through_every_endpoint(api, recorded):
    path = str(recorded)
    code, body = await api("experiments")
    assert code == 200 and [e["path"] for e in body["experiments"]] == [path]
    code, exp = await api("experiment", path=path)
    assert code == 200 and exp["available"] == {"otf2": True, "cubex": True, "metrics": True}
    calls = 3 * 465  # fib(12) makes 465 calls
    assert exp["trace"]["events"] >= 2 * calls

    code, tl = await api("timeline", path=path, width=2000)
    assert code == 200
    names = {r["name"] for r in tl["regions"].values()}
    assert "__main__:fib" in names
    fib = [int(k) for k, r in tl["regions"].items() if r["name"] == "__main__:fib"]
    master = tl["locations"][0]
    assert (
        sum(c for row in master["rows"] for c, r in zip(row["count"], row["region"]) if r in fib)
        == calls
    )

    code, ct = await api("calltree", path=path)
    assert code == 200 and ct["source"] == "cubex"

    def visits(node, name):
        return (node["visits"] if node["name"] == name else 0) + sum(
            visits(c, name) for c in node["children"]
        )

    assert visits(ct["root"], "__main__:fib") == calls
    code, summary = await api("summary", path=path)
    assert code == 200 and summary["top_regions"][0]["name"] == "__main__:fib"
    assert summary["top_regions"][0]["visits"] == calls
    code, metrics = await api("metrics", path=path)
    assert code == 200 and any(s["key"] == "cpu.total" for s in metrics["series"])
    code, response = await api("download", path=path, what="perfetto", raw=True)
    assert code == 200 and response.body.count(b'"name":"__main__:fib"') == calls
