"""Errors of the state transfer, and the one setting it reads from the environment."""

#: "pull" | "shm" | "auto": overrides the automatic choice of transport (see transport.py).
ENV_TRANSPORT = "SCOREP_KERNEL_STATE_TRANSPORT"


class StateTransferError(RuntimeError):
    """A buffer could not be moved between the processes; the message says why and what to do."""
