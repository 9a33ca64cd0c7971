"""``compat/hardware.toml``: every value of a chip or a family comes with its public source or says why it has none,
and each rule of the file's header is held to the input that breaks it."""

from __future__ import annotations

import tomllib
from typing import Any

import pytest

from hf_neuron.compat.hardware import CHIP_VALUES, HARDWARE_PATH, load_hardware, parse, trainium_families
from hf_neuron.errors import InputError

_SOURCE = 'url = "https://example.com/spec"\nread = 2026-12-06\nwhat = "a spec page"\n'
_CHIP = ('kind = "trainium"\nbf16_dense_tflops = 667\nfp8_dense_tflops = 1299\nmemory_gib = 96\nbandwidth_tb_s = 2.9\n'
         'sources = { bf16_dense_tflops = "spec", fp8_dense_tflops = "spec", memory_gib = "spec", '
         'bandwidth_tb_s = "spec" }\n')
_FAMILY = 'chip = "T2"\ndevices_per_chip = 4\nunsourced = { usd_per_hour = "no public price" }\n'


def _document(source: str = _SOURCE, chip: str = _CHIP, family: str = _FAMILY, extra: str = "") -> dict[str, Any]:
    return tomllib.loads(f"[sources.spec]\n{source}\n[chips.T2]\n{chip}\n[families.trn2]\n{family}\n{extra}")


def test_a_well_formed_file_is_read() -> None:
    found = parse(HARDWARE_PATH, _document())
    trn2 = found.families["trn2"]
    assert (trn2.chip.name, trn2.devices_per_chip, trn2.device_bytes, trn2.usd_per_hour) == ("T2", 4, 24 << 30, None)
    assert trn2.unsourced == {"usd_per_hour": "no public price"}


@pytest.mark.parametrize(("document", "message"), [
    (_document(chip=_CHIP.replace("sources = { bf16_dense_tflops = \"spec\", ", "sources = { ")),
     r"\[chips.T2\] bf16_dense_tflops: has no source"),
    (_document(chip=_CHIP.replace("fp8_dense_tflops = 1299\n", "").replace('fp8_dense_tflops = "spec", ', "")),
     r"fp8_dense_tflops: missing: give it with its source, or list it in `unsourced`"),
    (_document(chip=_CHIP + 'unsourced = { memory_gib = "why" }\n'), r"memory_gib: is given and listed as unsourced"),
    (_document(chip=_CHIP.replace('memory_gib = "spec"', 'memory_gib = "nowhere"')),
     r"cites 'nowhere', which is no \[sources\] table"),
    (_document(chip=_CHIP.replace("memory_gib = 96\n", "").replace('memory_gib = "spec", ', "")
               + 'unsourced = { memory_gib = "why" }\n'),
     r"its chip T2 has no memory_gib: a family.s devices are placed by it"),
    (_document(chip=_CHIP.replace("bandwidth_tb_s = 2.9", "bandwidth_tb_s = 0")),
     r"bandwidth_tb_s: must be a positive number, not 0"),
    (_document(chip=_CHIP.replace('"trainium"', '"tpu"')), r"kind: must be one of \['trainium', 'gpu'\]"),
    (_document(source=_SOURCE.replace("https://", "http://")), r"url: must be an https:// address"),
    (_document(source=_SOURCE.replace("2026-12-06", '"December"')), r"read: must be a TOML date"),
    (_document(extra="[sources.idle]\n" + _SOURCE), r"sources no value cites: \['idle'\]"),
    (_document(family=_FAMILY.replace('unsourced = { usd_per_hour = "no public price" }\n', "")),
     r"\[families.trn2\] usd_per_hour: missing"),
    (_document(family=_FAMILY + 'instance = "trn2.48xlarge"\n'), r"give instance and chips_per_instance together"),
    (_document(family=_FAMILY.replace("unsourced", "#") + 'instance = "x"\nchips_per_instance = 16\n'
               "usd_per_hour = 1.0\nsources = { usd_per_hour = \"spec\", chips_per_instance = \"spec\" }\n"),
     r"give usd_per_hour and region together"),
    (_document(family=_FAMILY.replace('"T2"', '"T9"')), r"chip: must name a \[chips\] table"),
    (_document(family=_FAMILY + "colour = 1\n"), r"unknown keys \['colour'\]"),
    (_document(chip=_CHIP.replace('"trainium"', '"gpu"')), r"no Trainium family"),
    (_document(extra='[[measurements]]\nmodel = "m"\ncheckpoint = "c"\nfamily = "trn9"\ndevices = 1\n'
                     'weights_dtype = "bfloat16"\ninput_tokens = 1\noutput_tokens = 1\nttft_ms = 1\ntpot_ms = 1\n'
                     'source = "spec"\n'), r"family: must name a \[families\] table"),
])
def test_the_rules_of_the_file_are_checked(document: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse(HARDWARE_PATH, document)


def test_the_repository_file_holds_sourced_facts() -> None:
    found = load_hardware()
    assert [family.name for family in trainium_families()] == ["trn2", "trn3"]
    for chip in found.chips.values():
        assert set(chip.sources) | set(chip.unsourced) == set(CHIP_VALUES)
        assert all(found.sources[name].url.startswith("https://") for name in chip.sources.values())
    priced = {name: family.usd_per_hour for name, family in found.families.items()}
    assert priced["trn2"] is None and "usd_per_hour" in found.families["trn2"].unsourced  # no public price was found
    assert priced["h100"] == 55.04 and found.families["h100"].region == "us-east-1"
    from hf_neuron.compat.checkpoints import load_checkpoints

    catalogued = {entry.id for entry in load_checkpoints()}
    assert all(measurement.checkpoint in catalogued for measurement in found.measurements)
    assert {(m.model, m.family) for m in found.measurements} >= {
        ("meta-llama/Llama-3.3-70B-Instruct", "trn2"), ("meta-llama/Llama-3.1-405B-Instruct", "trn2"),
        ("meta-llama/Llama-3.3-70B-Instruct", "h100")}
