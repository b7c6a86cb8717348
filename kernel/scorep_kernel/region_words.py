"""What a trace's regions are called and stand for: the region roles, how an OTF2 trace
carries them (``encode_region_role`` / ``decode_region_role``), and the region naming
rule (``function_region_name`` ...), the same for the builtin tracer and Score-P. Part of
the experiment contract (``experiment``): standard library only.
"""

from __future__ import annotations

import re

# --- regions: roles ------------------------------------------------------------------
#
# What a region of the trace and the profile stands for. The viewers draw them apart (a
# cell is a frame, an import a block, an artificial region a marker).
ROLE_FUNCTION = "function"  # a Python function, method or lambda (or a C function)
ROLE_USER = "user"  # a user region: scorep.user.region(...) or its builtin shim
ROLE_IMPORT = "import"  # one `import x`, shown as a single region
ROLE_CELL = "cell"  # one notebook cell of the run
ROLE_ARTIFICIAL = "artificial"  # made by the measurement: "event cap reached", a run root
# Accelerators (torch.profiler / Kineto, Score-P's CUDA adapter): a framework operator on a
# host thread (aten::mm), a runtime API call (cudaLaunchKernel, cudaMemcpyAsync), and on a
# device stream a kernel, a memory copy or a memory set.
ROLE_OPERATOR = "operator"
ROLE_RUNTIME = "runtime"
ROLE_KERNEL = "kernel"
ROLE_MEMCPY = "memcpy"
ROLE_MEMSET = "memset"
DEVICE_ROLES = (ROLE_KERNEL, ROLE_MEMCPY, ROLE_MEMSET)
REGION_ROLES = (
    ROLE_FUNCTION, ROLE_USER, ROLE_IMPORT, ROLE_CELL, ROLE_ARTIFICIAL,
    ROLE_OPERATOR, ROLE_RUNTIME, *DEVICE_ROLES,
)  # fmt: skip

# How a trace carries the role. OTF2's own region roles cannot tell these apart (Score-P
# writes user regions, imports and functions all as FUNCTION), so the builtin writer
# stores the role word itself as the region's *description*, and sets the OTF2 region
# role and paradigm as Score-P would (formats.otf2_writer.REGION_ROLES). A reader takes
# the description when it is one of REGION_ROLES; otherwise (a Score-P trace, whose
# descriptions are its own) the OTF2 region role decides ARTIFICIAL -> "artificial", and
# the name and group the rest (the naming rule below): a cell's own region (named
# ``cell [n]`` or in group "cell", ``is_cell_region``) -> "cell", ``import:<module>`` ->
# "import", ``user:<name>`` -> "user", anything else -> "function".


_RUNTIME_NAME = re.compile(r"^(cuda|cu|hip|nccl)[A-Z]\w*$")


def encode_region_role(role: str) -> str:
    """The OTF2 region description that carries ``role``."""
    if role not in REGION_ROLES:
        raise ValueError(f"region role must be one of {REGION_ROLES}, not {role!r}")
    return role


def decode_region_role(
    description: str | None, otf2_region_role: str = "", name: str = "", group: str | None = None
) -> str:
    """The role of a region read from any OTF2 trace (or CUBE4 profile), from its
    description, its OTF2 region role (the enum's name, any case: "ARTIFICIAL", "function"
    ...), its name and its region group (a cell's is "cell")."""
    if description in REGION_ROLES:
        return description
    if otf2_region_role.lower() == ROLE_ARTIFICIAL:
        return ROLE_ARTIFICIAL
    # Score-P's CUDA adapter: kernels are KERNEL regions, copies DATA_TRANSFER ones, and
    # the API it wraps keeps CUDA's names (cudaLaunchKernel, cuMemcpyHtoDAsync_v2).
    if otf2_region_role.upper() == "KERNEL":
        return ROLE_KERNEL
    if otf2_region_role.upper() == "DATA_TRANSFER":
        return ROLE_MEMCPY
    if name and _RUNTIME_NAME.match(name):
        return ROLE_RUNTIME
    if name and cell_region_label(name, group) is not None:
        return ROLE_CELL
    module = region_module(name) if name else None
    if module == IMPORT_MODULE:
        return ROLE_IMPORT
    if module == USER_MODULE:
        return ROLE_USER
    return ROLE_FUNCTION


