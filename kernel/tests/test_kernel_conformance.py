"""The Jupyter kernel conformance suite (``jupyter_kernel_test``, with the samples its
own example runs against ipykernel) against the Score-P kernel: unprofiled, and with every
cell profiled (the cell metadata JupyterLab's toggle writes) in a subprocess (Score-P when
it is installed, and the builtin tracer) and in the kernel (builtin tracer), each cell sent
as JupyterLab sends it; and as jupyter_client sends it (no cell metadata). Stock ipykernel
runs the same suite beside it, as the reference.

The Score-P kernel adds to a cell's output, by design, what ``added_by_design`` lists: the
experiment bundle under a profiled cell (the panel), and, once per kernel, the note that a
frontend sends no cell metadata (frontend_metadata.NOTE). ``ConformanceSuite`` takes
exactly those out, after checking how many there are (one bundle per profiled cell and
none else; the note once, and only for a frontend that sends no metadata), and hands the
suite the rest, which it checks as strictly as for ipykernel.
"""
# ruff: noqa: RUF012  (the suite takes its samples as class attributes)

from __future__ import annotations

import functools
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import jupyter_kernel_test as jkt
import pytest
from jupyter_client.manager import start_new_kernel
from test_kernel_harness import request_metadata, wait_files

from jupyterlab_scorep.headless.notebook_client import _execute_with_metadata
from scorep_kernel.frontend_metadata import NOTE
from scorep_kernel.runs.display import MIME_TYPE as PANEL_MIME

pytestmark = pytest.mark.timeout(600)

HAVE_SCOREP = shutil.which("scorep-config") is not None
# A profiled cell in a fresh worker process (Score-P compiles its small init library at
# every start) takes seconds on a busy 2-core machine, not the suite's 15.
EXECUTE_TIMEOUT = 120


