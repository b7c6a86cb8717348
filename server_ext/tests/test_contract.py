"""src/api/ spells the experiment contract's words (kernel/scorep_kernel/experiment.py) as
TypeScript string-literal unions (in experimentTypes.ts; the interfaces of traceTypes.ts and
analysisTypes.ts use them); this test fails, naming the type and the value, when the two
disagree, or when an interface field stops using its union."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from scorep_kernel import experiment as ex

API_DIR = Path(__file__).resolve().parents[2] / "src" / "api"
# the files that hold the REST API's types
API_TS = [API_DIR / name for name in ("experimentTypes.ts", "traceTypes.ts", "analysisTypes.ts")]


def _api_text() -> str:
    """The API's type files as one text (the unions and the interfaces that use them)."""
    return "\n".join(path.read_text(encoding="utf-8") for path in API_TS)


# TypeScript union -> the contract's values
UNIONS = {
    "Backend": ex.BACKENDS,
    "Isolation": ex.ISOLATIONS,
    "RunStatus": ex.RUN_STATUSES,
    "FilesStatus": ex.FILES_STATUSES,
    "RegionRole": ex.REGION_ROLES,
}
# interface -> {field: the union its type must be}
FIELDS = {
    "IManifest": {
        "backend": "Backend",
        "isolation": "Isolation",
        "status": "RunStatus",
        "files_status": "FilesStatus",
    },
    "IExperimentBundle": {"backend": "Backend", "isolation": "Isolation", "status": "RunStatus"},
    "ISummary": {"status": "RunStatus"},
    "ICompareRun": {"backend": "Backend", "isolation": "Isolation", "status": "RunStatus"},
    "IRegionInfo": {"role": "RegionRole"},
}


def _interface_body(text: str, name: str) -> str | None:
    """The text between the braces of ``interface name { ... }`` (nested braces counted)."""
    m = re.search(rf"\binterface\s+{name}\b[^{{]*{{", text)
    if m is None:
        return None
    depth, i = 1, m.end()
    while i < len(text) and depth:
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
    return text[m.end() : i - 1]


def contract_mismatches(text: str) -> list[str]:
    """What in the TypeScript ``text`` disagrees with experiment.py, in words."""
    problems = []
    for union, values in UNIONS.items():
        m = re.search(rf"\bexport\s+type\s+{union}\s*=([^;]+);", text)
        if m is None:
            problems.append(f"src/api/ has no `export type {union} = ...;`")
            continue
        members = [part.strip() for part in m.group(1).split("|") if part.strip()]
        literals = re.findall(r"^'([^']*)'$|^\"([^\"]*)\"$", "\n".join(members), re.M)
        ts = {a or b for a, b in literals}
        if len(literals) != len(members):
            problems.append(f"{union} is not a union of string literals only: {m.group(1).strip()}")
        for missing in [v for v in values if v not in ts]:
            problems.append(f"{union} lacks {missing!r}, which experiment.py defines")
        for extra in sorted(ts - set(values)):
            problems.append(f"{union} has {extra!r}, which experiment.py does not define")
    for interface, fields in FIELDS.items():
        body = _interface_body(text, interface)
        if body is None:
            problems.append(f"src/api/ has no interface {interface}")
            continue
        for field, union in fields.items():
            m = re.search(rf"^\s*{field}\??\s*:\s*([^;\n]+);", body, re.M)
            if m is None:
                problems.append(f"{interface} has no field {field}")
            elif m.group(1).strip() != union:
                problems.append(
                    f"{interface}.{field} is typed {m.group(1).strip()!r}, not the contract's "
                    f"{union}"
                )
    return problems


def test_api_ts_matches_the_experiment_contract():
    problems = contract_mismatches(_api_text())
    assert not problems, "src/api/ and experiment.py disagree:\n" + "\n".join(problems)


@pytest.mark.parametrize(
    "old, new, needle",
    [
        ("'crashed'", "'crash'", "RunStatus lacks 'crashed'"),
        ("| 'unavailable'", "| 'unavailable' | 'gone'", "FilesStatus has 'gone'"),
        ("'inprocess'", "'in-process'", "Isolation lacks 'inprocess'"),
        ("'builtin'", "string", "Backend is not a union of string literals only"),
        ("'artificial'", "'marker'", "RegionRole lacks 'artificial'"),
        ("role?: RegionRole;", "role?: string;", "IRegionInfo.role is typed 'string'"),
        ("files_status?: FilesStatus;", "", "IManifest has no field files_status"),
    ],
)
def test_the_check_fails_on_a_changed_word(old, new, needle):
    text = _api_text()
    assert old in text, f"the self-test's anchor {old!r} is gone from src/api/"
    problems = contract_mismatches(text.replace(old, new, 1))
    assert any(needle in p for p in problems), problems
