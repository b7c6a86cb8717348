"""The wheel as a user gets it, checked in a clean virtual environment.

Builds the wheel of this checkout (with its prebuilt labextension), installs it with its
dependencies into a new venv under .wheel-check/, and checks from outside the source tree
that JupyterLab lists the labextension, jupyter_server the server extension and
jupyter_client the kernel spec, and that a profiled cell runs in the installed kernel and
leaves an experiment with its files. Run by `make test` (`make test-wheel`).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / ".wheel-check"


def step(what: str) -> None:
    print(f"--> {what}", flush=True)


def run(*args: str | Path, cwd: Path | None = None, capture: bool = False) -> str:
    out = subprocess.run(
        [str(a) for a in args], cwd=cwd, text=True, check=False,
        stdout=subprocess.PIPE if capture else None, stderr=subprocess.STDOUT if capture else None,
    )  # fmt: skip
    if out.returncode != 0:
        sys.exit(
            f"check_wheel: {' '.join(map(str, args))} failed ({out.returncode}):\n{out.stdout or ''}"
        )
    return out.stdout or ""


def require(text: str, *words: str, what: str) -> None:
    lines = [line for line in text.splitlines() if all(w in line for w in words)]
    if not lines:
        sys.exit(f"check_wheel: {what}: no line with {words} in:\n{text}")
    print(f"    ok: {lines[0].strip()}")


PROFILED_CELL = r"""
import json, sys, time
from pathlib import Path
from jupyter_client.manager import start_new_kernel

km, kc = start_new_kernel(kernel_name="scorep-python")
try:
    meta = {"scorep": {"profile": True, "backend": "builtin", "isolation": "subprocess"}}
    msg = kc.session.msg("execute_request", {"code": "def f(n):\n    return n * 2\ny = [f(i) for i in range(5)]",
                          "silent": False, "store_history": True, "user_expressions": {},
                          "allow_stdin": False, "stop_on_error": True}, metadata=meta)
    kc.shell_channel.send(msg)
    bundle = None
    while True:
        m = kc.get_iopub_msg(timeout=120)
        if m["parent_header"].get("msg_id") != msg["header"]["msg_id"]:
            continue
        data = m["content"].get("data") or {}
        bundle = data.get("application/vnd.scorep.experiment+json", bundle)
        if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            break
    reply = kc.get_shell_msg(timeout=60)["content"]
    assert reply["status"] == "ok", reply
    assert bundle is not None, "no experiment bundle"
    exp = Path(bundle["path"])
    deadline = time.monotonic() + 120
    while True:
        manifest = json.loads((exp / "manifest.json").read_text())
        if manifest["files_status"] != "pending" or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert manifest["files_status"] == "ready", manifest
    assert (exp / "traces.otf2").exists() and (exp / "profile.cubex").exists()
    print("    ok: profiled cell ran in the installed kernel:", exp.name, manifest["backend"])
finally:
    kc.stop_channels()
    km.shutdown_kernel(now=True)
"""


def main() -> None:
    t0 = time.monotonic()
    shutil.rmtree(WORK, ignore_errors=True)
    dist = WORK / "dist"
    step("building the wheel")
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
        "-w", dist, ROOT)  # fmt: skip
    wheel = next(dist.glob("jupyterlab_scorep-*.whl"))
    names = run(sys.executable, "-m", "zipfile", "-l", wheel, capture=True)
    for inside in (
        "share/jupyter/labextensions/jupyterlab-scorep/package.json",
        "share/jupyter/kernels/scorep-python/kernel.json",
        "etc/jupyter/jupyter_server_config.d/jupyterlab_scorep.json",
        "scorep_kernel/worker/entry.py",
        "jupyterlab_scorep/trace/libotf2_scan.so",  # the native OTF2 scanner (hatch_build.py)
    ):
        require(names, inside, what=f"{wheel.name} holds {inside}")
    if sys.version_info[:2] == (3, 11):  # the tracer's C recorder (kernel/native/)
        recorder = "scorep_kernel/measure/_calltrace.cpython-311"
        require(names, recorder, what=f"{wheel.name} holds {recorder}*.so")
    step(f"installing {wheel.name} into a clean venv")
    venv = WORK / "venv"
    run(sys.executable, "-m", "venv", venv)
    py, bin_dir = venv / "bin" / "python", venv / "bin"
    run(py, "-m", "pip", "install", "-q", "--upgrade", "pip")
    run(py, "-m", "pip", "install", "-q", wheel, "jupyterlab>=4.4,<5")
    outside = Path(tempfile.mkdtemp(prefix="wheel-check-"))  # not the source tree
    step("registered: labextension, server extension, kernel spec")
    text = run(bin_dir / "jupyter", "labextension", "list", cwd=outside, capture=True)
    require(text, "jupyterlab-scorep", "enabled", "OK", what="jupyter labextension list")
    text = run(bin_dir / "jupyter", "server", "extension", "list", cwd=outside, capture=True)
    require(text, "jupyterlab_scorep", "enabled", what="jupyter server extension list")
    require(text, "jupyterlab_scorep", "OK", what="jupyter server extension list")
    specs = json.loads(
        run(bin_dir / "jupyter", "kernelspec", "list", "--json", cwd=outside, capture=True)
    )["kernelspecs"]
    if "scorep-python" not in specs:
        sys.exit(f"check_wheel: kernel spec scorep-python not found: {sorted(specs)}")
    print(f"    ok: kernel spec scorep-python at {specs['scorep-python']['resource_dir']}")
    step("the native OTF2 scanner loads")
    run(
        py,
        "-c",
        "from jupyterlab_scorep.trace import otf2_scan; assert otf2_scan.available()",
        cwd=outside,
    )
    print("    ok: jupyterlab_scorep.trace.otf2_scan.available()")
    if sys.version_info[:2] == (3, 11):
        step("the builtin tracer records with its C recorder")
        run(
            py,
            "-c",
            "from scorep_kernel.measure import engine; "
            "assert engine.engine_name() == 'calltrace', engine.engine_name()",
            cwd=outside,
        )
        print("    ok: scorep_kernel.measure.engine.engine_name() == 'calltrace'")
    step("python -m scorep_kernel install: a spec naming this environment's interpreter")
    prefix = outside / "prefix"
    run(
        py, "-m", "scorep_kernel", "install", "--prefix", prefix, "--name", "wheel-env", cwd=outside
    )
    installed = prefix / "share" / "jupyter" / "kernels" / "wheel-env"
    argv = json.loads((installed / "kernel.json").read_text())["argv"]
    if argv[0] != str(py) or not (installed / "logo-64x64.png").is_file():
        sys.exit(f"check_wheel: the installed spec runs {argv[0]} (want {py}), logos "
                 f"{sorted(p.name for p in installed.iterdir())}")  # fmt: skip
    print(f"    ok: {installed} runs {argv[0]}")
    step("a profiled cell in the installed kernel")
    run(py, "-c", PROFILED_CELL, cwd=outside)
    shutil.rmtree(outside, ignore_errors=True)
    print(f"--> the wheel checks out ({time.monotonic() - t0:.0f} s)")


if __name__ == "__main__":
    main()
