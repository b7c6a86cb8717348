"""Downloads as generators of byte chunks, so nothing is built in memory: the OTF2 archive
as a .zip, a file as is, and the trace as Chrome trace-event JSON (Perfetto, chrome://tracing).

The Perfetto export is streamed and uncapped: one complete ("X") event per call, about
110 bytes each, written location by location from the index's raw call table.

``download`` chooses what GET download streams for an experiment.
"""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from scorep_kernel import experiment as ex
from scorep_kernel import manifest as mf

from ..domain_errors import BadParameter, NotFound
from ..paths import archive_files
from .experiment_reads import ExperimentReads

CHUNK = 1 << 20
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def file_stem(manifest: mf.Manifest) -> str:
    """The run's id as a file name: a download's, a suggested filter's."""
    return _SAFE_NAME.sub("_", manifest["id"]) or "experiment"


@dataclass
class Download:
    """A download to stream: its chunks (read in a thread, one ``next`` at a time), the
    file name the browser saves it under, its content type and, when known, its length."""

    chunks: Generator[bytes, None, None]
    filename: str
    content_type: str
    length: int | None = None


async def download(reads: ExperimentReads, path: str | None, what: str | None) -> Download:
    """What to stream for ``what`` = otf2 (a .zip), cubex or perfetto."""
    exp, manifest = await reads.open(path)
    stem = file_stem(manifest)
    if what == "otf2":
        files = await reads.in_thread(archive_files, exp)
        if not any(name == ex.OTF2_ANCHOR for name, _ in files):
            raise NotFound("this experiment has no OTF2 trace to download")
        return Download(zip_stream(files, stem), f"{stem}-otf2.zip", "application/zip")
    if what == "cubex":
        cubex = await reads.in_thread(reads.cubex_identity, exp)
        if cubex is None:
            raise NotFound("this experiment has no profile.cubex to download")
        file, (_mtime, size) = cubex
        return Download(file_stream(file), f"{stem}.cubex", "application/x-tar", size)
    if what == "perfetto":
        index = await reads.index(exp, manifest)
        return Download(
            perfetto_stream(index, manifest["id"]),
            f"{stem}.perfetto.json",
            "application/json",
        )
    raise BadParameter(f"what={what!r}: choose otf2, cubex or perfetto")


class _Sink:
    """A write-only, unseekable file: zipfile then writes data descriptors and never seeks
    back, and we hand out whatever it wrote so far."""

    def __init__(self):
        self._parts: list[bytes] = []

    def write(self, data: bytes, /) -> int:
        self._parts.append(bytes(data))
        return len(data)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def take(self) -> bytes:
        out = b"".join(self._parts)
        self._parts.clear()
        return out


def zip_stream(files: list[tuple[str, Path]], prefix: str) -> Generator[bytes, None, None]:
    """A zip of ``files`` ([(name in archive, path)]) under the folder ``prefix``."""
    sink = _Sink()
    with zipfile.ZipFile(sink, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for name, path in files:
            info = zipfile.ZipInfo.from_file(path, f"{prefix}/{name}")
            info.compress_type = zipfile.ZIP_DEFLATED
            with open(path, "rb") as src, zf.open(info, "w", force_zip64=True) as dst:
                while True:
                    block = src.read(CHUNK)
                    if not block:
                        break
                    dst.write(block)
                    out = sink.take()
                    if out:
                        yield out
            out = sink.take()
            if out:
                yield out
    yield sink.take()  # the central directory, written on close


def file_stream(path: Path) -> Generator[bytes, None, None]:
    with open(path, "rb") as f:
        while True:
            block = f.read(CHUNK)
            if not block:
                return
            yield block


def perfetto_stream(index, run_name: str, batch: int = 50_000) -> Generator[bytes, None, None]:
    """Chrome trace-event JSON from a loaded trace index (times in µs, ns precision)."""
    regions = index.regions
    names = {int(k): json.dumps(v.get("name", "")) for k, v in regions.items()}
    cats = {int(k): json.dumps(v.get("group", "") or "python") for k, v in regions.items()}
    no_cat = json.dumps("python")
    head = {
        "displayTimeUnit": "ns",
        "otherData": {"experiment": run_name, "origin_epoch_ns": index.meta.get("origin_epoch_ns")},
    }
    yield (json.dumps(head)[:-1] + ', "traceEvents": [\n').encode()
    meta = [{"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": run_name}}]
    for loc in index.locations:
        meta.append(
            {
                "name": "thread_name",
                "ph": "M",
                "pid": 1,
                "tid": loc["id"],
                "args": {"name": loc["name"]},
            }
        )
    yield ",\n".join(json.dumps(m) for m in meta).encode()
    for loc in index.locations:
        i = loc["id"]
        n_raw = int(index.array(f"L{i}.ptr")[0][-1])
        start, end = index.array(f"L{i}.start"), index.array(f"L{i}.end")
        region = index.array(f"L{i}.region")
        for lo in range(0, n_raw, batch):
            hi = min(lo + batch, n_raw)
            s = np.asarray(start[lo:hi])
            d = np.asarray(end[lo:hi]) - s
            lines = [
                f'{{"name":{names.get(r) or json.dumps(f"region {r}")},'
                f'"cat":{cats.get(r) or no_cat},"ph":"X","pid":1,"tid":{i},'
                f'"ts":{ts / 1000:.3f},"dur":{du / 1000:.3f}}}'
                for ts, du, r in zip(s.tolist(), d.tolist(), region[lo:hi].tolist())
            ]
            yield (",\n" + ",\n".join(lines)).encode()
    yield b"\n]}\n"
