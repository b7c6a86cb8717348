"""A minimal stand-in for the kernel's worker, for the state round-trip tests.

Run as ``python state_worker_harness.py``; messages are length-prefixed on stdin/stdout:
kernel -> header, cell code; worker -> "ack" (after unpack), header of its namespace; kernel
-> "ack". The cell runs with exec() in a namespace named __main__, as the real worker runs it.
"""

import struct
import sys


def read(stream) -> bytes:
    (length,) = struct.unpack("<Q", stream.read(8))
    return stream.read(length)


def write(stream, data: bytes) -> None:
    stream.write(struct.pack("<Q", len(data)))
    stream.write(data)
    stream.flush()


def main() -> None:
    from scorep_kernel.state import apply, pack, unpack

    inp, out = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # prints of the cell must not corrupt the channel
    header = read(inp)
    code = read(inp).decode()
    unpacked = unpack(header)
    write(out, b"ack")
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    apply(namespace, unpacked, bind_placeholders=True)
    exec(compile(code, "<cell>", "exec"), namespace)
    packet = pack(namespace)
    write(out, packet.header)
    read(inp)  # the kernel's ack: it has the buffers
    packet.release()


if __name__ == "__main__":
    main()
