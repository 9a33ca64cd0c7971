"""``hf-neuron check``'s run: one checkpoint's real-width slice through the scenarios of the checkpoint cases, in this
process, with the matrix's own case machinery (:class:`~hf_neuron.matrix.case.execute.CaseRunner`: the time limit,
the CPU re-run of a failure, the verdict, the record schema) — not a second runner.

:func:`prepare_environment` must run before torch is imported: it picks the reference device where TorchNeuron is
not installed and applies the profile, as a matrix run does for its workers.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from hf_neuron.checkpoint.facts import prepare
from hf_neuron.checkpoint.slice import SliceRequest
from hf_neuron.compat.known_failures import KNOWN_FAILURES_PATH, load_known_failures
from hf_neuron.matrix.case.execute import CaseRunner
from hf_neuron.matrix.profiles import apply_profile
from hf_neuron.matrix.results import environment
from hf_neuron.matrix.results.store import RecordWriter
from hf_neuron.matrix.scenarios.registry import load_scenarios
from hf_neuron.matrix.selection import Case
from hf_neuron.vocabulary.records import Record

__all__ = ["check_cases", "checkpoint_cases", "prepare_environment"]


def prepare_environment(profile: str) -> None:
    """Set this process up as a matrix worker is set up, before torch is imported: the reference device where the
    real TorchNeuron is not installed (unless the user chose), the ``profile``'s switches, no Hub."""
    if importlib.util.find_spec("torch_neuronx") is None:
        os.environ.setdefault("HF_NEURON_EMULATOR", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    apply_profile(profile, os.environ)


def checkpoint_cases(request: SliceRequest, scenarios: Sequence[str] = ()) -> list[Case]:
    """The cases of ``request``'s checkpoint: each scenario of the checkpoint cases (those named in ``scenarios``
    when given) that has a case for its group."""
    from hf_neuron.tiny.groups import group_models

    declared = load_scenarios()
    source = prepare(request).source
    features = frozenset(group_models(source.group).features(source.architecture))
    return [Case(source.architecture, source.group, found.name, found.facts,
                 checkpoint=dataclasses.replace(request, trains=found.trains))
            for found in declared.on("checkpoints")
            if (not scenarios or found.name in scenarios) and found.implementation(source.group, features)]


def check_cases(cases: Sequence[Case], *, profile: str, timeout_s: float, results: Path | None,
                device: str = "neuron", on_record: Callable[[Record], None] | None = None) -> list[Record]:
    """Run ``cases`` (one checkpoint's) one after the other on ``device``, each record written to ``results`` (a
    scratch directory when None) and handed to ``on_record``; the slice lives in a scratch directory removed at the
    end."""
    declared = load_scenarios()
    env = environment.collect(profile, declared.named())
    environment.require_backend(device, env)
    known = load_known_failures(KNOWN_FAILURES_PATH, set(declared.names))
    records: list[Record] = []
    with tempfile.TemporaryDirectory(prefix="hf-neuron-check-") as scratch:
        workdir = Path(scratch)
        writer = RecordWriter(results or workdir / "results", "check")
        runner = CaseRunner(declared, known, writer, f"check-{os.getpid()}", env, device, timeout_s, workdir)
        try:
            for case in cases:
                record = runner.run(case)
                records.append(record)
                if on_record is not None:
                    on_record(record)
        finally:
            writer.close()
    return records
