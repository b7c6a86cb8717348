"""``python -m scorep_kernel -f <connection file>``: start the Score-P wrapper kernel."""

from ipykernel.kernelapp import IPKernelApp

from scorep_kernel.kernel import ScorePKernel


def main() -> None:
    IPKernelApp.launch_instance(kernel_class=ScorePKernel)


if __name__ == "__main__":
    main()
