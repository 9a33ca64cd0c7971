"""The site's downloads: the records as JSON lines, the matrix table as CSV and (when pyarrow is there) Parquet, and
the checkpoints' table as CSV when the run has checkpoint cases."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from hf_neuron.vocabulary.records import Record

__all__ = ["Download", "write_downloads"]


@dataclass(frozen=True)
class Download:
    """A file offered for download; ``href`` is relative to the site root."""

    label: str
    href: str
    size: int


def write_downloads(site: Path, records: Sequence[Record], table: pd.DataFrame,
                    checkpoints: pd.DataFrame | None = None) -> list[Download]:
    """Write the downloads under ``site/downloads`` and describe them: every record, the architectures' ``table``,
    and the ``checkpoints``' table (:func:`~hf_neuron.report.checkpoints.checkpoint_table`; None: the run has no
    checkpoint case, and an earlier build's file is removed)."""
    directory = site / "downloads"
    directory.mkdir(parents=True, exist_ok=True)
    ordered = sorted(records, key=lambda r: r["case_id"])
    (directory / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ordered), encoding="utf-8")
    table.to_csv(directory / "matrix.csv")
    files = [("Records (JSON lines)", "records.jsonl"), ("Table (CSV)", "matrix.csv")]
    try:
        table.to_parquet(directory / "matrix.parquet")
        files.append(("Table (Parquet)", "matrix.parquet"))
    except ImportError:  # no Parquet engine installed: the CSV carries the same table
        pass
    if checkpoints is not None:
        checkpoints.to_csv(directory / "checkpoints.csv")
        files.append(("Checkpoints (CSV)", "checkpoints.csv"))
    else:
        (directory / "checkpoints.csv").unlink(missing_ok=True)
    return [Download(label, f"downloads/{name}", (directory / name).stat().st_size) for label, name in files]
