"""The CPUs a run may use, defined once (hf_neuron/cpus.py): its affinity, not the machine's count, recorded as
``env.cpus`` and shared between the matrix's workers as ``OMP_NUM_THREADS``."""

from __future__ import annotations

import os

import pytest

from hf_neuron import cpus
from hf_neuron.matrix import runner
from hf_neuron.matrix.results import environment


@pytest.fixture
def four_of_sixty_four(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process allowed 4 CPUs of a 64-CPU machine (a container's CPU set, ``taskset``)."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.setattr(os, "cpu_count", lambda: 64)


@pytest.mark.usefixtures("four_of_sixty_four")
def test_usable_cpus_are_the_processs_affinity_and_workers_share_them() -> None:
    assert cpus.usable() == 4
    assert [cpus.per_worker(workers) for workers in (1, 2, 3, 4, 8)] == [4, 2, 1, 1, 1]
    assert cpus.per_worker(0) == 4  # no worker count: one worker


def test_without_an_affinity_the_machines_count_serves(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(os, "sched_getaffinity")
    monkeypatch.setattr(os, "cpu_count", lambda: 6)
    assert (cpus.usable(), cpus.per_worker(4)) == (6, 1)
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert cpus.usable() == 1


@pytest.mark.usefixtures("four_of_sixty_four")
def test_the_matrix_workers_threads_and_the_recorded_cpus_are_the_affinitys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    runner._share_cores(2)
    assert os.environ["OMP_NUM_THREADS"] == "2"  # 4 CPUs between 2 workers, not 64
    assert environment.processor().cpus == 4


@pytest.mark.usefixtures("four_of_sixty_four")
def test_a_users_thread_count_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    runner._share_cores(2)
    assert os.environ["OMP_NUM_THREADS"] == "3"
