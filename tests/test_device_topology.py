"""Which devices a process sees: NEURON_RT_VISIBLE_CORES, and one core per rank under torchrun."""

from __future__ import annotations

import pytest
from _helpers import run

from hf_neuron.device.topology import Topology, parse_core_list, topology
from hf_neuron.settings import SettingError


def test_core_lists() -> None:
    assert parse_core_list("V", "0-3", 8) == [0, 1, 2, 3]
    assert parse_core_list("V", "1,4,6", 8) == [1, 4, 6]
    assert parse_core_list("V", "2", 8) == [2]
    for bad in ("4-9", "x", "1,1", "", "3-1"):
        with pytest.raises(SettingError, match="is not a list of distinct cores between 0 and 7"):
            parse_core_list("V", bad, 8)


def test_topology_rules() -> None:
    assert topology(4, {}) == Topology(count=4, current=0)
    assert topology(8, {"NEURON_RT_VISIBLE_CORES": "0-2"}) == Topology(count=3, current=0)
    assert topology(4, {"LOCAL_WORLD_SIZE": "2", "LOCAL_RANK": "1"}) == Topology(count=2, current=1)
    with pytest.raises(SettingError, match="LOCAL_WORLD_SIZE=4 processes need as many neuron cores, but this "
                                           "process sees 2"):
        topology(2, {"LOCAL_WORLD_SIZE": "4", "LOCAL_RANK": "0"})


def test_torchrun_rank_sees_its_core_in_a_real_process() -> None:
    result = run(
        "import torch; print(torch.neuron.device_count(), torch.neuron.current_device(), "
        "torch.ones(1, device='neuron').device)",
        {"LOCAL_WORLD_SIZE": "2", "LOCAL_RANK": "1", "HF_NEURON_EMULATOR_DEVICES": "4"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["2", "1", "neuron:1"]
