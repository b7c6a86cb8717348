"""The fallback recording engine: VizTracer's C tracer, read out without its JSON step.

Used where our own recorder (measure.calltrace_engine) is not built: Python 3.12+, where
VizTracer sees calls through sys.monitoring, or no C compiler at install time.

Chosen by measurement (``benchmarks/tracer_overhead.py`` prints the figures; fib(25), the
same machine and run): a profile function written in Python costs ~0.2 µs per event before
it records anything; a minimal pure-Python recorder (time, code, kind per event, no
filtering) runs fib(25) 18-20x slower, VizTracer's C tracer (``snaptrace.Tracer``) 6-7x.
VizTracer's own ways out of its buffer (``load()``, ``dump()``) build a dict or JSON text
per call, which costs more than the tracing (fib(25): 0.4-1.5 s for 243k calls). So we
keep VizTracer's C recorder and read its ring buffer directly: one 88-byte node per
finished call (44 bytes per event), viewed as a numpy structured array. That layout is
private to viztracer 1.1.x: it is checked when a tracer is made (field values against
known ones, then a probe call read back); a mismatch raises EngineError naming the version
to install. ``sys.monitoring`` (3.12+) is what VizTracer itself uses there.

VizTracer drops a call it is told to ignore *with everything below it*. We use that for
two boundaries: our own package directory (the tracer's frames, and the import hook, so
the import machinery under ``import x`` costs nothing) and frozen importlib/zipimport.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from collections.abc import Callable
from functools import partial

import numpy as np
from viztracer import __version__ as VIZTRACER_VERSION
from viztracer import snaptrace

from .engine import EngineError, RawCalls, SavedProfiles, clock_pair, restore_profile

ENGINE_NAME = "viztracer-c"
SUPPORTED_VERSIONS = ("1.1.",)
INSTALL_HINT = "pip install 'viztracer>=1.1.1,<1.2'"

NODE_BYTES = 88
NODE_DTYPE = np.dtype(
    {
        "names": ["ntype", "ts", "tid", "ptr0", "ptr1", "ptr2", "type", "dur"],
        "formats": ["<i4", "<i8", "<u8", "<u8", "<u8", "<u8", "<i4", "<i8"],
        # ntype | ts | tid | fee.args | fee.retval | fee.{code|m_module} | fee.ml_name |
        # fee.tp_name | fee.type | fee.dur | fee.asyncio_task
        "offsets": [0, 8, 16, 40, 48, 56, 64, 72],
        "itemsize": NODE_BYTES,
    }
)
FEE_NODE = 1
PY_CALL, PY_RETURN, C_CALL, C_EXCEPTION, C_RETURN = 0, 3, 4, 5, 6

# TracerObject field offsets (viztracer 1.1.x, 64-bit, CPython without free threading).
_OFF_COLLECTING = 20
_OFF_BUFFER = 104
_OFF_SIZE = 112
_OFF_HEAD = 120
_OFF_TAIL = 128
_OFF_META = 144


class VizTracerEngine:
    """One snaptrace.Tracer with a buffer of ``capacity`` calls (a ring: past it the
    oldest calls are overwritten)."""

    label = f"{ENGINE_NAME} (viztracer {VIZTRACER_VERSION}, buffer read directly)"
    overflow_note = (
        "the tracer's buffer overflowed before the event cap was enforced: the oldest "
        "calls were overwritten"
    )

    def __init__(self, capacity: int):
        if not str(VIZTRACER_VERSION).startswith(SUPPORTED_VERSIONS):
            raise EngineError(
                f"viztracer {VIZTRACER_VERSION} is installed; the builtin tracer reads the "
                f"buffer layout of viztracer 1.1.x: {INSTALL_HINT}"
            )
        if sys.maxsize < 2**32 or getattr(sys, "_is_gil_enabled", lambda: True)() is False:
            raise EngineError("the builtin tracer needs a 64-bit CPython with the GIL")
        prev_sys, prev_thread = sys.getprofile(), threading.getprofile()
        tracer = snaptrace.Tracer(capacity)
        # The constructor installs itself on this thread and for new threads: undo that.
        restore_profile(prev_sys)
        threading.setprofile(prev_thread)
        tracer.verbose = 0
        self.capacity = capacity
        self._tracer = tracer
        self._addr = id(tracer)
        lib = ctypes.CDLL(snaptrace.__file__)
        self._factor = ctypes.c_double.in_dll(lib, "ts_to_ns_factor")
        self._t0_ts = ctypes.c_int64.in_dll(lib, "t0_ts")
        self._t0_ns = ctypes.c_int64.in_dll(lib, "t0_ns")
        tracer.getts()  # forces the TSC calibration
        self._check_layout()
        self.getts = tracer.getts
        self.threadtracefunc = tracer.threadtracefunc
        self.saved = SavedProfiles()
        self.c_functions = False

    # --- raw fields -------------------------------------------------------------------
    def _long(self, offset: int) -> ctypes.c_long:
        return ctypes.c_long.from_address(self._addr + offset)

    @property
    def collecting(self) -> bool:
        return bool(ctypes.c_int.from_address(self._addr + _OFF_COLLECTING).value)

    def halt(self) -> None:
        """Stop recording on every thread now (the event cap); open calls stay on the
        per-thread stacks and are closed by stop()."""
        ctypes.c_int.from_address(self._addr + _OFF_COLLECTING).value = 0

    @property
    def recorded(self) -> int:
        """Calls in the buffer now (between head and tail)."""
        size, head, tail = (self._long(o).value for o in (_OFF_SIZE, _OFF_HEAD, _OFF_TAIL))
        return (tail - head) % size

    def _check_layout(self) -> None:
        size = self._long(_OFF_SIZE).value
        head, tail = self._long(_OFF_HEAD).value, self._long(_OFF_TAIL).value
        if size != self.capacity + 1 or head != tail or not (0 <= head < size) or self.collecting:
            raise EngineError(
                f"viztracer {VIZTRACER_VERSION}'s tracer does not have the expected memory "
                f"layout (buffer size {size}, expected {self.capacity + 1}): {INSTALL_HINT}"
            )
        # Probe: record two calls of a known function and read them back.
        namespace: dict = {}
        exec(compile("def probe():\n    return 1\n", "<scorep-probe>", "exec"), namespace)
        probe = namespace["probe"]
        prev_sys = sys.getprofile()
        self._tracer.start()
        probe()
        probe()
        self._tracer.stop("flush_as_finish")
        restore_profile(prev_sys)
        raw = self.extract()
        codes = [k[1] for k in raw.keys if k[0] == "py"]
        found = sum(
            1
            for i in raw.key.tolist()
            if raw.keys[i][0] == "py" and raw.keys[i][1] is probe.__code__
        )
        if found != 2 or not np.all(raw.end >= raw.start) or probe.__code__ not in codes:
            raise EngineError(
                f"reading viztracer {VIZTRACER_VERSION}'s buffer did not give back a probe "
                f"call (found {found} of 2): {INSTALL_HINT}"
            )

    # --- configuration and start/stop ------------------------------------------------
    def configure(self, *, ignore_prefix: str, c_functions: bool, exclude_files: list[str]):
        self._tracer.lib_file_path = ignore_prefix
        self._tracer.ignore_c_function = not c_functions
        self.c_functions = c_functions
        self._tracer.exclude_files = list(exclude_files)
        self._tracer.max_stack_depth = -1
        self._tracer.clear()

    def start(self) -> None:
        """Record on this thread and on threads started from now on."""
        self.saved.save()
        self._tracer.clear()
        if sys.version_info < (3, 12):
            threading.setprofile(self._tracer.threadtracefunc)
        self._tracer.start()

    @property
    def install_here(self) -> Callable[[], None]:
        """Record on the calling thread too (a thread that existed before start())."""
        return self._install_here

    def _install_here(self) -> None:
        if sys.version_info < (3, 12) and sys.getprofile() is not self._tracer:
            sys.setprofile(self._tracer.threadtracefunc)

    def owns(self, profile_object: object) -> bool:
        """Whether a sys.getprofile() value is this tracer recording on that thread."""
        return profile_object is self._tracer

    @property
    def resume_here(self) -> Callable[[], None]:
        """Back on this thread after sys.setprofile(None) (measure.imports): the C profiler
        is re-installed at the next event. No Python frame of ours in between: the next
        event is the return of the caller's frame, which VizTracer expects."""
        return partial(sys.setprofile, self._tracer.threadtracefunc)

    def stop(self) -> list[str]:
        """Stop recording; calls still open on any thread end now. Restores the profile
        functions found at start(). Returns notes on what could not be restored."""
        self._tracer.stop("flush_as_finish")
        return self.saved.restore()

    # --- clock -----------------------------------------------------------------------
    def now_ns(self) -> float:
        """The tracer's clock, ns (the calls' start and end are on it)."""
        return self.getts() * 1000.0

    def clock_pair(self) -> tuple[float, float]:
        """(tracer ns, perf_counter ns) read at the same moment (engine.clock_pair)."""
        return clock_pair(self.now_ns)

    # --- read out --------------------------------------------------------------------
    def extract(self, clear: bool = True) -> RawCalls:
        """Copy the finished calls out of the buffer and (by default) empty it."""
        size = self._long(_OFF_SIZE).value
        head, tail = self._long(_OFF_HEAD).value, self._long(_OFF_TAIL).value
        buf_addr = ctypes.c_void_p.from_address(self._addr + _OFF_BUFFER).value
        assert buf_addr is not None, "the tracer allocates its buffer when it is created"
        buf = np.frombuffer(
            # numpy's stubs list a few buffer types only; a ctypes array exports the buffer protocol
            (ctypes.c_char * (size * NODE_BYTES)).from_address(buf_addr),  # type: ignore[call-overload]
            NODE_DTYPE,
        )
        nodes = buf[head:tail] if tail >= head else np.concatenate([buf[head:], buf[:tail]])
        fee = nodes["ntype"] == FEE_NODE
        if not fee.all():  # only FEE nodes without instants/counters: keep the view, no copy
            nodes = nodes[fee]
        factor, t0_ts, t0_ns = self._factor.value, self._t0_ts.value, self._t0_ns.value
        start = t0_ns + (nodes["ts"] - t0_ts).astype(np.float64) * factor
        end = start + nodes["dur"].astype(np.float64) * factor
        is_py = (nodes["type"] == PY_RETURN) | (nodes["type"] == PY_CALL)
        keys: list = []
        key = np.empty(len(nodes), np.int32)
        # Python calls: one key per code object (the buffer holds a reference to each).
        if is_py.any():
            ptrs, inverse = np.unique(nodes["ptr0"][is_py], return_inverse=True)
            base = len(keys)
            for p in ptrs.tolist():
                keys.append(("py", ctypes.cast(p, ctypes.py_object).value))
            key[is_py] = base + inverse
        # C calls: m_module (object or NULL), ml_name (char*), tp_name (char*).
        is_c = ~is_py
        if is_c.any():
            triples = np.stack([nodes["ptr0"][is_c], nodes["ptr1"][is_c], nodes["ptr2"][is_c]], 1)
            uniq, inverse = np.unique(triples, axis=0, return_inverse=True)
            base = len(keys)
            for m_module, ml_name, tp_name in uniq.tolist():
                name = ctypes.string_at(ml_name).decode("utf-8", "replace") if ml_name else "?"
                module = ctypes.cast(m_module, ctypes.py_object).value if m_module else None
                if module is not None and not isinstance(module, str):
                    module = getattr(module, "__name__", None)
                type_name = (
                    ctypes.string_at(tp_name).decode("utf-8", "replace")
                    if (tp_name and not m_module)
                    else None
                )
                keys.append(("c", module, type_name, name))
            key[is_c] = base + inverse.reshape(-1)
        tid = nodes["tid"].copy()
        names = self.thread_names()
        if clear:
            self._tracer.clear()
        return RawCalls(tid=tid, start=start, end=end, key=key, keys=keys, thread_names=names)

    def thread_names(self) -> dict[int, str]:
        names: dict[int, str] = {}
        node = ctypes.c_void_p.from_address(self._addr + _OFF_META).value
        while node:
            tid = ctypes.c_ulong.from_address(node + 8).value
            name_ptr = ctypes.c_void_p.from_address(node + 16).value
            if name_ptr:
                names[tid] = str(ctypes.cast(name_ptr, ctypes.py_object).value)
            node = ctypes.c_void_p.from_address(node).value
        return names
