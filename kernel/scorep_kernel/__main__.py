"""``python -m scorep_kernel -f <connection file>``: start the Score-P wrapper kernel.
``python -m scorep_kernel install [--user|--sys-prefix|--prefix P] [--name N]``: register
it for this interpreter (scorep_kernel.install)."""

import sys


def main() -> None:
    if sys.argv[1:2] == ["install"]:
        from scorep_kernel.install import main as install

        install(sys.argv[2:])
        return
    from ipykernel.kernelapp import IPKernelApp

    from scorep_kernel.kernel import ScorePKernel

    IPKernelApp.launch_instance(kernel_class=ScorePKernel)


if __name__ == "__main__":
    main()
