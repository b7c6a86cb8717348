"""src/api/ spells the experiment contract (kernel/scorep_kernel/manifest.py and
region_words.py) in TypeScript: its words as string-literal unions (experimentTypes.ts; the
interfaces of traceTypes.ts and analysisTypes.ts use them), the manifest's TypedDicts as
interfaces (experimentTypes.ts). This test fails, naming the type and the value or field,
when the two disagree (a value, a field, whether it is optional, its type), or when an
interface field stops using its union."""

from __future__ import annotations

import re
import types
import typing
from pathlib import Path

import pytest

from scorep_kernel import manifest as mf
from scorep_kernel import region_words as rw

API_DIR = Path(__file__).resolve().parents[2] / "src" / "api"
# the files that hold the REST API's types
API_TS = [API_DIR / name for name in ("experimentTypes.ts", "traceTypes.ts", "analysisTypes.ts")]


def _api_text() -> str:
    """The API's type files as one text (the unions and the interfaces that use them)."""
    return "\n".join(path.read_text(encoding="utf-8") for path in API_TS)


# TypeScript union -> the contract's values
UNIONS = {
    "Backend": mf.BACKENDS,
    "Isolation": mf.ISOLATIONS,
    "RunStatus": mf.RUN_STATUSES,
    "FilesStatus": mf.FILES_STATUSES,
    "RegionRole": rw.REGION_ROLES,
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
    """What in the TypeScript ``text`` disagrees with the contract, in words."""
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
            problems.append(f"{union} lacks {missing!r}, which the contract defines")
        for extra in sorted(ts - set(values)):
            problems.append(f"{union} has {extra!r}, which the contract does not define")
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


# interface -> the TypedDict it spells (field names, optionality, types)
TYPED = {
    "IManifest": mf.Manifest,
    "IManifestCell": mf.CellRecord,
    "IManifestWriter": mf.WriterRecord,
    "IManifestMpi": mf.MpiRecord,
    "IManifestSource": mf.SourceRecord,
    "IManifestError": mf.ErrorRecord,
    "ICellTime": mf.CellTime,
    "IAcceleratorNotes": mf.AcceleratorNotes,
}
# a manifest field whose TypeScript type is a union of the contract's words (FIELDS), or
# an open JSON object the interface spells with the keys it knows
SPELLED_AS = {
    "Backend": str,
    "Isolation": str,
    "RunStatus": str,
    "FilesStatus": str,
    "IMeasurement": mf.Measurement,
}


def _ts_fields(body: str) -> dict[str, tuple[bool, str]]:
    """``{field: (optional, TypeScript type)}`` of an interface body's own fields (not
    those of nested object types; comments and index signatures skipped)."""
    body = re.sub(r"/\*.*?\*/|//[^\n]*", "", body, flags=re.S)
    fields, depth, start = {}, 0, 0
    for i, c in enumerate(body):
        depth += {"{": 1, "(": 1, "}": -1, ")": -1}.get(c, 0)
        if c == ";" and depth == 0:
            m = re.fullmatch(r"\s*(\w+)(\??)\s*:\s*(.+?)\s*", body[start:i], re.S)
            if m:
                fields[m.group(1)] = (bool(m.group(2)), " ".join(m.group(3).split()))
            start = i + 1
    return fields


def _ts_type(hint: object) -> str:
    """How src/api/ spells a Python type of the manifest."""
    for ts, py in SPELLED_AS.items():
        if hint == py and py is not str:
            return ts
    for ts, td in TYPED.items():
        if hint is td:
            return ts
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_ts_type(a) for a in args)
    if origin is list:
        inner = _ts_type(args[0])
        return f"({inner})[]" if " | " in inner else f"{inner}[]"
    if origin is dict:
        return f"Record<{_ts_type(args[0])}, {_ts_type(args[1])}>"
    names = {str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}
    return names.get(hint, repr(hint))


def _same_type(ts: str, hint: object) -> bool:
    if ts in SPELLED_AS and SPELLED_AS[ts] is str:  # a union of words: FIELDS checks it
        return hint is str
    want = _ts_type(hint)
    split = lambda t: sorted(p.strip() for p in t.split(" | "))
    return ts == want or ("(" not in ts and split(ts) == split(want))


def typed_mismatches(text: str) -> list[str]:
    """Where an interface and its TypedDict disagree: a field only one side has, a field
    optional on one side only, or typed differently."""
    problems = []
    for interface, td in TYPED.items():
        body = _interface_body(text, interface)
        if body is None:
            problems.append(f"src/api/ has no interface {interface}")
            continue
        ts = _ts_fields(body)
        hints = typing.get_type_hints(td)
        for field in sorted(set(hints) - set(ts)):
            problems.append(f"{interface} lacks {field}, which manifest.{td.__name__} has")
        for field in sorted(set(ts) - set(hints)):
            problems.append(f"{interface} has {field}, which manifest.{td.__name__} lacks")
        for field in sorted(set(ts) & set(hints)):
            optional, ts_type = ts[field]
            if optional != (field in td.__optional_keys__):
                problems.append(
                    f"{interface}.{field} is {'optional' if optional else 'required'} in "
                    f"src/api/, not in manifest.{td.__name__}"
                )
            if not _same_type(ts_type, hints[field]):
                problems.append(
                    f"{interface}.{field} is typed {ts_type!r}, manifest.{td.__name__}'s "
                    f"as {_ts_type(hints[field])!r}"
                )
    return problems


def test_api_ts_matches_the_experiment_contract():
    text = _api_text()
    problems = contract_mismatches(text) + typed_mismatches(text)
    assert not problems, "src/api/ and the contract disagree:\n" + "\n".join(problems)


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


@pytest.mark.parametrize(
    "old, new, needle",
    [
        ("  python_executable?: string;\n", "", "IManifest lacks python_executable"),
        ("  run_s?: number | null;\n", "  run_s?: number | null;\n  bogus?: string;\n",
         "IManifest has bogus, which manifest.Manifest lacks"),
        ("  notebook?: string | null;", "  notebook: string | null;",
         "IManifest.notebook is required in src/api/"),
        ("  end_ns?: number | null;", "  end_ns?: number;", "IManifest.end_ns is typed 'number'"),
        ("  wait_s: number | null;", "  wait_s?: number | null;",
         "ICellTime.wait_s is optional in src/api/"),
        ("  execution_count?: number;", "  execution_count?: string;",
         "IManifestCell.execution_count is typed 'string'"),
        ("  errors?: (string | IManifestError)[];", "  errors?: string[];",
         "IManifest.errors is typed 'string[]'"),
    ],
)  # fmt: skip
def test_the_check_fails_on_a_changed_manifest_field(old, new, needle):
    text = _api_text()
    assert old in text, f"the self-test's anchor {old!r} is gone from src/api/"
    problems = typed_mismatches(text.replace(old, new, 1))
    assert any(needle in p for p in problems), problems
