"""scorep-jupyter 1.2's own magics, with the meaning each has in this kernel.

    %%marshalling_settings          MARSHALLER=dill|cloudpickle|parallel_marshall, MODE=memory|disk
    %%start_writefile [path]        record the following cells into path.py + path_run.sh
    %%end_writefile                 finish the two files
    %%abort_writefile               drop them
    %%enable_vampir_launch_on_scorep_instrumented    open each profiled cell's trace in Vampir
    %%disable_vampir_launch_on_scorep_instrumented   stop that

State transfer (``%%marshalling_settings``): this kernel has one pickler for the namespace
(pickle protocol 5, with cloudpickle for the notebook's own functions and classes, and
large buffers out of band), which does what both of scorep-jupyter's marshallers are chosen
for; MARSHALLER is accepted and recorded, and picks nothing. MODE picks how the large
buffers (numpy arrays, bytes, torch tensors) travel: ``memory`` (the default) lets the other
process read them straight from this one's memory; ``disk`` puts them into files (memory
file segments, mapped by the other side: the ``shm`` transport) instead. The namespace's
small part always goes in the cell's message; nothing is written to a disk either way.

Write mode: see ``scorep_kernel.write_mode``. Vampir: each profiled cell's bundle asks the
panel to open its trace in Vampir once its files are ready (the panel's *Open in Vampir*,
started by the server on its machine), once per experiment.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass

from scorep_kernel.magics import (
    PEER_MAGICS,
    CellMagic,
    parse_binding_arguments,
    parse_scorep_env,
)
from scorep_kernel.settings import SettingsError
from scorep_kernel.write_mode.script_files import ScriptRecording, base_path

MARSHALLING, START_WRITEFILE, END_WRITEFILE, ABORT_WRITEFILE, VAMPIR_ON = PEER_MAGICS[:5]

MARSHALLERS = ("dill", "cloudpickle", "parallel_marshall")
TRANSPORT_OF_MODE = {"memory": None, "disk": "shm"}  # None: read from memory where allowed
_SETTING = re.compile(r"\b(MARSHALLER|MODE)\s*=\s*([\w-]+)")


@dataclass
class StateTransfer:
    """What ``%%marshalling_settings`` chose."""

    marshaller: str = "cloudpickle"
    mode: str = "memory"

    @property
    def transport(self) -> str | None:
        return TRANSPORT_OF_MODE[self.mode]

    def describe(self) -> str:
        where = (
            "read straight from the kernel's memory by the profiling process"
            if self.mode == "memory"
            else "put into shared-memory files that the profiling process maps"
        )
        return (
            f"MARSHALLER={self.marshaller}, MODE={self.mode}: the namespace travels through "
            "this kernel's one pickler (pickle protocol 5, cloudpickle for the notebook's "
            f"functions and classes); large arrays and buffers are {where}."
        )


class PeerMagics:
    """The kernel's state for scorep-jupyter's magics."""

    def __init__(self) -> None:
        self.state = StateTransfer()
        self.vampir = False
        self.recording: ScriptRecording | None = None

    @property
    def writing(self) -> bool:
        return self.recording is not None

    def run(self, magic: CellMagic, cwd: str) -> str:
        """One of PEER_MAGICS; returns what the cell says."""
        if magic.name == START_WRITEFILE:
            return self._start(magic.args, cwd)
        if magic.name == END_WRITEFILE:
            return self._end()
        if magic.name == ABORT_WRITEFILE:
            return self._abort()
        if magic.name == MARSHALLING:
            if self.writing:
                return (
                    "%%marshalling_settings does not apply in write mode (nothing runs): ignored."
                )
            return self._marshalling(magic.body)
        if magic.name == VAMPIR_ON:
            self.vampir = True
            found = shutil.which("vampir")
            return (
                "Each profiled cell's trace opens in Vampir once its files are written (the "
                "panel's Open in Vampir). "
                + (
                    f"Vampir: {found}."
                    if found
                    else "Vampir is not on the kernel's PATH: the panel says if the server finds it."
                )
            )
        self.vampir = False
        return "Profiled cells no longer open in Vampir."

    # --- %%marshalling_settings --------------------------------------------------------

    def _marshalling(self, body: str) -> str:
        found = dict(_SETTING.findall(body))
        marshaller = found.get("MARSHALLER", self.state.marshaller)
        mode = found.get("MODE", self.state.mode)
        if marshaller not in MARSHALLERS:
            raise SettingsError(
                f"%%marshalling_settings: MARSHALLER={marshaller} is not one this kernel "
                f"knows: use {', '.join(MARSHALLERS)} (all travel through its one pickler)"
            )
        if mode not in TRANSPORT_OF_MODE:
            raise SettingsError(
                f"%%marshalling_settings: MODE={mode} is not a mode: use memory (large arrays "
                "read from the kernel's memory) or disk (through shared-memory files)"
            )
        self.state = StateTransfer(marshaller, mode)
        return self.state.describe()

    # --- write mode -----------------------------------------------------------------

    def _start(self, argument: str, cwd: str) -> str:
        if self.recording is not None:
            return (
                f"Write mode is on already (into {self.recording.script}): end it with "
                "%%end_writefile or %%abort_writefile first."
            )
        recording = ScriptRecording(base_path(argument, cwd))
        try:
            recording.start()
        except OSError as e:
            raise SettingsError(
                f"%%start_writefile: cannot write {recording.script} ({e.strerror or e}): "
                "give a path in a writable directory"
            ) from None
        self.recording = recording
        return (
            "Write mode: the next cells are recorded, not run, until %%end_writefile.\n"
            f"{recording.script}\n{recording.run_script}"
        )

    def _end(self) -> str:
        if self.recording is None:
            return "%%end_writefile: write mode is not on (%%start_writefile starts it)."
        recording, self.recording = self.recording, None
        recording.write()
        return (
            f"Wrote {recording.script} ({len(recording.cells)} cells); run it with "
            f"{recording.run_script}."
        )

    def _abort(self) -> str:
        if self.recording is None:
            return "%%abort_writefile: write mode is not on."
        recording, self.recording = self.recording, None
        recording.remove()
        return "Write mode aborted; its files are removed."

    def record(self, code: str, magic: CellMagic | None, profiled: bool) -> str:
        """A cell in write mode: recorded for the script, never run."""
        recording = self.recording
        assert recording is not None
        name = magic.name if magic is not None else None
        if name == "scorep_env":
            recording.scorep_env.update(parse_scorep_env(magic.body))  # type: ignore[union-attr]
            recording.write()
            return "Recorded the Score-P settings for the run script."
        if name == "scorep_python_binding_arguments":
            recording.binding_args = parse_binding_arguments(magic.body)  # type: ignore[union-attr]
            recording.write()
            return "Recorded the binding arguments for the run script."
        if name == "abort_multicellmode":
            return "%%abort_multicellmode does not unmark recorded cells in write mode: ignored."
        if name in ("enable_multicellmode", "finalize_multicellmode"):
            recording.multicell = name == "enable_multicellmode"
            assert magic is not None
            if not magic.body.strip():
                return ""  # as scorep-jupyter: the mode changes quietly
            recording.add(magic.body, instrumented=True)
            return "Recorded, instrumented."
        if magic is not None:  # %%execute_with_scorep, %%scorep_mpi: their cell, instrumented
            code, profiled = magic.body, True
        if not code.strip():
            return ""
        instrumented = profiled or recording.multicell
        if not recording.add(code, instrumented=instrumented):
            return "Recorded the Score-P settings for the run script."
        return "Recorded, instrumented." if instrumented else "Recorded, not instrumented."
