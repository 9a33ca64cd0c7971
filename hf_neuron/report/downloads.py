"""The site's downloads: the records as JSON lines, the matrix table as CSV and (when pyarrow is there) Parquet."""

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


def write_downloads(site: Path, records: Sequence[Record], table: pd.DataFrame) -> list[Download]:
    """Write the downloads under ``site/downloads`` and describe them."""
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
    return [Download(label, f"downloads/{name}", (directory / name).stat().st_size) for label, name in files]
