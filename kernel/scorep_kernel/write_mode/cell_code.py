"""One notebook cell as code of the recorded script.

IPython's own syntax (``%env``, ``!cmd``, ``%%bash``, ``x?``) is turned into plain Python
by IPython's transformer (``get_ipython().run_line_magic(...)`` ...), and the script runs
those calls through IPython itself (``IPYTHON_PRELUDE``), so they mean there what they
meant in the notebook, except ``%env SCOREP_*=...``, which goes to the run script instead
(Score-P reads its variables when its process starts). A cell's last expression is printed as the
notebook shows it (its ``repr``, unless it is None or the cell ends with ``;``). A cell that
was not profiled runs with Score-P's instrumenter off: its code is indented under
``with scorep.instrumenter.disable():``, all but the lines inside multi-line strings.
"""

from __future__ import annotations

import ast
import io
import tokenize
from dataclasses import dataclass, field

# What the script defines when a cell uses IPython's syntax.
IPYTHON_PRELUDE = '''\
def get_ipython():
    """IPython's syntax in the cells (%env, !cmd, %%bash, ...) runs through IPython."""
    from IPython.core.interactiveshell import InteractiveShell

    return InteractiveShell.instance()
'''


@dataclass(frozen=True)
class ScriptCell:
    code: str  # the cell's code for the script, at the top level or under disable()
    uses_ipython: bool  # it calls get_ipython() (IPYTHON_PRELUDE is needed)
    scorep_env: dict[str, str] = field(default_factory=dict)  # %env SCOREP_*=... in it
    empty: bool = False  # no code of its own (a bare "pass")


def _transform(source: str) -> str:
    from IPython.core.inputtransformer2 import TransformerManager

    try:
        return TransformerManager().transform_cell(source)
    except Exception:  # left as written: the script says where it fails
        return source


def _env_setting(node: ast.AST) -> tuple[str, str] | None:
    """``%env KEY=VALUE`` (or ``%env KEY VALUE``) as IPython's transformer writes it."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "run_line_magic"
        and len(node.args) == 2
        and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in node.args)
    ):
        return None
    name, line = node.args[0].value, node.args[1].value  # type: ignore[attr-defined]
    if name != "env":
        return None
    key, eq, value = line.partition("=")
    if not eq:
        key, _, value = line.strip().partition(" ")
    key = key.strip()
    return (key, value.strip()) if key and value.strip() else None


def _take_scorep_env(code: str, tree: ast.Module) -> tuple[str, ast.Module, dict[str, str]]:
    """``%env SCOREP_*=...`` statements go to the run script (Score-P reads its settings when
    its process starts): out of the code, into the returned settings."""
    found: dict[str, str] = {}
    drop: set[int] = set()
    for statement in tree.body:
        setting = _env_setting(statement.value) if isinstance(statement, ast.Expr) else None
        if setting is not None and setting[0].startswith("SCOREP_") and statement.end_lineno:
            found[setting[0]] = setting[1]
            drop.update(range(statement.lineno, statement.end_lineno + 1))
    if not drop:
        return code, tree, found
    kept = [line for n, line in enumerate(code.splitlines(), 1) if n not in drop]
    code = "\n".join(kept) + ("\n" if kept else "")
    return code, ast.parse(code), found


def _show_last_value(code: str, tree: ast.Module, silenced: bool) -> str:
    """The cell's last top-level expression printed, as the notebook shows it."""
    if silenced or not tree.body or not isinstance(tree.body[-1], ast.Expr):
        return code
    last = tree.body[-1]
    if last.col_offset != 0 or last.end_lineno is None:
        return code  # "a; b" on one line: left as it is
    call = last.value
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "print":
        return code  # None, always
    lines = code.splitlines()
    head, tail = lines[: last.lineno - 1], lines[last.end_lineno :]
    expr = lines[last.lineno - 1 : last.end_lineno]
    value = [f"_ = {expr[0]}"] if len(expr) == 1 else ["_ = (", *expr, ")"]
    shown = [*value, "if _ is not None:  # the cell's value, as the notebook shows it"]
    shown.append("    print(repr(_))")
    return "\n".join([*head, *shown, *tail]) + "\n"


def _string_continuations(code: str) -> set[int]:
    """Line numbers (1-based) that continue a string token started on an earlier line."""
    inside: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            kind = token.type
            if kind == tokenize.STRING or getattr(tokenize, "FSTRING_MIDDLE", -1) == kind:
                inside.update(range(token.start[0] + 1, token.end[0] + 1))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return inside


def indented(code: str, prefix: str = "    ") -> str:
    """``code`` one block deeper; lines inside multi-line strings keep their text."""
    keep = _string_continuations(code)
    out = [
        line if (number in keep or not line.strip()) else prefix + line
        for number, line in enumerate(code.splitlines(), 1)
    ]
    body = "\n".join(out).rstrip()
    return (body or prefix + "pass") + "\n"


def script_cell(source: str, *, instrumented: bool) -> ScriptCell:
    """The cell (its own code, without the kernel's magic line) for the script."""
    code = _transform(source)
    try:
        tree = ast.parse(code)
    except SyntaxError:
        tree = None
    scorep_env: dict[str, str] = {}
    if tree is not None:
        code, tree, scorep_env = _take_scorep_env(code, tree)
        code = _show_last_value(code, tree, source.rstrip().endswith(";"))
    uses_ipython = "get_ipython()" in code
    empty = not code.strip()
    if empty:
        code = "pass\n"
    if not instrumented:
        code = "with scorep.instrumenter.disable():\n" + indented(code)
    return ScriptCell(code, uses_ipython, scorep_env, empty)
