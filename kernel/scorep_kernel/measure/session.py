"""A measured run: tracer + metric sampler + the regions the session records itself.

One Measurement is active per process at a time. ``start()`` installs the tracer on the
calling thread and on threads started later; each ``cell()`` is a region of its own; the
shim (``import scorep``) reaches the active Measurement through ``active()``.
"""

from __future__ import annotations

import atexit
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from scorep_kernel import manifest as mf
from scorep_kernel import region_words as rw

from ..accel.kineto_trace import KinetoTrace
from ..accel.torch_session import TorchProfiling
from ..formats.recording import ROLE_IMPORT, Recording, Region, ThreadSpan
from . import engine, imports, machine_speed
from .build import BuildInput, CellSpan, ExtraRegion, build_threads
from .engine import RawCalls
from .io_recorder import IoRecorder
from .measure_config import MeasureConfig
from .sampler import MetricSampler, MetricSamples
from .thread_clock import ThreadClocks
from .thread_hooks import ThreadLifetimes
from .user_recorder import UserRecorder

_active: Measurement | None = None
_SHIM_DIR = str(Path(__file__).resolve().parent.parent / "shim") + os.sep


def active() -> Measurement | None:
    """The Measurement running in this process, or None."""
    return _active


def _after_fork_in_child() -> None:
    """A forked child (multiprocessing's fork start method) inherits the running tracer;
    nobody would ever read its copy, so it only costs. Switch it off there."""
    global _active
    m = _active
    if m is None:
        return
    _active = None
    try:
        engine.release_in_child(m._tracer)
    except Exception:
        sys.setprofile(None)
    imports.uninstall()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


@atexit.register
def _at_exit() -> None:
    """An interpreter ending with a Measurement running (a script's sys.exit(), an error
    out of a measured script, a cell that exits its worker): torch.profiler is stopped
    first. Left running, torch's profiler state crashes the process with SIGSEGV among
    C++'s exit handlers (torch 2.x, ProfilerStateBase's destructor), after Python's."""
    m = _active
    if m is not None:
        try:
            m._torch.abandon()
        except Exception:  # the process is ending: nothing more to do
            pass


class _Cell:
    """The context manager returned by Measurement.cell (a class, not a generator, so no
    contextlib frames appear around the cell)."""

    __slots__ = ("code_filename", "label", "m", "t0", "tid")

    def __init__(self, m: Measurement, label: str, code_filename: str | None):
        self.m, self.label, self.code_filename = m, label, code_filename

    def __enter__(self) -> _Cell:
        m = self.m
        if m._state != "running":
            raise RuntimeError("Measurement.cell() needs a started Measurement (call start())")
        self.tid = threading.get_native_id()
        m._torch.start()  # torch imported since the run started (a worker's namespace)
        if m._master_tid is None:
            m._master_tid = self.tid  # the thread of the first cell is the "Master thread"
        m._tracer.install_here()
        m._clocks.note(self.tid)
        m._preexisting.discard(self.tid)  # a thread that runs a cell is recorded
        self.t0 = m._now()
        return self

    def __exit__(self, *exc) -> Literal[False]:
        m = self.m
        t1 = m._now()
        left_open = m.user.close_cell(self.tid, t1)
        m._clocks.note(self.tid)
        m._cells.append(CellSpan(self.label, self.code_filename, self.tid, self.t0, t1))
        if left_open:
            note = rw.unclosed_regions_note(left_open)
            m._notes.append(note.strip())
            sys.stderr.write(note)
        return False


@dataclass(frozen=True)
class Halted:
    """What ``Measurement.halt`` took from the tracer, the sampler and torch.profiler: all
    ``build`` needs besides the Measurement itself, which no longer changes."""

    stop_t: float  # the tracer's clock (ns) when the run stopped
    end_perf: int  # perf_counter_ns at the stop
    raw: RawCalls
    metrics: MetricSamples
    kineto: KinetoTrace | None
    cell_time: mf.CellTimeRecord


