"""Cells that print a lot, profiled in both isolations: every line arrives, in order, beside
displays and progress bars (``\\r`` lines), and the output path costs the tracer nothing
(neither ipykernel's stream machinery in the kernel nor IPython's history tee is recorded
and then excluded: runs.inprocess_output, worker.shell)."""

from __future__ import annotations

import pytest
from test_kernel_harness import PROFILE_IN, KernelHandle

pytestmark = pytest.mark.timeout(240)
PROFILE_SUB = {"scorep": {"profile": True, "backend": "builtin", "isolation": "subprocess"}}
ISOLATIONS = {"inprocess": PROFILE_IN, "subprocess": PROFILE_SUB}
LINES = 100_000


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    k = KernelHandle(tmp_path_factory.mktemp("output-heavy"))
    yield k
    k.shutdown()


def recorded_calls(result) -> int:
    return int(result.manifest()["measurement"]["recorded_calls"])


@pytest.mark.parametrize("isolation", sorted(ISOLATIONS))
def test_a_hundred_thousand_lines_arrive_in_order_and_record_nothing(kernel, isolation):
    few = kernel.run("for i in range(10):\n    print(i)", ISOLATIONS[isolation])
    result = kernel.run(f"for i in range({LINES}):\n    print(i)", ISOLATIONS[isolation])
    assert result.status == "ok", result.reply
    assert result.stdout() == "".join(f"{i}\n" for i in range(LINES))
    # no recorded call per print (before: ~12 per print, 1.2M calls then excluded): what
    # the tracer sees around the cell (IPython's machinery) is the same as for 10 lines
    assert recorded_calls(result) - recorded_calls(few) < 1000


@pytest.mark.parametrize("isolation", sorted(ISOLATIONS))
def test_progress_bar_lines_and_displays_keep_their_order(kernel, isolation):
    code = (
        "import sys\n"
        "from IPython.display import display\n"
        "for i in range(2000):\n"
        "    sys.stderr.write(f'\\r{i:5d} |' + '#' * (i // 100))\n"
        "    sys.stderr.flush()\n"
        "    if i % 500 == 0:\n"
        "        print('step', i)\n"
        "sys.stderr.write('\\n')\n"
        "print('before')\n"
        "display('shown')\n"
        "print('after')\n"
    )
    result = kernel.run(code, ISOLATIONS[isolation])
    assert result.status == "ok", result.reply
    expected_bar = "".join(f"\r{i:5d} |" + "#" * (i // 100) for i in range(2000)) + "\n"
    assert result.stderr() == expected_bar
    assert result.stdout() == "step 0\nstep 500\nstep 1000\nstep 1500\nbefore\nafter\n"
    # what was printed before the display comes before it, what after after it
    order = []
    for _, m in result.messages:
        if m["msg_type"] == "stream" and m["content"]["name"] == "stdout":
            order += [("out", line) for line in m["content"]["text"].splitlines()]
        elif (
            m["msg_type"] == "display_data" and m["content"]["data"].get("text/plain") == "'shown'"
        ):
            order.append(("display", "shown"))
    assert order.index(("out", "before")) < order.index(("display", "shown"))
    assert order.index(("display", "shown")) < order.index(("out", "after"))


def test_in_process_a_handler_holding_the_stream_keeps_the_order(kernel):
    # a logging handler made in an earlier cell holds ipykernel's stream object itself
    setup = (
        "import logging, sys\n"
        "log = logging.getLogger('heavy')\n"
        "log.handlers[:] = [logging.StreamHandler(sys.stdout)]\n"
        "log.propagate = False\n"
        "log.setLevel(logging.INFO)"
    )
    assert kernel.run(setup).status == "ok"
    code = "for i in range(3000):\n    print('p', i)\n    log.info('l %d', i)"
    result = kernel.run(code, PROFILE_IN)
    assert result.status == "ok", result.reply
    assert result.stdout() == "".join(f"p {i}\nl {i}\n" for i in range(3000))


def test_in_process_the_streams_are_the_kernels_own_again_after_the_cell(kernel):
    assert kernel.run("print('x')", PROFILE_IN).status == "ok"
    # (during any cell IPython's history tee is the stream's write: nothing of ours)
    for name in ("stdout", "stderr"):
        batched = f"isinstance(getattr(sys.{name}.write, '__self__', None), list)"
        assert kernel.value(f"{batched} or 'flush' in sys.{name}.__dict__") is False
    # and an error's traceback still follows what the cell printed
    result = kernel.run("print('last words')\nraise ValueError('boom')", PROFILE_IN)
    assert result.status == "error"
    assert result.stdout() == "last words\n"
    kinds = [m["msg_type"] for _, m in result.messages if m["msg_type"] in ("stream", "error")]
    assert kinds.index("stream") < kinds.index("error")