def panel_outputs(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The experiment bundle a profiled cell shows (the panel)."""
    return [
        m
        for m in messages
        if m["msg_type"] == "display_data" and PANEL_MIME in m["content"]["data"]
    ]


def frontend_notes(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The note that the frontend sends no cell metadata, at the top of a cell's output."""
    return [m for m in messages if m["msg_type"] == "stream" and m["content"]["text"] == NOTE]


def added_by_design(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Everything the Score-P kernel adds to a cell's output that ipykernel would not."""
    return panel_outputs(messages) + frontend_notes(messages)


class ConformanceSuite(jkt.KernelTests):
    """The samples of jupyter_kernel_test's own test_ipykernel.py."""

    __test__ = False  # only the subclasses below run

    kernel_name = "scorep-python"
    cell_metadata: dict[str, Any] | None = None  # None: cells run unprofiled
    frontend = "jupyterlab"  # how requests are sent: test_kernel_harness.request_metadata
    noted = False  # the frontend note came (once per kernel)
    language_name = "python"
    file_extension = ".py"
    code_hello_world = "print('hello, world')"
    code_stderr = "import sys; print('test', file=sys.stderr)"
    completion_samples = [{"text": "zi", "matches": {"zip"}}]
    complete_code_samples = ["1", "print('hello, world')", "def f(x):\n  return x*2\n\n\n"]
    incomplete_code_samples = ["print('''hello", "def f(x):\n  x*2"]
    invalid_code_samples = ["import = 7q"]
    code_page_something = "zip?"
    code_generate_error = "raise"
    code_execute_result = [
        {"code": "1+2+3", "result": "6"},
        {"code": "[n*n for n in range(1, 4)]", "result": "[1, 4, 9]"},
    ]
    code_display_data = [
        {
            "code": "from IPython.display import HTML, display; display(HTML('<b>test</b>'))",
            "mime": "text/html",
        },
        {
            "code": "from IPython.display import Math, display; display(Math('\\frac{1}{2}'))",
            "mime": "text/latex",
        },
    ]
    code_history_pattern = "1?2*"
    supported_history_operations = ("tail", "search")
    code_inspect_sample = "zip"
    code_clear_output = "from IPython.display import clear_output; clear_output()"

    @classmethod
    def setUpClass(cls) -> None:
        cls.workdir = tempfile.mkdtemp(prefix="scorep-conformance-")
        cls.km, cls.kc = start_new_kernel(
            kernel_name=cls.kernel_name, startup_timeout=60, cwd=cls.workdir, env=dict(os.environ)
        )
        if cls.frontend == "jupyterlab" and cls.kernel_name != "python3":
            # kc.execute sends no cell metadata: as `jupyter scorep run` sends JupyterLab's
            sent = request_metadata(cls.cell_metadata, "jupyterlab")
            cls.kc.execute = functools.partial(_execute_with_metadata, cls.kc, lambda: sent)  # type: ignore[method-assign]

    @classmethod
    def tearDownClass(cls) -> None:
        try:
            super().tearDownClass()
        finally:
            shutil.rmtree(cls.workdir, ignore_errors=True)

    def execute_helper(
        self,
        code: str,
        timeout: int = EXECUTE_TIMEOUT,
        silent: bool = False,
        store_history: bool = True,
        stop_on_error: bool = True,
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        reply, outputs = super().execute_helper(code, timeout, silent, store_history, stop_on_error)
        notes = frontend_notes(outputs)
        if notes:
            self.assertEqual(self.frontend, "bare", "the note, for a frontend that sends none")
            self.assertFalse(type(self).noted, "the note comes once")
            self.assertEqual(outputs[0], notes[0], "the note comes first")
            type(self).noted = True
        bundles = panel_outputs(outputs)
        if self.cell_metadata is None or silent:
            self.assertEqual(bundles, [], "an unprofiled cell shows no experiment")
            return reply, [m for m in outputs if m not in notes]
        self.assertEqual(len(bundles), 1, f"one experiment bundle per profiled cell: {outputs}")
        bundle = bundles[0]["content"]["data"][PANEL_MIME]
        ended = "ok" if reply["content"]["status"] == "ok" else "error"
        self.assertEqual(bundle["status"], ended)
        self.assertEqual(bundle["isolation"], self.cell_metadata["scorep"]["isolation"])
        if bundle["isolation"] == "inprocess":
            # Its files are written by a thread of the kernel once it is idle, which the
            # next request would share the interpreter with; the suite allows 0.1 s from a
            # reply to idle. It checks each request, benchmarks/ the overlap: wait here.
            manifest = wait_files(Path(bundle["path"]))
            self.assertEqual(manifest["files_status"], "ready", manifest["errors"])
        extra = added_by_design(outputs)
        return reply, [m for m in outputs if m not in extra]

    def test_scorep_kernel_load_sets_the_next_input(self) -> None:
        """%load answers with a set_next_input payload, as ipykernel's shell does."""
        path = os.path.join(self.workdir, "snippet.py")
        with open(path, "w") as f:
            f.write("answer = 42\n")
        self.flush_channels()
        reply, _ = self.execute_helper(f"%load {path}")
        self.assertEqual(reply["content"]["status"], "ok")
        payload = reply["content"]["payload"]
        self.assertEqual([p["source"] for p in payload], ["set_next_input"])
        self.assertIn("answer = 42", payload[0]["text"])


class TestStockIPyKernel(ConformanceSuite):
    """The reference: ipykernel itself, with the same samples."""

    __test__ = True
    kernel_name = "python3"

    def test_scorep_kernel_load_sets_the_next_input(self) -> None:
        super().test_scorep_kernel_load_sets_the_next_input()


class TestUnprofiled(ConformanceSuite):
    __test__ = True


class TestUnprofiledWithoutCellMetadata(ConformanceSuite):
    """As jupyter_client, nbclient and VS Code send requests: the note once."""

    __test__ = True
    frontend = "bare"

    @classmethod
    def tearDownClass(cls) -> None:
        try:
            assert cls.noted, "a frontend without cell metadata is told so"
        finally:
            super().tearDownClass()


class TestProfiledInSubprocess(ConformanceSuite):
    """Backend auto: Score-P where it is installed (as in make test), else builtin."""

    __test__ = True
    cell_metadata = {"scorep": {"profile": True, "isolation": "subprocess"}}


@pytest.mark.skipif(not HAVE_SCOREP, reason="without Score-P, TestProfiledInSubprocess is this")
class TestProfiledInSubprocessBuiltin(ConformanceSuite):
    __test__ = True
    cell_metadata = {"scorep": {"profile": True, "backend": "builtin", "isolation": "subprocess"}}


class TestProfiledInProcess(ConformanceSuite):
    __test__ = True
    cell_metadata = {"scorep": {"profile": True, "backend": "builtin", "isolation": "inprocess"}}
