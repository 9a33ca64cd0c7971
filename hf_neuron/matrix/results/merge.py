"""Merging the results directories of one run's shards into one results directory.

Records are deduplicated by ``case_id``: two records of a case that say the same (outcome, cpu outcome, failure
fingerprint) are one result seen twice, and the later one is kept; records that disagree are a conflict, which is
an error unless ``on_conflict="latest"`` keeps the later one. Directories of different runs, or shards of one run
started with different selections, are refused; shards missing from ``1/N .. N/N`` are reported
(:func:`missing_shards`), and the merged manifest names them (a run published without them is partial).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hf_neuron.errors import InputError
from hf_neuron.matrix.results.store import (
    Manifest,
    read_manifest,
    read_records,
    write_manifest,
)
from hf_neuron.vocabulary.records import ConflictPolicy, Record, one_each

__all__ = ["Merged", "merge", "missing_shards", "write_merged"]

MERGED_RECORDS = "records.jsonl"


@dataclasses.dataclass(frozen=True)
class Merged:
    """The merged run: its manifest, one record per case (sorted by case_id), and what merging found."""

    manifest: Manifest
    records: tuple[Record, ...]
    duplicates: int
    conflicts: tuple[str, ...]
    missing_shards: tuple[str, ...]


def _describe(records: list[Record]) -> str:
    return ", ".join(f"{r['outcome']} at {r['finished_at']}" for r in records)


def _manifests(dirs: Sequence[Path]) -> list[Manifest]:
    manifests = []
    for directory in dirs:
        manifest = read_manifest(directory)
        if manifest is None:
            raise InputError(f"{directory} is not a results directory of `hf-neuron matrix run` (no run.json)")
        manifests.append(manifest)
    run_ids = sorted({m.run_id for m in manifests})
    if len(run_ids) > 1:
        raise InputError(
            f"the directories hold different runs ({', '.join(run_ids)}): merge the shards of one run "
            "(give every shard the same --run-id)"
        )
    return manifests


def _common(manifests: list[Manifest]) -> tuple[dict[str, Any] | None, str | None, tuple[str, ...]]:
    """The selection without its shard, the device, and the shards missing from 1/N..N/N."""
    unsharded = [None if m.selection is None else {**m.selection, "shard": None} for m in manifests]
    if any(selection != unsharded[0] for selection in unsharded):
        raise InputError(f"the shards of run {manifests[0].run_id} were started with different selections: "
                               + "; ".join(json.dumps(s) for s in unsharded))
    devices = {m.device for m in manifests}
    if len(devices) > 1:
        raise InputError(f"the shards of run {manifests[0].run_id} ran on different devices: {devices}")
    return unsharded[0], devices.pop(), _missing(manifests)


def _missing(manifests: Sequence[Manifest]) -> tuple[str, ...]:
    """The shards of ``1/N .. N/N`` none of ``manifests`` holds (a merged one holds those it merged, less those it
    names missing)."""
    shards = {m.selection["shard"] for m in manifests if m.selection and m.selection.get("shard")}
    shards |= {shard for m in manifests for shard in m.missing_shards}
    counts = {int(shard.split("/")[1]) for shard in shards}
    if len(counts) > 1:
        raise InputError(f"the directories hold shards of different splits: {', '.join(sorted(shards))}")
    if not counts:
        return ()
    (count,) = counts
    held = {m.selection["shard"] for m in manifests if m.selection and m.selection.get("shard")}
    held |= {f"{i}/{count}" for m in manifests if m.merged_from for i in range(1, count + 1)} - {
        shard for m in manifests for shard in m.missing_shards}
    return tuple(f"{i}/{count}" for i in range(1, count + 1) if f"{i}/{count}" not in held)


def missing_shards(dirs: Sequence[Path]) -> tuple[str, ...]:
    """The shards of the run in ``dirs`` (its results directories; a directory or file without a manifest says
    nothing) that are not there: ``1/N .. N/N`` less those the directories hold, and those a partial merge among them
    was published without."""
    return _missing([m for d in dirs if (m := read_manifest(d)) is not None])


def merge(dirs: Sequence[Path], on_conflict: ConflictPolicy = "error") -> Merged:
    """Merge the results directories ``dirs`` of one run."""
    if not dirs:
        raise InputError("give at least one results directory to merge")
    manifests = _manifests(dirs)
    selection, device, missing = _common(manifests)
    each = one_each((record for directory in dirs for record in read_records(directory)),
                    key=lambda record: record["case_id"])
    kept = [each.kept[case_id] for case_id in sorted(each.kept, key=str)]
    conflicts = [f"{case_id}: {_describe(each.conflicts[case_id])}" for case_id in sorted(each.conflicts, key=str)]
    duplicates = each.duplicates
    if conflicts and on_conflict == "error":
        shown = "\n  ".join(conflicts[:20])
        raise InputError(
            f"{len(conflicts)} case(s) have records that disagree:\n  {shown}\n"
            "rerun them, or pass --on-conflict latest to keep each case's latest record"
        )
    manifest = Manifest(
        run_id=manifests[0].run_id,
        created_at=min(m.created_at for m in manifests),
        selection=selection,
        device=device,
        merged_from=tuple(str(d) for d in dirs),
        missing_shards=missing,
    )
    return Merged(manifest, tuple(kept), duplicates, tuple(conflicts), missing)


def write_merged(merged: Merged, out: Path) -> None:
    """Write ``merged`` as a results directory ``out`` (which must not hold a run yet)."""
    if read_manifest(out) is not None or read_records(out):
        raise InputError(f"{out} already holds a run: merge into a new directory")
    out.mkdir(parents=True, exist_ok=True)
    staging = out / f".{MERGED_RECORDS}.{os.getpid()}"
    staging.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in merged.records))
    os.replace(staging, out / MERGED_RECORDS)
    write_manifest(out, merged.manifest)
