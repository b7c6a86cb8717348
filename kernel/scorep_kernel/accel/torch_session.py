"""torch.profiler (Kineto; CUPTI underneath on CUDA builds) started and stopped with a
measured run of the builtin tracer, in the kernel or in a worker alike.

Nothing happens unless torch is imported: when the run starts or one of its cells begins
(``import torch`` in an earlier cell, a worker's preload, the namespace brought into a
worker), or when the run imports it (the profiler starts right after that import returns:
``measure.imports`` reports it), so a cell that never touches torch pays nothing, not even
an import. The profiler records the CPU's
operators and, where ``torch.cuda.is_available()``, the device's kernels, copies and sets;
at the end its trace is exported into the experiment directory as ``torch.pt.trace.json``
(HTA, TensorBoard and Perfetto read that file) and parsed (``kineto_trace``) into the
Recording.

Kineto announces every start and stop on the process's stderr ("USDT: ...
profiler_start"), which ipykernel would show under the cell: those lines are held back
while it starts and stops; anything else it writes then is passed on.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .. import experiment
from ..manifest import AcceleratorNotes
from .kineto_trace import KinetoTrace, KinetoTraceError, load


class _QuietStderr:
    """fd 2 into a temporary file while Kineto starts or stops; its lines other than its
    own announcements go back to stderr afterwards."""

    def __enter__(self) -> _QuietStderr:
        try:
            sys.stderr.flush()
        except Exception:
            pass
        self._file = tempfile.TemporaryFile()
        self._saved = os.dup(2)
        os.dup2(self._file.fileno(), 2)
        return self

    def __exit__(self, *exc: Any) -> None:
        os.dup2(self._saved, 2)
        os.close(self._saved)
        self._file.seek(0)
        text = self._file.read().decode("utf-8", "replace")
        self._file.close()
        rest = [line for line in text.splitlines(True) if not line.startswith("USDT:")]
        if rest:
            try:
                sys.stderr.write("".join(rest))
            except Exception:
                pass


def torch_ready() -> bool:
    """torch is imported, and done importing: starting the profiler from inside torch's own
    import (an import its __init__ makes) would load torch._C a second time."""
    module = sys.modules.get("torch")
    if module is None:
        return False
    return not getattr(getattr(module, "__spec__", None), "_initializing", False)


class _InductorLeftUnloaded:
    """While torch.profiler starts: ``hasattr(torch, "_inductor")`` in its prepare_trace
    (torch 2.6 and later) asks torch's lazy module attribute, which imports torch._inductor
    and torch._dynamo (818 modules, 2.2 s of CPU here, torch 2.13: the whole of what was
    taken for Kineto's one-time start-up) only to read a CUDA graphs setting of inductor's,
    which nobody set unless inductor is loaded already (pytorch/pytorch#151829, #151946).
    The name is taken out of torch's lazy modules for that call and put back after it; a
    torch already holding torch._inductor (torch.compile ran) has it as a plain attribute,
    read as before. Another thread that asks for torch._inductor in those milliseconds gets
    an AttributeError (a torch without that set of names: nothing is changed)."""

    def __enter__(self) -> _InductorLeftUnloaded:
        torch = sys.modules.get("torch")
        lazy = getattr(torch, "_lazy_modules", None)
        self._lazy = lazy if isinstance(lazy, set) and "_inductor" in lazy else None
        if self._lazy is not None and "torch._inductor" not in sys.modules:
            self._lazy.discard("_inductor")
        else:
            self._lazy = None
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._lazy is not None:
            self._lazy.add("_inductor")


def _enter(prof: Any) -> None:
    """Start ``prof`` quietly, without loading inductor (_InductorLeftUnloaded)."""
    with _QuietStderr(), _InductorLeftUnloaded():
        prof.__enter__()


def warm_up() -> bool:
    """The first profiler start in a process, paid ahead by a spare builtin worker whose
    preload imported torch, so that the cell it takes does not (its forks keep the warm
    state; a few ms since torch._inductor stays unloaded, _InductorLeftUnloaded). CPU
    activity only: no CUDA context is made for a worker that may never use the GPU.
    Whether it ran."""
    if not torch_ready():
        return False
    try:
        from torch.profiler import ProfilerActivity, profile

        prof = profile(activities=[ProfilerActivity.CPU])
        _enter(prof)
        with _QuietStderr():
            prof.__exit__(None, None, None)
    except Exception:
        return False
    return True


class TorchProfiling:
    """One run's torch.profiler; ``start`` when the run starts, ``stop`` when it stops."""

    def __init__(self, exp_dir: str | os.PathLike, enabled: bool = True):
        self.exp_dir = Path(exp_dir)
        self.enabled = enabled
        self._profile: Any = None
        self.notes = AcceleratorNotes()  # the manifest's measurement.accelerator
        self.seconds: dict[str, float] = {}

    @property
    def running(self) -> bool:
        return self._profile is not None

    def start(self) -> None:
        """Start the profiler when torch is imported (else wait for ``torch_imported``, or
        the next cell of the run). Cheap when it is not: one dict lookup."""
        if self.enabled and self._profile is None and torch_ready():
            self._start()

    def torch_imported(self) -> None:
        """The run imported torch itself: start now."""
        self.start()

    def _start(self) -> None:
        t0 = time.perf_counter()
        try:
            import torch
            from torch.profiler import ProfilerActivity, profile

            activities = [ProfilerActivity.CPU]
            cuda = bool(torch.cuda.is_available())
            if cuda:
                activities.append(ProfilerActivity.CUDA)
            prof = profile(activities=activities, record_shapes=False, with_stack=False)
            _enter(prof)
        except Exception as e:  # an odd torch build: measure the rest as before
            self.notes["error"] = f"torch.profiler did not start: {type(e).__name__}: {e}"
            self.enabled = False
            return
        self._profile = prof
        self.notes.update(
            AcceleratorNotes(
                profiler="torch.profiler",
                torch=str(getattr(torch, "__version__", "")),
                activities=["cpu", "cuda"] if cuda else ["cpu"],
            )
        )
        self.seconds["start"] = round(time.perf_counter() - t0, 4)

    def abandon(self) -> None:
        """Stop the profiler without reading anything (the process is ending)."""
        prof, self._profile = self._profile, None
        if prof is not None:
            with _QuietStderr():
                prof.__exit__(None, None, None)

    def stop(self) -> KinetoTrace | None:
        """Stop, export the trace into the experiment directory and read it back; None when
        the profiler did not run (or its trace could not be read: ``notes`` says why)."""
        prof, self._profile = self._profile, None
        if prof is None:
            return None
        t0 = time.perf_counter()
        path = self.exp_dir / experiment.KINETO_TRACE
        try:
            with _QuietStderr():
                prof.__exit__(None, None, None)
            self.exp_dir.mkdir(parents=True, exist_ok=True)
            prof.export_chrome_trace(str(path))
        except Exception as e:
            self.notes["error"] = f"torch.profiler did not stop cleanly: {type(e).__name__}: {e}"
            return None
        t1 = time.perf_counter()
        try:
            trace = load(path)
        except KinetoTraceError as e:
            self.notes["error"] = str(e)
            return None
        self.seconds.update(stop_export=round(t1 - t0, 4), parse=round(time.perf_counter() - t1, 4))
        if not trace.host and not trace.device:
            # torch was imported, but the run used none of it: no file, nothing to say
            path.unlink(missing_ok=True)
            self.notes = AcceleratorNotes()
            return None
        self.notes["file"] = experiment.KINETO_TRACE
        return trace
