"""measure/machine_speed.py: the reference workload and what a measurement records of it."""

from __future__ import annotations

import pytest

from scorep_kernel import experiment
from scorep_kernel import manifest as mf
from scorep_kernel.measure import machine_speed
from scorep_kernel.measure.session import Measurement


def test_chunks_are_cpu_seconds_and_the_reference_is_their_median():
    xs = machine_speed.chunks(3, rounds=2_000)
    assert len(xs) == 3 and all(0 < x < 1.0 for x in xs)
    assert machine_speed.reference_cpu_s([0.004, 0.003, 0.010, 0.0]) == pytest.approx(0.004)
    assert machine_speed.reference_cpu_s([]) is None


def test_a_measurement_records_the_machine_speed_in_its_cell_time(tmp_path):
    _id, path = experiment.create_experiment_dir(explicit=tmp_path / "exp")
    mf.write_manifest(path, mf.new_manifest(_id, backend="builtin", isolation="inprocess"))
    m = Measurement(path)
    m.start()
    with m.cell("cell [1]"):
        sum(i * i for i in range(10_000))
    halted = m.halt()
    # a reply that waits for halt() only has the speed before the run
    assert len(m._speed_chunks) == machine_speed.CHUNKS
    assert halted.cell_time["ref_cpu_s"] == pytest.approx(
        machine_speed.reference_cpu_s(m._speed_chunks)
    )
    recording = m.build(halted)
    ct = recording.notes["cell_time"]
    assert 0 < ct["ref_cpu_s"] < 0.5
    assert len(m._speed_chunks) == 2 * machine_speed.CHUNKS  # before and after the run
    assert ct["ref_cpu_s"] == pytest.approx(machine_speed.reference_cpu_s(m._speed_chunks))
    # none of the reference's calls is in the trace: it runs outside the tracer
    names = {r.name for r in recording.regions}
    assert not any("_reference" in n for n in names), names
