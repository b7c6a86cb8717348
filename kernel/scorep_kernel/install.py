"""``python -m scorep_kernel install``: register this kernel for this interpreter.

The wheel ships a kernel spec (``share/jupyter/kernels/scorep-python``) whose argv starts
with plain ``python``. jupyter_client runs such a spec with the interpreter of the process
that starts the kernel (the Jupyter server), so it works where the server and the kernel
share one environment. When they do not (a JupyterHub whose server runs elsewhere, a
second virtual environment or conda env holding jupyterlab-scorep), the kernel fails to
start with "No module named scorep_kernel". This writes a spec naming this interpreter by
its absolute path, as ``python -m ipykernel install`` does::

    python -m scorep_kernel install --user              # ~/.local/share/jupyter/kernels
    python -m scorep_kernel install --sys-prefix        # this environment's share/jupyter
    python -m scorep_kernel install --prefix P          # P/share/jupyter/kernels
    python -m scorep_kernel install --name gpu-env --display-name "Score-P (gpu env)"

Without a location it installs system-wide (Jupyter's system data directory), as
``ipykernel install`` does.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

KERNEL_NAME = "scorep-python"
DISPLAY_NAME = "Python 3 (Score-P)"
_LOGOS = ("logo-32x32.png", "logo-64x64.png")


def spec(display_name: str) -> dict[str, object]:
    """The kernel.json for this interpreter."""
    return {
        "argv": [sys.executable, "-m", "scorep_kernel", "-f", "{connection_file}"],
        "display_name": display_name,
        "language": "python",
        "interrupt_mode": "signal",
        "metadata": {"debugger": False},
    }


def _bundled_spec_dir() -> Path | None:
    """The spec the package came with: the wheel's data files, or the source tree's."""
    for candidate in (
        Path(sys.prefix) / "share" / "jupyter" / "kernels" / KERNEL_NAME,
        Path(__file__).resolve().parent.parent / "kernelspec" / KERNEL_NAME,
    ):
        if (candidate / "kernel.json").is_file():
            return candidate
    return None


def install(
    name: str = KERNEL_NAME,
    display_name: str | None = None,
    *,
    user: bool = False,
    prefix: str | None = None,
) -> str:
    """Write the spec and return the directory it was installed to."""
    from jupyter_client.kernelspec import KernelSpecManager

    shown = display_name or (
        DISPLAY_NAME if name == KERNEL_NAME else f"{DISPLAY_NAME[:-1]}, {name})"
    )
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / name
        source.mkdir()
        (source / "kernel.json").write_text(json.dumps(spec(shown), indent=1) + "\n")
        bundled = _bundled_spec_dir()
        for logo in _LOGOS:
            if bundled is not None and (bundled / logo).is_file():
                shutil.copy(bundled / logo, source / logo)
        return KernelSpecManager().install_kernel_spec(
            str(source), kernel_name=name, user=user, prefix=prefix
        )


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m scorep_kernel install",
        description="Install the Score-P kernel's spec for this Python interpreter "
        f"({sys.executable}).",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true", help="for the current user")
    where.add_argument(
        "--sys-prefix",
        action="store_const",
        const=sys.prefix,
        dest="prefix",
        help=f"into this environment ({sys.prefix})",
    )
    where.add_argument("--prefix", help="into PREFIX/share/jupyter/kernels")
    parser.add_argument("--name", default=KERNEL_NAME, help=f"the spec's name ({KERNEL_NAME})")
    parser.add_argument("--display-name", help=f"the name Jupyter shows ({DISPLAY_NAME})")
    args = parser.parse_args(argv)
    try:
        path = install(args.name, args.display_name, user=args.user, prefix=args.prefix)
    except OSError as e:
        where_to = args.prefix or ("the user's data directory" if args.user else "system-wide")
        raise SystemExit(
            f"Cannot install the kernel spec {where_to} ({e.strerror or e}): use --user, "
            "--sys-prefix or --prefix DIR for a location you can write."
        ) from None
    print(f"Installed kernelspec {args.name} in {path} (runs {sys.executable})")
