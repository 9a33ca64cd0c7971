"""Run upstream model tests on the CPU and on neuron, one pytest process per architecture and device.

Each process runs one architecture's ``test_modeling_<arch>.py`` in a working directory laid out by
:func:`~hf_neuron.upstream.source.prepare_worktree`, with :mod:`hf_neuron.upstream.plugin` writing one record per
test into the results directory, and its terminal output kept in ``<results>/logs/<arch>-<device>.log``. The CPU
run is transformers' own (``TRANSFORMERS_TEST_DEVICE=cpu``); the neuron run adds the device plug-ins of
:mod:`hf_neuron.testing`. A process that ends without recording any test (it could not start, or ``-k`` selected
nothing) leaves one ``error`` record for its file saying so, so a run never looks clean because nothing ran.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from hf_neuron.compat.ranking import load_ranking
from hf_neuron.compat.upstream_not_applicable import NOT_APPLICABLE_PATH, load_not_applicable
from hf_neuron.errors import InputError
from hf_neuron.matrix.results import environment
from hf_neuron.matrix.results.store import RecordWriter, new_run_id
from hf_neuron.testing import suite_environment, write_spec_file
from hf_neuron.upstream.plugin import OPTION, PluginConfig, make_record, text_failure
from hf_neuron.upstream.records import DEVICES, Device, UpstreamRecord, read_records
from hf_neuron.upstream.source import MODEL_TESTS, fetch, has_tests, model_test_files, prepare_worktree

__all__ = ["DESELECTED", "NEEDED_MODULES", "UpstreamOptions", "pytest_command", "run"]

#: Upstream tests left out, and why: they start several processes (torchrun) per test; the matrix's ``ddp``
#: scenario and hf-neuron's distributed tests cover multi-process runs on neuron.
DESELECTED = "not is_fsdp_test and not is_tensor_parallel_test and not is_expert_parallel_test"
#: Modules the upstream tests (or this runner) need, by the package that provides them.
NEEDED_MODULES: dict[str, str] = {"parameterized": "parameterized", "pytest_timeout": "pytest-timeout",
                                  "xdist": "pytest-xdist"}
_SPEC_VARIABLES = ("TRANSFORMERS_TEST_DEVICE", "TRANSFORMERS_TEST_DEVICE_SPEC", "TRANSFORMERS_TEST_BACKEND")


@dataclasses.dataclass(frozen=True)
class UpstreamOptions:
    """What to run: ``suite``'s model tests of ``archs`` (or of the ``top`` architectures of the ranking that have
    tests) from ``source`` (or fetched into ``cache``)."""

    archs: tuple[str, ...]
    results: Path
    top: int | None = None
    source: Path | None = None
    cache: Path | None = None  # with it, fetch the source tree into this cache
    workers: int = 1
    timeout_s: float = 600.0
    keyword: str | None = None
    not_applicable: Path | None = None
    suite: str = "transformers"


def pytest_command(test_file: Path, config: Path, options: UpstreamOptions) -> list[str]:
    """The pytest command line of one architecture on one device."""
    return [
        sys.executable, "-m", "pytest", str(test_file), "--rootdir", ".",
        "-p", "hf_neuron.upstream.plugin", OPTION, str(config),
        "-p", "no:cacheprovider",
        "-n", str(options.workers if options.workers > 1 else 0),
        "-m", DESELECTED,
        "--timeout", str(options.timeout_s),
        "-q", "--tb=short", "-rN", "-o", "console_output_style=classic",
        *(["-k", options.keyword] if options.keyword else []),
    ]


def _environment(device: Device, workers: int) -> dict[str, str]:
    # A pytest run that starts this one (an xdist worker, say) must not leak its state into the tests' own run.
    env = {key: value for key, value in os.environ.items()
           if key not in _SPEC_VARIABLES and not key.startswith(("PYTEST_XDIST_", "PYTEST_CURRENT_TEST"))}
    env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // max(1, workers))))
    env["HF_HUB_OFFLINE"] = "1"
    env.update(suite_environment("transformers") if device == "neuron" else {"TRANSFORMERS_TEST_DEVICE": "cpu"})
    return env


def _check_prerequisites(options: UpstreamOptions) -> None:
    missing = [package for module, package in NEEDED_MODULES.items() if importlib.util.find_spec(module) is None]
    if missing:
        raise InputError(f"the upstream tests need {', '.join(missing)}: pip install 'hf-neuron[upstream]'")
    if options.workers < 1 or options.timeout_s <= 0:
        raise InputError("-n must be at least 1 and --timeout more than 0 seconds")
    if options.suite != "transformers":
        raise InputError(f"no upstream suite {options.suite!r}: only transformers' tests run for now")


def _top(source: Path, top: int, progress: Callable[[str], None]) -> tuple[str, ...]:
    """The ``top`` best-ranked architectures of ``compat/ranking.csv`` that ``source`` has model tests for."""
    if top < 1:
        raise InputError("--top must be at least 1")
    if not (source / MODEL_TESTS).is_dir():
        return ()  # model_test_files says what is wrong with the tree
    ranked = [entry.model_type for entry in load_ranking()[:top]]
    archs = tuple(arch for arch in ranked if has_tests(source, arch))
    if without := [arch for arch in ranked if arch not in archs]:
        progress(f"top {top} of the ranking: no model tests in {source} for {', '.join(without)} (left out)")
    if not archs:
        raise InputError(f"--top {top}: none of {', '.join(ranked)} has model tests in {source}")
    return archs


def _outcomes(results: Path, model_type: str, device: Device) -> Counter[str]:
    """How many tests of ``model_type`` on ``device`` have each outcome so far."""
    records, _ = read_records([results])
    return Counter(r["outcome"] for r in records if r["model_type"] == model_type and r["device"] == device)


def run(options: UpstreamOptions, progress: Callable[[str], None] = print) -> list[UpstreamRecord]:
    """Run every architecture on both devices; return the run's records. :class:`InputError` on bad input, before
    anything runs."""
    _check_prerequisites(options)
    if options.source is None and options.cache is None:
        raise InputError("name a transformers source tree with --source DIR, or use --fetch")
    source = fetch(options.cache) if options.cache is not None else options.source
    assert source is not None
    archs = options.archs if options.top is None else _top(source, options.top, progress)
    files = model_test_files(source, archs)
    not_applicable = options.not_applicable or NOT_APPLICABLE_PATH
    load_not_applicable(not_applicable)  # a malformed list stops the run before it starts
    env = environment.collect()
    environment.require_backend("neuron", env)
    if (held := read_records([options.results])[0]):
        raise InputError(f"--results {options.results} already holds {len(held)} upstream records of run "
                         f"{held[0]['run_id']}: choose a new directory (or remove that one)")
    run_id = new_run_id()
    logs = options.results / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="hf-neuron-upstream-") as scratch:
        tree = prepare_worktree(source, Path(scratch) / "tree")
        write_spec_file("transformers", tree)
        for arch, test_file in files.items():
            for device in DEVICES:
                config = PluginConfig(run_id, options.suite, arch, device, str(options.results.resolve()), env,
                                      str(Path(not_applicable).resolve()))
                log = logs / f"{arch}-{device}.log"
                started = time.time()
                with log.open("w", encoding="utf-8") as output:
                    status = subprocess.run(
                        pytest_command(test_file, config.write(Path(scratch) / f"{arch}-{device}.json"), options),
                        cwd=tree, env=_environment(device, options.workers), stdout=output,
                        stderr=subprocess.STDOUT, check=False,
                    ).returncode
                if not _outcomes(options.results, arch, device):
                    _record_nothing_ran(options.results, config, str(test_file), status, log, started)
                counts = ", ".join(f"{n} {outcome}" for outcome, n in _outcomes(options.results, arch, device).items())
                progress(f"{arch} on {device}: {counts} in {time.time() - started:.0f} s (log: {log})")
    return [r for r in read_records([options.results])[0] if r["run_id"] == run_id]


def _record_nothing_ran(results: Path, config: PluginConfig, test: str, status: int, log: Path,
                        started: float) -> None:
    tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-1:] or ["no output"]
    message = f"pytest exited with status {status} without recording a test ({tail[0]}); see {log}"
    writer = RecordWriter(results, f"{config.model_type}-{config.device}-runner")
    writer.write(make_record(config, test, "error", failure=text_failure(message), started=started,
                             finished=time.time()))
    writer.close()
