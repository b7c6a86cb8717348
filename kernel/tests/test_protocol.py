"""The kernel-worker protocol: every message is declared, typed, and survives the framing;
a message nobody handles is logged, never fatal; a broken stream ends the channel."""

from __future__ import annotations

import dataclasses
import inspect
import logging
import pickle
import socket
import subprocess
import sys
import typing

import pytest

from scorep_kernel.measure.measure_config import MeasureConfig
from scorep_kernel.worker import protocol as msg

ALL = [
    obj
    for obj in vars(msg).values()
    if inspect.isclass(obj) and issubclass(obj, msg.Message) and obj is not msg.Message
]

# A value of each annotated field type, to build one instance of every message.
SAMPLES = {
    "str": "text",
    "str | None": "text",
    "int": 7,
    "int | None": 7,
    "bool": True,
    "bytes": b"\x00state",
    "bytes | None": b"\x00state",
    "float | None": 1.5,
    "list[str]": ["a", "b"],
    "dict[str, str]": {"SCOREP_X": "1"},
    "dict[str, Any]": {"k": [1, 2]},
    "MeasureConfig | None": MeasureConfig(include=("numpy",), max_depth=3, io="posix"),
    "dict[str, float]": {"received": 1.25},
    "list[tuple[str, float]]": [("__main__:f", 0.5)],
    "dict[str, int]": {"0": 4711},
    "float": 0.1,
    "list[dict[str, Any]]": [{"source": "page", "data": {"text/plain": "zip"}, "start": 0}],
}


def sample(cls: type[msg.Message]) -> msg.Message:
    values = {}
    for f in dataclasses.fields(cls):
        assert f.type in SAMPLES, f"{cls.__name__}.{f.name}: add a sample for {f.type!r}"
        values[f.name] = SAMPLES[f.type]
    return cls(**values)


def test_every_message_is_declared_in_one_direction_or_both():
    declared = set(msg.KERNEL_TO_WORKER) | set(msg.WORKER_TO_KERNEL)
    assert set(ALL) == declared
    both = set(msg.KERNEL_TO_WORKER) & set(msg.WORKER_TO_KERNEL)
    assert both == {msg.StateReceived}  # the one acknowledgement both sides send


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
def test_message_is_a_frozen_typed_record_that_survives_the_framing(cls):
    assert dataclasses.is_dataclass(cls)
    hints = typing.get_type_hints(cls)
    assert set(hints) == {f.name for f in dataclasses.fields(cls)}
    message = sample(cls)
    with pytest.raises(dataclasses.FrozenInstanceError):
        message.extra = None  # type: ignore[attr-defined]
    framed = msg.encode(message)
    assert int.from_bytes(framed[:8], "big") == len(framed) - 8
    assert msg.decode(framed[8:]) == message


def test_a_message_without_a_handler_is_logged_and_dropped(caplog):
    seen = []
    handlers = {msg.Stream: seen.append}
    with caplog.at_level(logging.WARNING, logger="scorep_kernel"):
        assert msg.dispatch(msg.ClearOutput(True), handlers, "test end") is None
        msg.dispatch(msg.Stream("stdout", "x"), handlers, "test end")
    assert seen == [msg.Stream("stdout", "x")]
    assert "test end: no handler for a ClearOutput message" in caplog.text


def test_something_else_on_the_channel_ends_it():
    with pytest.raises(msg.ChannelClosed, match="not a protocol message"):
        msg.decode(pickle.dumps(("stream", {"name": "stdout"})))


def test_a_frame_longer_than_any_message_ends_the_channel():
    a, b = socket.socketpair()
    try:
        a.sendall((msg.MAX_MESSAGE + 1).to_bytes(8, "big"))
        with pytest.raises(msg.ChannelClosed, match="out of step"):
            msg.BlockingChannel(b).recv()
        a.close()
        with pytest.raises(msg.ChannelClosed):
            msg.BlockingChannel(b).recv()
    finally:
        b.close()


def test_a_start_run_decodes_without_loading_the_builtin_tracer():
    # a Score-P worker unpickles the run's MeasureConfig; it must not load the tracer
    framed = msg.encode(msg.StartRun("/x", MeasureConfig(max_depth=2), {}))
    code = (
        "import sys\n"
        "from scorep_kernel.worker import protocol\n"
        f"start = protocol.decode({framed[8:]!r})\n"
        "assert start.measure.max_depth == 2\n"
        "print(sorted(m for m in sys.modules if m.startswith('scorep_kernel.measure')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == [
        "['scorep_kernel.measure',",
        "'scorep_kernel.measure.measure_config']",
    ]
