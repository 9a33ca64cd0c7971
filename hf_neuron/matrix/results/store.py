"""The results directory of a run: its manifest and its record files, written so that nothing finished is lost.

::

    results/
      run.json                          manifest: run id, selection, device (written when the run starts)
      <host>-<process>-<pid>.jsonl      records, one JSON line per case, one file per writing process

Each process appends only to a file it created itself (exclusively: a new process never reuses an old file), and
writes each record as one complete line with a single ``write`` of an ``O_APPEND`` descriptor, then ``fsync``.
A process killed mid-write can leave at most a truncated last line in its own file; readers skip it, and a
resumed run runs that case again. Shards and workers therefore never interleave partial lines.
"""

from __future__ import annotations

import dataclasses
import json
import os
import platform
import re
import secrets
import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hf_neuron.errors import InputError
from hf_neuron.vocabulary.jsonl import Lines, read_jsonl
from hf_neuron.vocabulary.records import Record, upgrade, validate_record

__all__ = [
    "MANIFEST_NAME",
    "Manifest",
    "RecordWriter",
    "new_run_id",
    "now_iso",
    "open_run",
    "read_manifest",
    "read_records",
    "write_manifest",
]

MANIFEST_NAME = "run.json"
_RECORD_SUFFIX = ".jsonl"
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def now_iso() -> str:
    """The current UTC time, ISO-8601 with milliseconds."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def new_run_id() -> str:
    """A fresh run id: UTC start time and a random suffix, e.g. ``20250101T120000Z-3f9a1c``."""
    return f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


class RecordWriter:
    """Appends records to this process's own file in ``directory``; the file is created on the first record."""

    def __init__(self, directory: Path, process: str) -> None:
        self._stem = _SAFE.sub("_", f"{platform.node()}-{process}-{os.getpid()}")
        self._directory = directory
        self._fd: int | None = None
        self._lock = threading.Lock()  # the watchdog thread writes too

    def _open(self) -> int:
        self._directory.mkdir(parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND
        for attempt in range(1000):
            name = self._stem + (f".{attempt}" if attempt else "") + _RECORD_SUFFIX
            try:
                return os.open(self._directory / name, flags, 0o644)
            except FileExistsError:
                continue
        raise RuntimeError(f"cannot create a new record file for {self._stem} in {self._directory}")

    def write(self, record: Mapping[str, Any]) -> None:
        """Append ``record`` (a matrix record, or another JSON object such as an upstream test's record) as one
        line and make it durable before returning."""
        data = (json.dumps(record, ensure_ascii=False, allow_nan=False) + "\n").encode()
        with self._lock:
            if self._fd is None:
                self._fd = self._open()
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view) :]
            os.fsync(self._fd)

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None


def read_records(directory: Path) -> list[Record]:
    """Every complete record in ``directory`` (its own ``*.jsonl`` files, read strictly: a truncated last line is
    skipped, any other bad line raises :class:`InputError`), in the current shape."""
    if not directory.is_dir():
        return []
    found: Lines[dict[str, Any]] = read_jsonl([directory], validate_record, strict=True, what="matrix record",
                                               recursive=False)
    return [upgrade(record) for record in found.records]


@dataclasses.dataclass(frozen=True)
class Manifest:
    """What a results directory holds: which run, which selection, on which device; a merge's, which directories it
    merged and the shards of the run it published without (``hf-neuron matrix merge --partial``)."""

    run_id: str
    created_at: str
    selection: dict[str, Any] | None
    device: str | None
    merged_from: tuple[str, ...] = ()
    missing_shards: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "merged_from": list(self.merged_from),
                "missing_shards": list(self.missing_shards)}


def read_manifest(directory: Path) -> Manifest | None:
    """The manifest of ``directory``, or None if there is none."""
    path = directory / MANIFEST_NAME
    if not path.is_file():
        return None
    try:
        raw = json.loads(path.read_text())
        return Manifest(
            run_id=raw["run_id"],
            created_at=raw["created_at"],
            selection=raw.get("selection"),
            device=raw.get("device"),
            merged_from=tuple(raw.get("merged_from", ())),
            missing_shards=tuple(raw.get("missing_shards", ())),
        )
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise InputError(f"{path}: not a run manifest ({exc}); was it edited?") from exc


def write_manifest(directory: Path, manifest: Manifest) -> None:
    """Write the manifest atomically (a reader sees the old one or the new one, never half)."""
    directory.mkdir(parents=True, exist_ok=True)
    staging = directory / f".{MANIFEST_NAME}.{os.getpid()}"
    staging.write_text(json.dumps(manifest.as_json(), indent=2) + "\n")
    os.replace(staging, directory / MANIFEST_NAME)


def open_run(
    directory: Path, *, resume: bool, run_id: str | None, selection: dict[str, Any], device: str
) -> tuple[Manifest, set[str]]:
    """Start a run in ``directory`` or, with ``resume``, continue the one there; return it and its recorded cases.

    Refuses to mix runs: an existing run needs ``resume`` and the same selection, device and run id.
    """
    manifest = read_manifest(directory)
    records = read_records(directory)
    if manifest is None:
        if records:
            raise InputError(
                f"{directory} holds {len(records)} records but no {MANIFEST_NAME}: it is not a results directory "
                "of `hf-neuron matrix run`; choose another --results directory"
            )
        manifest = Manifest(run_id or new_run_id(), now_iso(), selection, device)
        write_manifest(directory, manifest)
        return manifest, set()
    if not resume:
        raise InputError(
            f"{directory} already holds run {manifest.run_id} ({len(records)} records): pass --resume to continue "
            "it, or choose an empty --results directory"
        )
    wanted = {"selection": selection, "device": device, "run id": run_id or manifest.run_id}
    stored = {"selection": manifest.selection, "device": manifest.device, "run id": manifest.run_id}
    different = [key for key in wanted if wanted[key] != stored[key]]
    if different:
        details = "; ".join(f"{key}: was {stored[key]}, now {wanted[key]}" for key in different)
        raise InputError(
            f"--resume {directory}: run {manifest.run_id} was started with another {', '.join(different)} "
            f"({details}); resume it with the same options, or start a new run in another directory"
        )
    foreign = sorted({record.get("run_id") for record in records} - {manifest.run_id}, key=str)
    if foreign:
        raise InputError(f"{directory} holds records of other runs ({', '.join(map(str, foreign))}): clean it")
    return manifest, {record["case_id"] for record in records}
