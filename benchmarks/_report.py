"""How a benchmark states a figure, so that run_all.py can tabulate it.

Each call prints one readable line and one machine line (``RESULT {json}``)::

    report("otf2 write, fast engine", 1.9e6, "events/s",
           peer="otf2 high-level writer", peer_value=1.7e5, target=">= 1.5e6", met=True)
"""

from __future__ import annotations

import json
import sys


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and (abs(value) >= 1e5 or (value and abs(value) < 1e-2)):
        return f"{value:.3g}"
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".")
    return str(value)


def report(
    name: str,
    value: float,
    unit: str,
    *,
    peer: str | None = None,
    peer_value: float | None = None,
    target: str | None = None,
    met: bool | None = None,
    note: str | None = None,
) -> None:
    line = f"{name}: {_fmt(value)} {unit}"
    if peer:
        line += f"  (peer: {peer} {_fmt(peer_value)} {unit})"
    if target:
        line += f"  target {target}: {'met' if met else 'NOT met' if met is not None else '?'}"
    print(line)
    record = dict(
        name=name,
        value=value,
        unit=unit,
        peer=peer,
        peer_value=peer_value,
        target=target,
        met=met,
        note=note,
    )
    print("RESULT " + json.dumps(record))
    sys.stdout.flush()