# --- regions: names --------------------------------------------------------------------
#
# Regions are named as Score-P's Python bindings name them, so a trace of the builtin
# tracer and one of Score-P read alike (and compare by name):
#
#   module:function        a module-level function           (__main__:f, time:sleep)
#   module.Class:method    a method, named after its class   (pandas.core.frame.DataFrame:sum)
#   user:<name>            a user region, scorep.user.region("<name>"); a user region given
#                          a module is <module>:<name>
#   import:<module>        an `import <module>` shown as one region
#
# Code of notebook cells runs in ``__main__``. A cell's own region is named by its label
# (``cell [<execution count>]`` unless the user named it) with group "cell". The region
# group, which the viewers colour by, is the module (for imports the imported top-level
# package; for user regions their module, "user" by default). A reader that finds no group
# takes the part of the name before the first ":" (``region_module``); a name without ":"
# comes from another tool, and the reader falls back to the region's source file.
USER_MODULE = "user"
IMPORT_MODULE = "import"


def function_region_name(module: str, function: str, owner: str | None = None) -> str:
    """``module:function``, or ``module.Owner:function`` for a method of class Owner."""
    return f"{module}.{owner}:{function}" if owner else f"{module}:{function}"


def user_region_name(name: str, module: str = USER_MODULE) -> str:
    return f"{module}:{name}"


def unclosed_regions_note(names: list[str]) -> str:
    """What a cell says of the user regions it left open (closed at its end, under either
    backend: Score-P would otherwise abort with an inconsistent profile)."""
    listed = ", ".join(repr(n) for n in names)
    return (
        f"scorep: user region{'s' if len(names) > 1 else ''} {listed} left open by the cell: "
        "closed at its end (end each scorep.user.region_begin with region_end).\n"
    )


def import_region_name(module: str) -> str:
    return f"{IMPORT_MODULE}:{module}"


def is_measurement_api(module: str) -> bool:
    """``scorep`` and its submodules: the measurement's own API, whose import is no region
    under either backend (Score-P's bindings leave every ``scorep*`` frame out; the
    builtin's shim is loaded before the cell, so ``import scorep.user`` loads nothing)."""
    return module == "scorep" or module.startswith("scorep.")


def region_module(name: str) -> str | None:
    """The module part of a region name (before the first ":"), None when it has none."""
    return name.split(":", 1)[0] if ":" in name else None


# A cell's own region is named by its label, "cell [3]" unless the user named it, in the
# region group "cell" under either backend (Score-P's worker begins it through Score-P's C
# user API, worker.scorep_user_api). Experiments written before that named it through the
# bindings, "<module>:<name>" with an empty module: ":cell [3]"; they still read as cells.
CELL_GROUP = "cell"
_CELL_REGION = re.compile(r":?cell \[(\d+)\]")
_NOT_CELLS = (CELL_GROUP, USER_MODULE, IMPORT_MODULE)


def cell_region_count(region_name: str) -> int | None:
    """The execution count of a cell's own region (either backend's naming), else None."""
    m = _CELL_REGION.fullmatch(region_name)
    return int(m.group(1)) if m else None


def is_cell_region(region_name: str, group: str | None = None) -> bool:
    """Whether a region is a cell's own: named ``cell [n]`` (or the older ``:cell [n]``), or
    any region of group "cell" (a cell the user labelled) but a function or method of a
    module named ``cell`` (``cell:f``, ``cell.K:m``, which the bindings also put in group
    "cell") and a user region or an import by its name."""
    if cell_region_count(region_name) is not None:
        return True
    module = region_module(region_name) or ""
    return group == CELL_GROUP and module.split(".", 1)[0] not in _NOT_CELLS


def cell_region_label(region_name: str, group: str | None = None) -> str | None:
    """What a viewer shows for a cell's own region, the same under either backend ("cell
    [3]" for "cell [3]" and the older ":cell [3]", a labelled cell's label); None for other
    regions. In an older Score-P experiment every region of the empty module is a cell's:
    the kernel named nothing else so."""
    if cell_region_count(region_name) is not None:
        return region_name.removeprefix(":")
    if is_cell_region(region_name, group):
        return region_name
    if region_name.startswith(":") and len(region_name) > 1:
        return region_name[1:]
    return None


# --- threads: location names -----------------------------------------------------------
#
# A thread other than the master is the location "Thread N (label)" in both backends: N
# counts the run's threads (as Score-P numbers its locations), the label is the Python
# thread's name. Python's default names, "Thread-5" and "Thread-5 (work)" (3.10+: the
# target's name in brackets), number threads by their own counter, which is not N: they
# give the target's name, or no label, so the panel never reads "Thread 1 (Thread-5 (work))".
_DEFAULT_THREAD_NAME = re.compile(r"Thread-\d+(?: \((?P<target>.+)\))?")


def thread_location_name(number: int, python_name: str | None) -> str:
    """The location name of the run's thread ``number`` (from 1) named ``python_name``."""
    label = python_name or ""
    default = _DEFAULT_THREAD_NAME.fullmatch(label)
    if default:
        label = default.group("target") or ""
    return f"Thread {number} ({label})" if label else f"Thread {number}"
