"""The processor in a run's environment block: what its times and bfloat16 numerics were measured on."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hf_neuron.matrix.results import environment
from hf_neuron.vocabulary.records import CPU_ISA

_CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Platinum 8488C
flags\t\t: fpu sse2 avx avx2 fma avx512f avx512bw avx512_bf16 amx_tile amx_bf16

processor\t: 1
model name\t: some other line the reader does not take
flags\t\t: fpu
"""


def _cpuinfo(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "cpuinfo"
    path.write_text(text)
    return path


def _usable_cpus() -> int:
    return len(os.sched_getaffinity(0))


def test_the_first_processors_model_and_extensions_are_read(tmp_path: Path) -> None:
    found = environment.processor(_cpuinfo(tmp_path, _CPUINFO))
    assert found == environment.Processor("Intel(R) Xeon(R) Platinum 8488C", _usable_cpus(),
                                          "avx2 avx512f avx512_bf16 amx_bf16")
    assert found.cpu_isa is not None and found.cpu_isa.split() == list(CPU_ISA), "in CPU_ISA's order, not the flags'"


def test_a_processor_with_none_of_the_extensions_says_none(tmp_path: Path) -> None:
    found = environment.processor(_cpuinfo(tmp_path, "model name : Old\nflags : fpu sse2 avx\n"))
    assert (found.cpu_model, found.cpu_isa) == ("Old", "none")


@pytest.mark.parametrize("text", ["", "processor : 0\n", "garbage without colons\n\x00\xff"])
def test_a_system_that_does_not_say_gives_none_not_a_guess(tmp_path: Path, text: str) -> None:
    found = environment.processor(_cpuinfo(tmp_path, text))
    assert (found.cpu_model, found.cpu_isa) == (None, None)
    assert found.cpus == _usable_cpus()
    assert environment.processor(tmp_path / "absent") == found


def test_the_cpus_are_those_the_run_may_use_not_the_machines(tmp_path: Path) -> None:
    everything = os.sched_getaffinity(0)
    one = {min(everything)}
    os.sched_setaffinity(0, one)
    try:
        assert environment.processor(_cpuinfo(tmp_path, _CPUINFO)).cpus == 1
    finally:
        os.sched_setaffinity(0, everything)


def test_every_record_of_a_run_carries_the_processor() -> None:
    env = environment.collect()
    assert {"cpu_model", "cpus", "cpu_isa"} <= env.keys()
    assert env["cpus"] == _usable_cpus()
    if environment.CPUINFO.exists():
        assert env["cpu_isa"] is not None and set(env["cpu_isa"].split()) <= {*CPU_ISA, "none"}
