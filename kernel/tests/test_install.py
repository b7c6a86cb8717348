"""The installed pieces are where Jupyter looks for them, and the kernel answers."""

import json
import os
import subprocess
import sys

import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager, start_new_kernel


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


def _install(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "scorep_kernel", "install", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
    )


def test_install_writes_a_spec_naming_this_interpreter(tmp_path):
    done = _install("--prefix", str(tmp_path), "--name", "other-env")
    assert done.returncode == 0, done.stderr
    spec_dir = tmp_path / "share" / "jupyter" / "kernels" / "other-env"
    assert f"Installed kernelspec other-env in {spec_dir}" in done.stdout
    spec = json.loads((spec_dir / "kernel.json").read_text())
    # the absolute path, not "python" (which jupyter_client swaps for the server's own)
    assert spec["argv"] == [sys.executable, "-m", "scorep_kernel", "-f", "{connection_file}"]
    assert spec["display_name"] == "Python 3 (Score-P, other-env)"
    assert (spec_dir / "logo-64x64.png").is_file() and (spec_dir / "logo-32x32.png").is_file()
    found = KernelSpecManager(kernel_dirs=[str(spec_dir.parent)]).get_kernel_spec("other-env")
    assert found.argv[0] == sys.executable and found.interrupt_mode == "signal"


def test_install_for_the_user_goes_to_the_users_data_directory(tmp_path):
    data = tmp_path / "data"
    done = _install("--user", "--display-name", "Mine", env={"JUPYTER_DATA_DIR": str(data)})
    assert done.returncode == 0, done.stderr
    spec = json.loads((data / "kernels" / "scorep-python" / "kernel.json").read_text())
    assert spec["display_name"] == "Mine" and spec["argv"][0] == sys.executable


def test_install_options_map_as_ipykernel_installs(monkeypatch, capsys):
    from scorep_kernel import install

    calls = []
    monkeypatch.setattr(
        install, "install", lambda *a, **k: calls.append((a, k)) or "/somewhere/kernels/x"
    )
    install.main(["--sys-prefix"])
    install.main(["--prefix", "/p", "--name", "n"])
    install.main([])
    assert calls == [
        (("scorep-python", None), {"user": False, "prefix": sys.prefix}),
        (("n", None), {"user": False, "prefix": "/p"}),
        (("scorep-python", None), {"user": False, "prefix": None}),  # system-wide
    ]
    with pytest.raises(SystemExit):
        install.main(["--user", "--prefix", "/p"])  # one place at a time
    capsys.readouterr()


def test_install_somewhere_unwritable_names_the_fix(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    done = _install("--prefix", str(blocker))
    assert done.returncode != 0
    assert "Cannot install the kernel spec" in done.stderr and "--user" in done.stderr


@pytest.mark.timeout(120)
def test_the_installed_spec_starts_the_kernel(tmp_path):
    assert _install("--prefix", str(tmp_path), "--name", "started").returncode == 0
    kernels = tmp_path / "share" / "jupyter" / "kernels"
    km = KernelManager(kernel_name="started")
    km.kernel_spec_manager = KernelSpecManager(kernel_dirs=[str(kernels)])
    km.start_kernel(cwd=str(tmp_path))
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        reply = kc.execute_interactive(
            "import sys; print(sys.executable)", timeout=60, output_hook=_collect(out := [])
        )
        assert reply["content"]["status"] == "ok"
        # (after the note that jupyter_client sends no cell metadata)
        assert "".join(out).strip().splitlines()[-1] == sys.executable
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def _collect(into: list[str]):
    def hook(msg: dict) -> None:
        if msg["msg_type"] == "stream":
            into.append(msg["content"]["text"])

    return hook
