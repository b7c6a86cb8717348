"""Where a profiled cell's time goes: the manifest's "timings", and the worker start-up and
imports that the spare worker takes off a profiled cell's path."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_kernel_harness import MIME, PROFILE_IN, PROFILE_SUB, KernelHandle, wait_files

pytestmark = pytest.mark.timeout(180)

# A standard-library module that neither the kernel nor a worker imports for itself.
UNUSED_MODULE = "email.mime.audio"


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    k = KernelHandle(tmp_path_factory.mktemp("overhead"))
    yield k
    k.shutdown()


def test_the_first_subprocess_run_starts_a_worker_and_the_next_takes_the_spare(kernel):
    # By default no spare runs until the notebook profiles in a subprocess.
    result = kernel.run("first = 1", PROFILE_SUB)
    assert result.status == "ok", result.reply
    assert "worker_fresh" in result.manifest()["timings"]
    result = kernel.run("second = 2", PROFILE_SUB)
    assert result.status == "ok", result.reply
    timings = result.manifest()["timings"]
    assert "worker_fresh" not in timings, timings
    assert {"worker_spare_ready", "worker_spare_starting"} & set(timings), timings


def test_with_spare_worker_always_the_first_run_takes_a_spare_started_with_the_kernel(tmp_path):
    kernel = KernelHandle(tmp_path, env={"SCOREP_KERNEL_SPARE_WORKER": "always"})
    try:
        result = kernel.run("first = 1", PROFILE_SUB)
        assert result.status == "ok", result.reply
        timings = result.manifest()["timings"]
        assert "worker_fresh" not in timings, timings
        assert {"worker_spare_ready", "worker_spare_starting"} & set(timings), timings
    finally:
        kernel.shutdown()


@pytest.mark.parametrize(
    "metadata, phases",
    [
        (
            PROFILE_SUB,
            {
                "pack",
                "to_worker",
                "worker_unpack",
                "worker_apply",
                "cell",
                "worker_pack",
                "unpack",
                "apply",
                "manifest",
                "messages",
            },
        ),
        (
            PROFILE_IN,
            {"measure_start", "cell", "tracer_stop", "recording_build", "summary", "manifest"},
        ),
    ],
    ids=["subprocess", "inprocess"],
)
def test_timings_are_the_parts_of_the_cells_time(kernel, metadata, phases):
    result = kernel.run("import time\ntime.sleep(0.3)\nslept = True", metadata)
    assert result.status == "ok", result.reply
    timings = result.manifest()["timings"]
    assert phases <= set(timings), timings
    assert all(isinstance(v, float) and v >= 0 for v in timings.values()), timings
    # The phases follow one another inside the request: together no longer than the client
    # waited (its clock and the kernel's are the same monotonic clock), and the cell's
    # own phase holds its sleep.
    until_idle = result.messages[-1][0]
    assert timings["cell"] >= 0.3
    assert sum(timings.values()) <= until_idle + 0.05, (timings, until_idle)


def test_an_in_process_recording_is_built_after_the_reply_by_the_files_process(tmp_path):
    """With the extension's panel (its notice came), the reply does not wait for the
    Recording's build (issue 22): the kernel's phases hold no recording_build; the process
    that writes the files built it (its pid and the seconds it took are in the manifest),
    and the display's text is updated with what it found. (Without the notice the text's
    numbers come with the reply: test_display_text, and the conformance suite.)"""
    kernel = KernelHandle(tmp_path)
    try:
        _built_after_the_reply(kernel)
    finally:
        kernel.shutdown()


def _built_after_the_reply(kernel: KernelHandle) -> None:
    kernel.notice({"version": 1, "profiled_cells": [PROFILE_IN["scorep"]]})
    kernel_pid = kernel.value("__import__('os').getpid()")
    code = "def g(n):\n    return n if n < 2 else g(n - 1) + g(n - 2)\nr = g(15)"
    result = kernel.run(code, PROFILE_IN)
    assert result.status == "ok", result.reply
    first = result.bundle()
    assert first["summary"]["events"] is None and first["summary"]["top"] == []
    assert "recording_build" not in result.manifest()["timings"]
    final = kernel.final_display(result)[MIME]
    assert final["id"] == first["id"]
    assert final["summary"]["events"] > 2 * 1000 and any(
        name.endswith(":g") for name, _ in final["summary"]["top"]
    ), final["summary"]
    manifest = wait_files(Path(first["path"]))
    assert manifest["files_status"] == "ready", manifest.get("errors")
    measurement = manifest["measurement"]
    assert measurement["events"] == final["summary"]["events"]
    assert measurement["written_by_pid"] != kernel_pid and measurement["build_s"] > 0
    # the machine's speed after the run was measured by the build, after the reply: the
    # manifest's cell_time has the median over the chunks before and after the run
    assert manifest["cell_time"]["ref_cpu_s"] == measurement["cell_time"]["ref_cpu_s"] > 0


def test_modules_a_profiled_cell_imported_are_preloaded_by_the_next_worker(kernel):
    assert kernel.value(f"{UNUSED_MODULE!r} in __import__('sys').modules") is False
    first = kernel.run(
        "import sys, importlib\n"
        f"had_it_first = {UNUSED_MODULE!r} in sys.modules\n"
        f"importlib.import_module({UNUSED_MODULE!r})",
        PROFILE_SUB,
    )
    assert first.status == "ok", first.reply
    assert kernel.value("had_it_first") is False
    # The next profiled cell runs in a new worker, which imported the module ahead of time,
    # as a plain kernel would still have it.
    second = kernel.run(f"had_it_next = {UNUSED_MODULE!r} in sys.modules", PROFILE_SUB)
    assert second.status == "ok", second.reply
    assert kernel.value("had_it_next") is True
