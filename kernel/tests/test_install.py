"""The installed pieces are where Jupyter looks for them, and the kernel answers."""

import sys

import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import start_new_kernel


def test_kernelspec_is_registered_with_its_display_name():
    spec = KernelSpecManager().get_kernel_spec("scorep-python")
    assert spec.display_name == "Python 3 (Score-P)"
    assert spec.language == "python"
    assert spec.argv[1:3] == ["-m", "scorep_kernel"]


@pytest.mark.timeout(120)
def test_scorep_kernel_starts_and_evaluates():
    km, kc = start_new_kernel(kernel_name="scorep-python", startup_timeout=60)
    try:
        # jupyter_client swaps argv[0] "python" for the running interpreter.
        assert km.kernel_spec.argv[0] in ("python", sys.executable)
        msg_id = kc.execute("1+1")
        result = None
        while True:
            msg = kc.get_iopub_msg(timeout=30)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "execute_result":
                result = msg["content"]["data"]["text/plain"]
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                break
        reply = kc.get_shell_msg(timeout=30)
        assert reply["content"]["status"] == "ok"
        assert result == "2"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
