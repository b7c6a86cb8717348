"""The ``text/plain`` and ``text/html`` of a profiled cell's display: the profile's gist for
frontends without the extension (VS Code, GitHub, nbconvert's HTML, a terminal).

One ``Gist`` (frozen, typed) says what both show: the summary sentence, the top functions by
exclusive time with their share of all measured time, the verdicts when known, what
measured and how long the cell took, and where the files are, relative to the notebook's
folder when they lie in it. The kernel fills it from its run at once (``runs.display``; no
verdicts yet: they come from the finished files); ``jupyter scorep run``, ``papermill
--engine scorep`` and our nbconvert preprocessor fill it again once the files are written,
with the panel's summary (server_ext/jupyterlab_scorep/headless/finished_outputs.py).

The HTML sets no colour of its own: text, borders and share bars are drawn in the
surrounding ``currentColor``, so it reads in light and dark themes (JupyterLab, VS Code,
nbconvert's ``--HTMLExporter.theme=dark``); without its styles (GitHub strips them) it is
a plain table with the same numbers.
"""

from __future__ import annotations

import html
import os
from dataclasses import dataclass, field

# How many top functions the gist lists.
TOP_SHOWN = 5


@dataclass(frozen=True)
class TopFunction:
    name: str
    exclusive_s: float
    share_pct: float | None  # of all measured time (every region, every thread); None: unknown


@dataclass(frozen=True)
class Gist:
    message: str  # the summary sentence ("Profiled with ... : 1.23 s, 48,211 events.")
    rows: tuple[tuple[str, str], ...]  # (label, value): backend, isolation, wall time, ...
    path: str  # the experiment directory as shown (shown_path)
    top: tuple[TopFunction, ...] = ()
    # the summary's verdicts in words; None: not judged yet (the files are being written)
    verdicts: tuple[str, ...] | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)


def shown_path(path: str, base: str | None = None) -> str:
    """``path`` relative to ``base`` (the notebook's folder; the kernel's working directory
    when None) when it lies inside it, else as given."""
    base = os.path.abspath(base if base is not None else os.getcwd())
    try:
        absolute = os.path.abspath(path)
        if os.path.commonpath([absolute, base]) == base and absolute != base:
            return os.path.relpath(absolute, base)
    except ValueError:  # different drives, or an empty path
        pass
    return path


def seconds(s: float) -> str:
    """``514 ms``, ``1.23 s``, ``87 µs``: three digits at most."""
    if s >= 100:
        return f"{s:.0f} s"
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} µs"


def top_functions(
    top: list[tuple[str, float]], measured_s: float | None
) -> tuple[TopFunction, ...]:
    """The kernel's top regions ``[(name, exclusive s)]`` with their share of ``measured_s``."""
    total = measured_s if measured_s and measured_s > 0 else None
    return tuple(
        TopFunction(name, float(t), None if total is None else 100.0 * float(t) / total)
        for name, t in top[:TOP_SHOWN]
    )


def _share(pct: float | None) -> str:
    return "" if pct is None else f"{pct:.1f} %"


def _more(path: str) -> str:
    return f"jupyter scorep report {path}"


def plain_text(g: Gist) -> str:
    lines = [g.message]
    if g.top:
        lines.append("  Top functions (exclusive time, share of all measured time):")
        width = max(len(seconds(f.exclusive_s)) for f in g.top)
        for f in g.top:
            lines.append(
                f"    {_share(f.share_pct):>7}  {seconds(f.exclusive_s):>{width}}  {f.name}"
            )
    if g.verdicts is not None:
        if g.verdicts:
            lines += ["  Verdict:"] + [f"    - {v}" for v in g.verdicts]
        else:
            lines.append("  Verdict: nothing stood out (CPU, memory, I/O, measurement).")
    rows = [*g.rows, ("files", g.path)]
    width = max(len(k) for k, _ in rows)
    lines += [f"  {k.ljust(width)}  {v}" for k, v in rows]
    lines += [f"  {n}" for n in g.notes]
    more = "call tree" if g.verdicts is not None else "verdicts, call tree"
    lines.append(f"  {'more'.ljust(width)}  {_more(g.path)}  ({more}; the panel in JupyterLab)")
    return "\n".join(lines)


# Scoped to the gist, with two classes per rule so that a host's table rules (JupyterLab's
# and nbconvert's ``:not(.jp-RenderedMarkdown).jp-RenderedHTMLCommon td`` right-aligns every
# cell; VS Code's notebook webview right-aligns ``table, th, tr``) give way; colours only
# as currentColor, so any theme's text colour draws it.
_STYLE = (
    "<style>"
    ".scorep-gist{line-height:1.45}"
    ".scorep-gist p{margin:0 0 0.35em 0}"
    ".scorep-gist .gt{border-collapse:collapse;margin:0 0 0.35em 0}"
    ".scorep-gist p.top{margin:0 0 1px 0}"
    ".scorep-gist .gt th,.scorep-gist .gt td{padding:1px 0.9em 1px 0;text-align:left;"
    "vertical-align:middle;white-space:nowrap}"
    ".scorep-gist .gt th{font-weight:600}"
    ".scorep-gist .gt td.num{text-align:right;font-variant-numeric:tabular-nums}"
    ".scorep-gist .bar{display:inline-block;width:6em;height:0.7em;border:1px solid "
    "currentColor;border-radius:2px;opacity:0.6;vertical-align:middle;overflow:hidden}"
    ".scorep-gist .bar>span{display:block;height:100%;background:currentColor}"
    ".scorep-gist ul{margin:0.1em 0 0.35em 0;padding-left:1.4em}"
    ".scorep-gist .more{opacity:0.8}"
    "</style>"
)


def _bar(pct: float | None) -> str:
    if pct is None:
        return ""
    width = max(0.0, min(100.0, pct))
    return f"<span class='bar' aria-hidden='true'><span style='width:{width:.1f}%'></span></span>"


def html_text(g: Gist) -> str:
    e = html.escape
    parts = [f"<div class='scorep-experiment-summary scorep-gist'>{_STYLE}<p>{e(g.message)}</p>"]
    if g.top:
        rows = "".join(
            f"<tr><td class='num'>{e(_share(f.share_pct))}</td><td>{_bar(f.share_pct)}</td>"
            f"<td class='num'>{e(seconds(f.exclusive_s))}</td><td><code>{e(f.name)}</code>"
            "</td></tr>"
            for f in g.top
        )
        parts.append(
            "<p class='top'>Top functions (exclusive time, share of all measured time)</p>"
            f"<table class='gt'><tbody>{rows}</tbody></table>"
        )
    if g.verdicts is not None:
        if g.verdicts:
            items = "".join(f"<li>{e(v)}</li>" for v in g.verdicts)
            parts.append(f"<p><b>Verdict</b></p><ul>{items}</ul>")
        else:
            parts.append(
                "<p><b>Verdict</b>: nothing stood out (CPU, memory, I/O, measurement).</p>"
            )
    facts = "".join(
        f"<tr><th>{e(k)}</th><td>{'<code>' + e(v) + '</code>' if k == 'files' else e(v)}</td></tr>"
        for k, v in [*g.rows, ("files", g.path)]
    )
    parts.append(f"<table class='gt'>{facts}</table>")
    parts += [f"<p>{e(n)}</p>" for n in g.notes]
    more = "the call tree" if g.verdicts is not None else "the verdicts and the call tree"
    parts.append(
        f"<p class='more'>For {more}: <code>{e(_more(g.path))}</code> in a terminal, or the "
        "profile panel in JupyterLab.</p></div>"
    )
    return "".join(parts)