class Measurement:
    def __init__(self, exp_dir: str | os.PathLike, config: MeasureConfig | None = None):
        self.exp_dir = Path(exp_dir)
        self.config = config or MeasureConfig()
        self._state = "new"
        self._cells: list[CellSpan] = []
        # what the scorep shim records (user regions, switches, parameters)
        self.user = UserRecorder(self._now, self.config.instrumenter)
        self._extras = self.user.extras
        self._master_tid: int | None = None
        self._cap_hit_ns: float | None = None
        self._cap_cut: float | None = None  # tracer ns of the first call past the cap
        self._notes: list[str] = []
        self.recording: Recording | None = None
        self.to_perf: Callable[[np.ndarray], np.ndarray] | None = None  # set by stop()
        self.stop_timings: dict[str, float] = {}
        self._torch = TorchProfiling(self.exp_dir, self.config.accelerators)
        self._io: IoRecorder | None = None  # the setting io: posix
        self._speed_chunks: list[float] = []  # measure.machine_speed, around the run

    # --- lifecycle -------------------------------------------------------------------
    def start(self) -> None:
        global _active
        if self._state != "new":
            raise RuntimeError(f"this Measurement was already started (state {self._state})")
        if _active is not None:
            raise RuntimeError(
                "another Measurement is running in this process: stop() it before starting one"
            )
        cap_calls = max(1, self.config.event_cap // 2)  # one buffer node = enter + leave
        # Room past the cap for the calls made between two checks of the sampler thread.
        capacity = cap_calls + max(cap_calls // 2, 200_000)
        self._tracer = engine.get_tracer(capacity)
        self._cap_calls = cap_calls
        self._tracer.configure(
            ignore_prefix=engine.package_dir(),
            c_functions=self.config.c_functions,
            exclude_files=engine.IMPORT_MACHINERY,
        )
        self._clocks = ThreadClocks()
        self._lifetimes = ThreadLifetimes()  # THREAD_BEGIN / THREAD_END of the trace
        # the machine's speed now, before anything of the run (measure.machine_speed)
        self._speed_chunks = machine_speed.chunks()
        # The sampler thread starts before the tracer, so it is not traced.
        self._sampler = MetricSampler(self.config.metric_interval_s, on_tick=self._tick)
        self._sampler.start()
        try:
            self._offset_ns = clock_offset()
            self._pair0 = self._tracer.clock_pair()
            self._start_perf = time.perf_counter_ns()
            self._start_tid = threading.get_native_id()
            # Threads already running are the host's machinery (a kernel's iopub, control
            # and heartbeat threads); only threads started from now on are recorded, and
            # any thread that runs a cell. (3.11 cannot trace them anyway; 3.12's
            # sys.monitoring would.)
            self._preexisting = {
                t.native_id for t in threading.enumerate() if t.native_id is not None
            } - {self._start_tid}
            # threads alive at the start (their clocks did not begin with the run)
            self._before_start = frozenset(self._preexisting) | {self._start_tid}
            self._clocks.note_all(self._preexisting)
            self._clocks.watch_thread_ends()
            self._lifetimes.watch()
            if self.config.imports_as_regions:
                imports.install(self)
            _active = self
            self._state = "running"
            self._torch.start()  # only where torch is imported already
            # after torch.profiler's start and undone before its stop: the files it opens
            # are the measurement's own, not the cell's I/O
            if self.config.io == "posix":
                self._io = IoRecorder(self._now, self.user.extras, self.user.markers,
                                      self._preexisting)  # fmt: skip
                self._io.install()
            self._tracer.start()
        except BaseException:
            # Leave the interpreter as it was: no hook, no active measurement, no sampler.
            imports.uninstall()
            if self._io is not None:
                self._io.uninstall()
            self._clocks.unwatch_thread_ends()
            self._lifetimes.unwatch()
            _active = None
            self._state = "failed"
            self._sampler.stop()
            raise

    def cell(self, label: str, code_filename: str | None = None) -> _Cell:
        """A ROLE_CELL region around the with-block. With ``code_filename`` only calls
        beneath a frame of that file are recorded on this thread (IPython's machinery
        around the cell stays out)."""
        return _Cell(self, str(label), code_filename)

    def stop(self) -> Recording:
        """Stop tracer and sampler, close what is open, build the Recording."""
        return self.build(self.halt())

    def halt(self) -> Halted:
        """Stop tracer, sampler and torch.profiler and take what they recorded, without
        building the Recording: the data is in hand and nothing of the measurement runs any
        more (the next cell can start); ``build`` makes the Recording from it, later or in
        another process (an in-process run builds it in the process that writes its files,
        runs.files_process). The cells' time (``Halted.cell_time``) is known here; its
        ``ref_cpu_s`` is the machine's speed before the run, and ``build`` adds the speed
        after it."""
        global _active
        if self._state != "running":
            raise RuntimeError(f"halt() needs a running Measurement (state {self._state})")
        stop_t = self._now()
        full = self._tracer.recorded >= self._tracer.capacity
        if not self._tracer.collecting and self._cap_hit_ns is None and not full:
            # VizTracer stops by itself when a return does not match its stack (it warns
            # "Unexpected function return"): say so rather than show a short trace.
            self._notes.append(
                "the tracer stopped recording before the end of the run (a function return "
                "did not match its call stack); the trace ends there"
            )
        self._clocks.note_all(self._preexisting)
        t_stop = time.perf_counter()
        self._notes += self._tracer.stop()
        self._clocks.unwatch_thread_ends()
        self._lifetimes.unwatch()
        end_perf = time.perf_counter_ns()
        if self._io is not None:
            self._io.uninstall()
        kineto = self._torch.stop()
        imports.uninstall()
        _active = None
        self._state = "stopped"
        metrics = self._sampler.stop()
        pair1 = self._tracer.clock_pair()
        if full:
            self._notes.append(self._tracer.overflow_note)
        raw = self._tracer.extract()
        self._apply_cap(raw)
        to_perf = _clock_map(self._pair0, pair1)
        self.to_perf = to_perf  # for readings of now() taken by others (an MPI rank's calls)
        if self._cap_cut is not None:
            self._cap_hit_ns = int(to_perf(np.array([self._cap_cut]))[0])
        halted = Halted(stop_t, end_perf, raw, metrics, kineto, self._cell_times(to_perf))
        self.stop_timings = {"tracer_stop": time.perf_counter() - t_stop}
        return halted

    def build(self, halted: Halted) -> Recording:
        """The Recording of a halted run (``halt``): the calls nested, filtered and named,
        the threads' records, the notes; kept as ``self.recording``."""
        t_built = time.perf_counter()
        # The machine's speed after the run too (measure.machine_speed): here, not in
        # halt(), so a reply that waits for halt() only does not wait for it either.
        self._speed_chunks += machine_speed.chunks()
        raw, to_perf = halted.raw, self.to_perf
        assert to_perf is not None
        self.user.close_open(halted.stop_t, raw.thread_ids())
        self._notes += self.user.notes
        master = self._master_tid if self._master_tid is not None else self._start_tid
        inp = BuildInput(
            raw=raw,
            cells=self._cells,
            extras=self._extras,
            instrumenter_off=self.user.instr_off,
            recording_off=self.user.rec_off,
            config=self.config,
            master_tid=master,
            skip_tids=frozenset(self._preexisting - {c.tid for c in self._cells}),
            drop_file_prefixes=(_SHIM_DIR,),
            markers=self.user.markers,
        )
        regions, threads = build_threads(inp, to_perf)
        for t in threads:  # Score-P's THREAD_BEGIN / _END, on every thread but the master
            if t.thread_id != master and len(t):
                run = (self._start_perf, halted.end_perf)
                before = t.thread_id in self._before_start
                span = self._lifetimes.span(
                    t.thread_id, int(t.times[0]), int(t.times[-1]), run, before
                )
                t.span = ThreadSpan(*span)
        events = sum(len(t) for t in threads)
        notes = self._manifest_notes(inp.stats, events)
        self.recording = Recording(
            regions=regions,
            threads=threads,
            clock_offset_ns=self._offset_ns,
            start_ns=self._start_perf,
            end_ns=halted.end_perf,
            hostname=socket.gethostname(),
            pid=os.getpid(),
            metrics=halted.metrics,
            notes=notes,
            io_handles=list(self._io.handles) if self._io is not None else [],
        )
        if halted.kineto is not None or self._torch.notes:
            self._add_accelerators(halted.kineto)
        self._split_time(self.recording)
        ref = machine_speed.reference_cpu_s(self._speed_chunks)
        self.recording.notes["cell_time"] = mf.with_ref_cpu_s(halted.cell_time, ref)
        # The two parts of stop() for the manifest's "timings" (the caller's business).
        self.stop_timings["recording_build"] = time.perf_counter() - t_built
        return self.recording

    def write_files(
        self,
        recording: Recording | None = None,
        background: bool = True,
        on_done: Callable[[], None] | None = None,
    ):
        """Write traces.otf2, profile.cubex and metrics, then mark the manifest ready (or
        failed, with the error). Never raises from the background thread, which calls
        ``on_done`` (from that thread) when it ends."""
        from .files import write_all, write_in_idle_thread

        recording = recording or self.recording
        if recording is None:
            raise RuntimeError("write_files() needs the Recording that stop() returned")
        if not background:
            write_all(self.exp_dir, recording)
            return None
        built = recording  # (the lambda keeps the narrowed type)
        return write_in_idle_thread(self.exp_dir, lambda: built, on_done=on_done)

    # --- helpers ---------------------------------------------------------------------
    def after_import(self) -> None:
        """Something was imported during the run (measure.imports): torch.profiler
        starts once torch is there."""
        if self._state == "running":
            self._torch.torch_imported()

    def _add_accelerators(self, kineto) -> None:
        """The torch.profiler trace's operators and device streams into the Recording, and
        what the manifest says of it (``measurement.accelerator``)."""
        from ..accel.device_recording import add_to_recording

        recording = self.recording
        assert recording is not None
        notes = self._torch.notes.copy()
        if kineto is not None:
            try:
                notes.update(add_to_recording(recording, kineto))
            except Exception as e:  # the Python trace stays as it was
                notes["error"] = f"the torch.profiler trace was not merged: {type(e).__name__}: {e}"
        notes["seconds"] = dict(self._torch.seconds)
        recording.notes["accelerator"] = notes

    def _now(self) -> float:
        return self._tracer.now_ns()

    def _tick(self) -> None:
        """On the sampler thread, once per interval: the event cap, the threads' clocks."""
        self._check_cap()
        self._clocks.note_all(self._preexisting)

    def _cell_times(self, to_perf: Callable[[np.ndarray], np.ndarray]) -> mf.CellTimeRecord:
        """The cells' time, one definition everywhere (experiment.cell_time): each cell's
        region on the thread that ran it, split into running, queued and waiting where the
        threads' clocks were read, summed over the run's cells."""
        time_ns = cpu_ns = queue_ns = 0
        cells_ns = []
        split = self._clocks.enabled
        for c in self._cells:
            t0, t1 = (int(x) for x in to_perf(np.array([c.t0, c.t1])))
            time_ns += t1 - t0
            cells_ns.append(t1 - t0)
            got = self._clocks.at(c.tid, np.array([t0, t1])) if split else None
            if got is None:
                split = False
                continue
            run, queue = got
            cpu_ns += int(run[1] - run[0])
            queue_ns += int(queue[1] - queue[0])
        return mf.cell_time_record(
            time_ns,
            cpu_ns if split else None,
            queue_ns if split else None,
            cells_ns,
            machine_speed.reference_cpu_s(self._speed_chunks),
        )

    def _split_time(self, recording: Recording) -> None:
        """Each thread's running and queued time at its events (measure.thread_clock)."""
        if not self._clocks.enabled:
            return
        for thread in recording.threads:
            if not len(thread) or thread.thread_id < 0:
                continue
            tid = int(thread.thread_id)
            started_before = tid in self._before_start
            born = None if started_before else int(thread.times[0])
            got = self._clocks.at(tid, thread.times, born)
            if got is not None:
                thread.run_ns, thread.queue_ns = got

    def _check_cap(self) -> None:
        if self._cap_hit_ns is None and self._tracer.recorded >= self._cap_calls:
            self._tracer.halt()
            self._cap_hit_ns = time.perf_counter_ns()

    def _apply_cap(self, raw) -> None:
        """The sampler thread halts the tracer at its next tick after the cap; calls made
        in between are dropped here, so the run keeps exactly the first ``cap`` events
        (by start time) plus the calls that were open then, which end when they ended or,
        if still running when recording stopped, at the end of the run."""
        if len(raw) <= self._cap_calls:
            return
        cut = np.partition(raw.start, self._cap_calls)[self._cap_calls]
        raw.keep(raw.start < cut)
        self._cap_cut = cut
        if self._cap_hit_ns is None:  # the tracer was not halted (the run ended first)
            self._cap_hit_ns = time.perf_counter_ns()

    def _manifest_notes(self, stats: dict, events: int) -> dict:
        cfg = self.config
        notes: dict = {
            "engine": self._tracer.label,
            "events": events,
            "event_cap": cfg.event_cap,
            "filters": {
                "include": list(cfg.include),
                "exclude": list(cfg.exclude),
                "exclude_semantics": "a region from an excluded module is dropped with everything it calls; include wins",
                "max_depth": cfg.max_depth,
                "c_functions": cfg.c_functions,
                "imports_as_regions": cfg.imports_as_regions,
                "always_out": [
                    "the import machinery below each import (one import:<name> region instead)",
                    "the tracer's own frames (scorep_kernel.measure) and the scorep shim's",
                    "the <module> frames of cell code (the cell region stands for them)",
                    "calls outside the cell code on the cell's thread (IPython machinery)",
                    "threads that existed before start() and run no cell",
                ],
            },
            "recorded_calls": stats.get("raw_calls", 0),
            "dropped": {
                "outside_cells": stats.get("outside_cells", 0),
                "excluded": stats.get("excluded", 0),
                "paused": stats.get("paused", 0),
                "too_deep": stats.get("too_deep", 0),
                "not_nested": stats.get("crossing", 0),
            },
            "cap_reached": self._cap_hit_ns is not None,
            "messages": list(self._notes),
        }
        if self._cap_hit_ns is not None:
            notes["cap_reached_at_ns"] = int(self._cap_hit_ns)
            notes["messages"].append(
                f"event cap of {cfg.event_cap:,} events reached after "
                f"{(self._cap_hit_ns - self._start_perf) / 1e9:.3f} s: recording stopped there; "
                "calls still open were closed at the end of the run"
            )
        return notes

    def now(self) -> float:
        """The tracer's clock (ns), as ``record_region`` takes it; ``to_perf`` (set by
        ``stop``) maps such readings to the Recording's times."""
        return self._now()

    def record_region(self, region: Region, t0: float, t1: float) -> None:
        """A call timed by its caller on this thread (``now()`` readings), e.g. one of
        mpi4py's calls, which the tracer does not see (scorep_kernel.mpi.instrument)."""
        self._extras.append(ExtraRegion(threading.get_native_id(), t0, t1, region))

    def record_import(self, name: str, t0: float, t1: float) -> None:
        if not self.user.instrumenter_enabled():
            return  # as under Score-P: an import is a region while functions are recorded
        region = Region(
            rw.import_region_name(name),
            name.split(".")[0] or rw.IMPORT_MODULE,
            "", 0, ROLE_IMPORT,
        )  # fmt: skip
        self._extras.append(ExtraRegion(threading.get_native_id(), t0, t1, region))


def clock_offset() -> int:
    """time.time_ns() - time.perf_counter_ns(), read with the least jitter of a few tries."""
    best: tuple[int, int] | None = None
    for _ in range(5):
        a = time.perf_counter_ns()
        w = time.time_ns()
        b = time.perf_counter_ns()
        if best is None or b - a < best[0]:
            best = (b - a, w - (a + b) // 2)
    assert best is not None  # the loop ran
    return int(best[1])


def _clock_map(pair0: tuple[float, float], pair1: tuple[float, float]):
    """Tracer ns -> perf_counter ns. The tracer's clock is the TSC scaled by a factor
    calibrated over a few microseconds; two readings of both clocks, at start and at stop,
    correct its drift over a long run."""
    (v0, p0), (v1, p1) = pair0, pair1
    slope = (p1 - p0) / (v1 - v0) if v1 - v0 > 1e8 else 1.0  # over 0.1 s apart
    if not 0.99 < slope < 1.01:
        slope = 1.0

    def to_perf(t: np.ndarray) -> np.ndarray:
        return np.rint(p0 + (np.asarray(t, np.float64) - v0) * slope).astype(np.int64)

    return to_perf
