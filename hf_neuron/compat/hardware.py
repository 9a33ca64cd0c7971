"""Hardware and prices (``compat/hardware.toml``): chips and GPUs (dense peaks, memory, bandwidth), the instance
families a checkpoint is sized and priced for (devices, instance, on-demand price), and the published measurements the
price-performance estimate is calibrated on; every value with the public source it was read from.

::

    [sources.trn2-arch]
    url = "https://..."                  # https only
    read = 2026-12-06                    # the date the values were read there
    what = "AWS Neuron docs, Trainium2 architecture"

    [chips.Trainium2]
    kind = "trainium"                    # or "gpu"
    bf16_dense_tflops = 667              # each value names its source in `sources`...
    memory_gib = 96
    sources = { bf16_dense_tflops = "trn2-arch", memory_gib = "trn2-arch" }
    unsourced = { fp8_dense_tflops = "why no public page gives it" }     # ...or is left out and says why

    [families.trn2]
    chip = "Trainium2"
    devices_per_chip = 4                 # logical NeuronCores at LNC=2 (1 for a GPU)
    instance = "trn2.48xlarge"           # optional, with chips_per_instance
    chips_per_instance = 16
    usd_per_hour = 12.34                 # optional (on-demand), with region; else in unsourced

    [[measurements]]                     # a published batch-1 inference measurement
    model = "..."; checkpoint = "<compat/checkpoints.toml id>"; family = "trn2"; devices = 64
    weights_dtype = "bfloat16"; input_tokens = 10000; output_tokens = 1500; ttft_ms = 575.6; tpot_ms = 19.8
    source = "<a [sources] name>"

:func:`load_hardware` reads and checks the file (every rule of its header); a broken rule raises
:class:`~hf_neuron.vocabulary.datafiles.DataFileError` naming the table, the key and what to do.
:func:`trainium_families` are the families whose NeuronCores ``hf-neuron check`` plans.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from hf_neuron.compat.files import COMPAT_DIR, read_toml
from hf_neuron.vocabulary.datafiles import DataFileError

__all__ = ["CHIP_VALUES", "FAMILY_VALUES", "GIB", "HARDWARE_PATH", "Chip", "Family", "Hardware", "Measurement",
           "Source", "load_hardware", "trainium_families"]

HARDWARE_PATH = COMPAT_DIR / "hardware.toml"
#: Bytes in a GiB (memory is given in GiB).
GIB = 1 << 30

ChipKind = Literal["trainium", "gpu"]
WeightsDtype = Literal["bfloat16", "float8"]
#: The values of a chip, each given with its source or listed as unsourced.
CHIP_VALUES = ("bf16_dense_tflops", "fp8_dense_tflops", "memory_gib", "bandwidth_tb_s")
#: The sourced values of a family (optional: given with their source, or unsourced, or, for an instance, absent).
FAMILY_VALUES = ("chips_per_instance", "usd_per_hour")
_KINDS = ("trainium", "gpu")
_DTYPES = ("bfloat16", "float8")
_SOURCE_KEYS = ("url", "read", "what")
_CHIP_KEYS = {"kind", *CHIP_VALUES, "sources", "unsourced"}
_FAMILY_KEYS = {"chip", "devices_per_chip", "instance", "region", *FAMILY_VALUES, "sources", "unsourced"}
_MEASUREMENT_NUMBERS = ("devices", "input_tokens", "output_tokens", "ttft_ms", "tpot_ms")
_MEASUREMENT_KEYS = {"model", "checkpoint", "family", "weights_dtype", *_MEASUREMENT_NUMBERS, "source", "note"}


@dataclasses.dataclass(frozen=True)
class Source:
    """A public page values were read from: its ``url``, the date it was ``read``, and ``what`` it is."""

    name: str
    url: str
    read: datetime.date
    what: str


@dataclasses.dataclass(frozen=True)
class Chip:
    """A chip or GPU: dense BF16 and FP8 peaks (TFLOPS), memory (GiB) and bandwidth (TB/s); a value no public page
    gives is None, and ``unsourced`` says why; ``sources`` names the source of each value given."""

    name: str
    kind: ChipKind
    bf16_dense_tflops: float | None
    fp8_dense_tflops: float | None
    memory_gib: float | None
    bandwidth_tb_s: float | None
    sources: Mapping[str, str]
    unsourced: Mapping[str, str]


@dataclasses.dataclass(frozen=True)
class Family:
    """An instance family: its ``chip``, the devices a job uses on one chip (``devices_per_chip``: logical NeuronCores
    at LNC=2, or 1 GPU), its instance and that instance's chips (None: not in the facts), its on-demand price in US
    dollars an hour and the region (None: not sourced; ``unsourced`` says why)."""

    name: str
    chip: Chip
    devices_per_chip: int
    instance: str | None
    chips_per_instance: int | None
    usd_per_hour: float | None
    region: str | None
    sources: Mapping[str, str]
    unsourced: Mapping[str, str]

    @property
    def device_bytes(self) -> int:
        """The memory of one device (a logical NeuronCore: its chip's divided among them); 0 when not sourced."""
        return int((self.chip.memory_gib or 0) * GIB) // self.devices_per_chip

    @property
    def devices_per_instance(self) -> int | None:
        return None if self.chips_per_instance is None else self.chips_per_instance * self.devices_per_chip


@dataclasses.dataclass(frozen=True)
class Measurement:
    """A published batch-1 inference measurement: ``model`` as published, the catalogued ``checkpoint`` planned for
    it, the ``family`` and ``devices`` it ran on, its weights' dtype, its input and output tokens, its time to first
    token and time per output token (milliseconds), and its ``source``."""

    model: str
    checkpoint: str
    family: str
    devices: int
    weights_dtype: WeightsDtype
    input_tokens: int
    output_tokens: int
    ttft_ms: float
    tpot_ms: float
    source: str
    note: str | None = None


@dataclasses.dataclass(frozen=True)
class Hardware:
    """Everything ``compat/hardware.toml`` holds, checked."""

    sources: Mapping[str, Source]
    chips: Mapping[str, Chip]
    families: Mapping[str, Family]
    measurements: tuple[Measurement, ...]


def _table(path: Path, document: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    found = document.get(key, {})
    if not isinstance(found, dict) or not all(isinstance(value, dict) for value in found.values()):
        raise DataFileError(path, f"[{key}.<name>] tables are expected", table=key)
    return found


def _positive(path: Path, table: str, key: str, value: Any, *, whole: bool = False) -> float:
    """``value`` if it is a positive number (a whole one when ``whole``), else :class:`DataFileError`."""
    if (isinstance(value, bool) or not isinstance(value, (int, float)) or (whole and not isinstance(value, int))
            or not value > 0):
        what = "a positive whole number" if whole else "a positive number"
        raise DataFileError(path, f"must be {what}, not {value!r}", table=table, key=key)
    return float(value)


def _text(path: Path, table: str, key: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise DataFileError(path, f"must be a non-empty text, not {value!r}", table=table, key=key)
    return value


def _unknown(path: Path, table: str, raw: Mapping[str, Any], allowed: set[str]) -> None:
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise DataFileError(path, f"unknown keys {unknown}; the keys are {sorted(allowed)}", table=table)


def _sourced(path: Path, table: str, raw: Mapping[str, Any], values: tuple[str, ...], sources: Mapping[str, Source],
             *, optional: frozenset[str] = frozenset()) -> tuple[dict[str, str], dict[str, str]]:
    """The ``sources`` and ``unsourced`` of a table, checked: each of ``values`` given with a known source, or
    unsourced with why (or, for ``optional``, absent from both), never both."""
    cited, unsourced = raw.get("sources", {}), raw.get("unsourced", {})
    for key, found in (("sources", cited), ("unsourced", unsourced)):
        if not isinstance(found, dict) or not all(isinstance(v, str) and v.strip() for v in found.values()):
            raise DataFileError(path, "must be a table of texts ({ value = \"...\" })", table=table, key=key)
        stray = sorted(set(found) - set(values))
        if stray:
            raise DataFileError(path, f"names {stray}, which are not values of this table ({', '.join(values)})",
                                table=table, key=key)
    for value in values:
        given, has_source, said = value in raw, value in cited, value in unsourced
        if given and said:
            raise DataFileError(path, "is given and listed as unsourced: keep one", table=table, key=value)
        if given and not has_source:
            raise DataFileError(path, "has no source: name one in `sources` (a [sources] table), or leave the value "
                                      "out and say why in `unsourced`", table=table, key=value)
        if has_source and not given:
            raise DataFileError(path, "has a source but no value", table=table, key=value)
        if not given and not said and value not in optional:
            raise DataFileError(path, "missing: give it with its source, or list it in `unsourced` with why "
                                      "(never a guess)", table=table, key=value)
    for name in cited.values():
        if name not in sources:
            raise DataFileError(path, f"cites {name!r}, which is no [sources] table", table=table, key="sources")
    return dict(cited), dict(unsourced)


def _source(path: Path, name: str, raw: Mapping[str, Any]) -> Source:
    table = f"sources.{name}"
    _unknown(path, table, raw, set(_SOURCE_KEYS))
    for key in _SOURCE_KEYS:
        if key not in raw:
            raise DataFileError(path, "missing", table=table, key=key)
    url = _text(path, table, "url", raw["url"])
    if not url.startswith("https://"):
        raise DataFileError(path, f"must be an https:// address, not {url!r}", table=table, key="url")
    if not isinstance(raw["read"], datetime.date) or isinstance(raw["read"], datetime.datetime):
        raise DataFileError(path, f"must be a TOML date (2026-12-06), not {raw['read']!r}", table=table, key="read")
    return Source(name, url, raw["read"], _text(path, table, "what", raw["what"]))


def _chip(path: Path, name: str, raw: Mapping[str, Any], sources: Mapping[str, Source]) -> Chip:
    table = f"chips.{name}"
    _unknown(path, table, raw, _CHIP_KEYS)
    if raw.get("kind") not in _KINDS:
        raise DataFileError(path, f"must be one of {list(_KINDS)}, not {raw.get('kind')!r}", table=table, key="kind")
    cited, unsourced = _sourced(path, table, raw, CHIP_VALUES, sources)
    values = {key: _positive(path, table, key, raw[key]) if key in raw else None for key in CHIP_VALUES}
    return Chip(name, raw["kind"], **values, sources=cited, unsourced=unsourced)


def _family(path: Path, name: str, raw: Mapping[str, Any], chips: Mapping[str, Chip],
            sources: Mapping[str, Source]) -> Family:
    table = f"families.{name}"
    _unknown(path, table, raw, _FAMILY_KEYS)
    chip = str(raw.get("chip"))
    if chip not in chips:
        raise DataFileError(path, f"must name a [chips] table ({', '.join(chips)}), not {chip!r}", table=table,
                            key="chip")
    devices = int(_positive(path, table, "devices_per_chip", raw.get("devices_per_chip"), whole=True))
    if chips[chip].memory_gib is None:
        raise DataFileError(path, f"its chip {chip} has no memory_gib: a family's devices are placed by it (a "
                                  "chip without it can be listed, not used by a family)", table=table, key="chip")
    if ("instance" in raw) != ("chips_per_instance" in raw):
        raise DataFileError(path, "give instance and chips_per_instance together", table=table)
    if ("usd_per_hour" in raw) != ("region" in raw):
        raise DataFileError(path, "give usd_per_hour and region together", table=table)
    if "usd_per_hour" in raw and "instance" not in raw:
        raise DataFileError(path, "a price is an instance's: give instance and chips_per_instance", table=table)
    cited, unsourced = _sourced(path, table, raw, FAMILY_VALUES, sources, optional=frozenset({"chips_per_instance"}))
    return Family(
        name, chips[chip], devices,
        instance=_text(path, table, "instance", raw["instance"]) if "instance" in raw else None,
        chips_per_instance=int(_positive(path, table, "chips_per_instance", raw["chips_per_instance"], whole=True))
        if "chips_per_instance" in raw else None,
        usd_per_hour=_positive(path, table, "usd_per_hour", raw["usd_per_hour"]) if "usd_per_hour" in raw else None,
        region=_text(path, table, "region", raw["region"]) if "region" in raw else None,
        sources=cited, unsourced=unsourced)


def _measurement(path: Path, number: int, raw: Any, families: Mapping[str, Family],
                 sources: Mapping[str, Source]) -> Measurement:
    table = f"[[measurements]] #{number}"
    if not isinstance(raw, dict):
        raise DataFileError(path, "must be a table", table=table)
    _unknown(path, table, raw, _MEASUREMENT_KEYS)
    for key in _MEASUREMENT_KEYS - {"note"}:
        if key not in raw:
            raise DataFileError(path, "missing", table=table, key=key)
    if raw["family"] not in families:
        raise DataFileError(path, f"must name a [families] table ({', '.join(families)}), not {raw['family']!r}",
                            table=table, key="family")
    if raw["source"] not in sources:
        raise DataFileError(path, f"must name a [sources] table, not {raw['source']!r}", table=table, key="source")
    if raw["weights_dtype"] not in _DTYPES:
        raise DataFileError(path, f"must be one of {list(_DTYPES)}, not {raw['weights_dtype']!r}", table=table,
                            key="weights_dtype")
    numbers = {key: _positive(path, table, key, raw[key], whole=key in ("devices", "input_tokens", "output_tokens"))
               for key in _MEASUREMENT_NUMBERS}
    return Measurement(
        model=_text(path, table, "model", raw["model"]), checkpoint=_text(path, table, "checkpoint", raw["checkpoint"]),
        family=raw["family"], devices=int(numbers["devices"]), weights_dtype=raw["weights_dtype"],
        input_tokens=int(numbers["input_tokens"]), output_tokens=int(numbers["output_tokens"]),
        ttft_ms=numbers["ttft_ms"], tpot_ms=numbers["tpot_ms"], source=raw["source"],
        note=_text(path, table, "note", raw["note"]) if "note" in raw else None)


def parse(path: Path, document: Mapping[str, Any]) -> Hardware:
    """The :class:`Hardware` of a hardware file's TOML ``document``, checked (:class:`DataFileError` naming the
    problem)."""
    _unknown(path, "(top level)", document, {"sources", "chips", "families", "measurements"})
    sources = {name: _source(path, name, raw) for name, raw in _table(path, document, "sources").items()}
    chips = {name: _chip(path, name, raw, sources) for name, raw in _table(path, document, "chips").items()}
    families = {name: _family(path, name, raw, chips, sources)
                for name, raw in _table(path, document, "families").items()}
    if not any(family.chip.kind == "trainium" for family in families.values()):
        raise DataFileError(path, "no Trainium family: give at least one [families.<name>] of a trainium chip")
    raw_measurements = document.get("measurements", [])
    if not isinstance(raw_measurements, list):
        raise DataFileError(path, "[[measurements]] tables are expected", key="measurements")
    measurements = tuple(_measurement(path, number, raw, families, sources)
                         for number, raw in enumerate(raw_measurements, start=1))
    cited = {name for chip in chips.values() for name in chip.sources.values()}
    cited |= {name for family in families.values() for name in family.sources.values()}
    cited |= {measurement.source for measurement in measurements}
    idle = sorted(set(sources) - cited)
    if idle:
        raise DataFileError(path, f"sources no value cites: {idle}; remove them or cite them", table="sources")
    return Hardware(sources, chips, families, measurements)


@functools.cache
def load_hardware(path: Path = HARDWARE_PATH) -> Hardware:
    """``compat/hardware.toml`` (or ``path``), read and checked once per process."""
    return parse(path, read_toml(path))


def trainium_families(path: Path = HARDWARE_PATH) -> tuple[Family, ...]:
    """The Trainium families, in file order: those whose NeuronCores ``hf-neuron check`` plans."""
    return tuple(family for family in load_hardware(path).families.values() if family.chip.kind == "trainium")
