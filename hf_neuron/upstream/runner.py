"""Run a library's own tests on the CPU and on neuron: one pytest process per job and device.

A run takes a suite (:mod:`hf_neuron.upstream.suites`), a source tree (:mod:`~hf_neuron.upstream.source`) and a
selection, and plans **jobs**: for transformers one per architecture; for the others one per number of neuron
devices the selected groups need (accelerate's multi-device tests run with two, the rest with one). Each job runs
twice, in a working directory laid out by :func:`~hf_neuron.upstream.source.prepare_worktree`: on the CPU (no neuron
device visible, :func:`hf_neuron.testing.cpu_environment`) and then on neuron (the device plug-ins of
:mod:`hf_neuron.testing`), with :mod:`hf_neuron.upstream.plugin` writing one record per test into the results
directory, the terminal output kept in ``<results>/logs/<suite>-<job>-<device>.log``, and the Hub stand-ins of
:mod:`~hf_neuron.upstream.stand_ins` in an offline cache. After each process the device probes are checked
(:func:`check_devices`): a "neuron" run whose suite chose another device, or whose processes (pytest's, and those
its tests launched, which report through ``HF_NEURON_DEVICE_PROBE``) allocated nothing on neuron, and a CPU run that
used a neuron device, stop the run with :class:`DeviceMismatchError` instead of a report. A process
that ends without recording any test (it could not start, or ``-k`` selected nothing) leaves one ``error`` record per
file saying so, so a run never looks clean because nothing ran; one that recorded some and did not finish (pytest's
exit status is none of :data:`PYTEST_ENDED`: it was killed by a signal, or a test ended the process, as a native
crash does without xdist workers to replace) leaves one ``crashed`` record per target with that status, and the tests
after the crash have no record (the summary holds each that passed on the CPU as a neuron-side gap).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from hf_neuron import cpus
from hf_neuron.compat.files import REPO_ROOT
from hf_neuron.compat.ranking import load_ranking
from hf_neuron.compat.upstream_not_applicable import NOT_APPLICABLE_PATH, load_not_applicable
from hf_neuron.compat.upstream_stand_ins import STAND_INS_PATH, load_stand_ins
from hf_neuron.errors import InputError
from hf_neuron.matrix.results import environment
from hf_neuron.matrix.results.store import RecordWriter, new_run_id
from hf_neuron.settings import read as read_setting
from hf_neuron.testing import cpu_environment, spec_library, suite_environment, write_spec_file
from hf_neuron.upstream import source
from hf_neuron.upstream.plugin import OPTION, PROBES, PluginConfig, make_record, text_failure
from hf_neuron.upstream.records import DEVICES, Device, UpstreamRecord, read_records
from hf_neuron.upstream.stand_ins import StandInCache, prepare
from hf_neuron.upstream.suites import Group, Suite, suite
from hf_neuron.vocabulary.outcomes import Outcome
from hf_neuron.vocabulary.records import Env

__all__ = [
    "NEEDED_MODULES",
    "PYTEST_ENDED",
    "SHARED_UPSTREAM",
    "DeviceMismatchError",
    "Job",
    "NoSourceError",
    "UpstreamOptions",
    "check_devices",
    "configured_source",
    "plan",
    "pytest_command",
    "resolve_source",
    "run",
]

#: Modules the upstream tests (or this runner) need, by the package that provides them.
NEEDED_MODULES: dict[str, str] = {"parameterized": "parameterized", "pytest_timeout": "pytest-timeout",
                                  "xdist": "pytest-xdist"}
#: Variables of a test run that a run of hf-neuron's own tests (or the user's shell) must not leak into it.
_SPEC_PREFIXES = ("TRANSFORMERS_TEST_", "DIFFUSERS_TEST_", "PYTEST_XDIST_", "PYTEST_CURRENT_TEST", "PYTEST_ADDOPTS")
#: Kept copies of libraries' tests beside the checkout (``../shared/upstream``), which ``--configured`` may take.
SHARED_UPSTREAM = REPO_ROOT.parent / "shared" / "upstream"


class DeviceMismatchError(InputError):
    """A run's device probes show that it did not run where it says: its records are not reported."""


class NoSourceError(InputError):
    """``--configured``: the settings name no tree of the suite's tests, and none may be fetched: nothing runs."""


@dataclasses.dataclass(frozen=True)
class UpstreamOptions:
    """What to run: ``suite``'s tests from ``source`` (or fetched into ``cache``), chosen by architecture
    (transformers: ``archs`` or the ``top`` of the ranking) or by ``groups`` and ``tests`` (the others)."""

    results: Path
    suite: str = "transformers"
    archs: tuple[str, ...] = ()
    top: int | None = None
    groups: tuple[str, ...] = ()
    tests: tuple[str, ...] = ()
    source: Path | None = None
    revision: str | None = None
    cache: Path | None = None  # where fetched and exported trees, and stand-ins, are kept
    fetch: bool = False
    #: take the source from the settings (:func:`configured_source`) instead of ``source``, ``revision``, ``fetch``
    configured: bool = False
    #: the release of the suite's library the tests run against, installed beside the installed one
    #: (:func:`~hf_neuron.upstream.source.install_beside`); None: the installed one
    against: str | None = None
    workers: int = 1
    timeout_s: float = 600.0
    keyword: str | None = None
    not_applicable: Path | None = None
    stand_ins: Path | None = None


@dataclasses.dataclass(frozen=True)
class Job:
    """Tests run in one pytest process per device: ``targets`` (files or node ids, relative to the tree) filtered by
    ``keyword``, with ``devices`` neuron devices; ``unit`` names every record's unit when the job is one."""

    name: str
    targets: tuple[str, ...]
    keyword: str | None = None
    devices: int = 1
    unit: str | None = None


def _cache(options: UpstreamOptions) -> Path:
    if options.cache is None:
        raise InputError("no cache directory for fetched trees and stand-ins: pass --cache DIR")
    return options.cache


def configured_source(chosen: Suite, options: UpstreamOptions, environ: Mapping[str, str] | None = None,
                      shared: Path = SHARED_UPSTREAM) -> UpstreamOptions:
    """``options`` with the source that the settings give ``chosen`` (``--configured``: what the nightly and CI
    run), the first of: the tree its source setting names (a git repository: the commit its revision setting names,
    else HEAD); its kept copy in ``shared``, when it is there; the sdist of the installed version when the sdist
    carries the tests (PEFT, accelerate: the package index once, then the cache); a clone of the installed
    version's tag with ``HF_NEURON_UPSTREAM_FETCH=1``. :class:`NoSourceError`, naming what would give one, when
    none does; :class:`InputError` when ``options`` name a source too."""
    if options.source is not None or options.fetch or options.revision is not None or options.against is not None:
        raise InputError("--configured takes the source from the settings: not with --source, --fetch, --revision or "
                         "--against")
    named = read_setting(chosen.source_setting, environ) if chosen.source_setting else ""
    if named:
        revision = read_setting(chosen.revision_setting, environ) if chosen.revision_setting else ""
        against = read_setting(chosen.against_setting, environ) if chosen.against_setting else ""
        return dataclasses.replace(options, source=Path(named), revision=revision or None, against=against or None,
                                   configured=False)
    if chosen.shared_tree is not None and (shared / chosen.shared_tree).is_dir():
        return dataclasses.replace(options, source=shared / chosen.shared_tree, configured=False)
    if chosen.fetch == "sdist" or read_setting("HF_NEURON_UPSTREAM_FETCH", environ):
        return dataclasses.replace(options, fetch=True, configured=False)
    ways = [f"set {chosen.source_setting} to a tree of its tests"] if chosen.source_setting else []
    if chosen.shared_tree is not None:
        ways.append(f"put a copy at {shared / chosen.shared_tree}")
    ways.append("set HF_NEURON_UPSTREAM_FETCH=1 to clone the installed version's tag over the network")
    raise NoSourceError(f"{chosen.name}: its own tests skipped, no source configured: {'; or '.join(ways)}")


def resolve_source(chosen: Suite, options: UpstreamOptions) -> source.SourceTree:
    """The tree of ``chosen``'s tests that ``options`` name (resolved from the settings first with ``--configured``:
    :func:`configured_source`): ``--source`` in place (a git repository without the tests, or with ``--revision``,
    exported), or fetched (the tag of the ``--against`` release, else of the installed one); :class:`InputError` when
    it is not one."""
    path = options.source
    if path is not None:
        if options.revision is not None or (not (path / chosen.needs).exists() and source.is_git_repository(path)):
            return source.export_git(path, options.revision or "HEAD", _cache(options), name=chosen.name,
                                     paths=chosen.export, needs=chosen.needs)
        return source.from_directory(path, what=chosen.name, needs=chosen.needs)
    if not options.fetch:
        raise InputError(f"name a {chosen.name} source tree with --source DIR, or use --fetch")
    version = options.against or source.installed_version(chosen.distribution)
    if chosen.fetch == "sdist":
        return source.fetch_sdist(chosen.distribution, version, _cache(options), needs=chosen.needs)
    return source.fetch_git_tag(chosen.git_url, f"v{version}", _cache(options), name=chosen.name, needs=chosen.needs)


def _top(tree: Path, top: int, progress: Callable[[str], None]) -> tuple[str, ...]:
    """The ``top`` best-ranked architectures of ``compat/ranking.csv`` that ``tree`` has model tests for."""
    if top < 1:
        raise InputError("--top must be at least 1")
    if not (tree / source.MODEL_TESTS).is_dir():
        return ()  # model_test_files says what is wrong with the tree
    ranked = [entry.model_type for entry in load_ranking()[:top]]
    archs = tuple(arch for arch in ranked if source.has_tests(tree, arch))
    if without := [arch for arch in ranked if arch not in archs]:
        progress(f"top {top} of the ranking: no model tests in {tree} for {', '.join(without)} (left out)")
    if not archs:
        raise InputError(f"--top {top}: none of {', '.join(ranked)} has model tests in {tree}")
    return archs


def _stem(target: str) -> str:
    return Path(target.partition("::")[0]).stem


def _keyword(groups: Sequence[Group]) -> str | None:
    """One ``-k`` expression selecting each group's tests among the files of all ``groups``."""
    if all(group.keyword is None for group in groups):
        return None
    if len(groups) == 1:
        return groups[0].keyword
    terms = []
    for group in groups:
        files = "(" + " or ".join(sorted({_stem(target) for target in group.files})) + ")"
        terms.append(files if group.keyword is None else f"({files} and ({group.keyword}))")
    return " or ".join(terms)


def plan(chosen: Suite, tree: Path, options: UpstreamOptions, progress: Callable[[str], None] = print) -> list[Job]:
    """The jobs of a run; :class:`InputError` when the selection names nothing the tree has."""
    if chosen.by_architecture:
        if options.groups or options.tests:
            raise InputError(f"{chosen.name}'s tests are chosen by architecture: use --arch or --top")
        if bool(options.archs) == (options.top is not None):
            raise InputError(f"{chosen.name}: name architectures with --arch ARCH ..., or --top N")
        archs = options.archs if options.top is None else _top(tree, options.top, progress)
        files = source.model_test_files(tree, archs)
        return [Job(arch, (str(path),), None, chosen.devices, unit=arch) for arch, path in files.items()]
    if options.archs or options.top is not None:
        raise InputError(f"--arch and --top choose transformers' model tests; {chosen.name}'s tests are chosen by "
                         f"group (--group) or test file")
    groups = list(chosen.select(options.groups or (() if options.tests else ("default",))))
    if options.tests:
        groups.append(Group("tests", "the tests named on the command line", tuple(options.tests),
                            devices=chosen.devices))
    missing = sorted({target.partition("::")[0] for group in groups for target in group.files
                      if not (tree / target.partition("::")[0]).exists()})
    if missing:
        raise InputError(f"{', '.join(missing)}: no such test file in {tree}")
    jobs = []
    for devices in sorted({group.devices for group in groups}):
        members = [group for group in groups if group.devices == devices]
        targets = tuple(dict.fromkeys(target for group in members for target in group.files))
        name = f"{devices}-device" + ("s" if devices > 1 else "")
        jobs.append(Job(name, targets, _keyword(members), devices))
    return jobs


def pytest_command(chosen: Suite, job: Job, config: Path, options: UpstreamOptions) -> list[str]:
    """The pytest command line of one job on one device."""
    keyword = job.keyword
    if options.keyword:
        keyword = f"({keyword}) and ({options.keyword})" if keyword else options.keyword
    return [
        sys.executable, "-m", "pytest", *job.targets, "--rootdir", ".",
        "-p", "hf_neuron.upstream.plugin", OPTION, str(config),
        "-p", "no:cacheprovider",
        "-n", str(options.workers if options.workers > 1 else 0),
        *(["-m", chosen.deselect] if chosen.deselect else []),
        "--timeout", str(options.timeout_s),
        "-q", "--tb=short", "-rN", "-o", "console_output_style=classic",
        *chosen.pytest_options,
        *(["-k", keyword] if keyword else []),
    ]


def _environment(chosen: Suite, job: Job, device: Device, options: UpstreamOptions, backend_kind: str,
                 stand_ins: StandInCache, pycache: Path, beside: Path | None = None) -> dict[str, str]:
    # A pytest run that starts this one (an xdist worker, say) must not leak its state into the tests' own run.
    env = {key: value for key, value in os.environ.items() if not key.startswith(_SPEC_PREFIXES)}
    if beside is not None:  # the release the tests were written for, before the installed one
        env["PYTHONPATH"] = os.pathsep.join([str(beside), *filter(None, [env.get("PYTHONPATH")])])
    env.setdefault("OMP_NUM_THREADS", str(cpus.per_worker(options.workers)))
    env["PYTHONPYCACHEPREFIX"] = str(pycache)  # nothing is written into the source tree
    # the tests launch this environment's console scripts (accelerate launch, torchrun) by name
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["HF_NEURON_DEVICE_PROBE"] = str(options.results.resolve() / PROBES / f"{job.name}-{device}-processes")
    env.update(stand_ins.environment())
    if device == "cpu":
        env.update(cpu_environment(chosen.name, backend_kind))
        return env
    env.update(suite_environment(chosen.name))
    if backend_kind == "reference":
        env["HF_NEURON_EMULATOR_DEVICES"] = str(job.devices)
    elif "NEURON_RT_VISIBLE_CORES" not in env:
        env["NEURON_RT_VISIBLE_CORES"] = "0" if job.devices == 1 else f"0-{job.devices - 1}"
    return env


def _check_prerequisites(options: UpstreamOptions) -> None:
    missing = [package for module, package in NEEDED_MODULES.items() if importlib.util.find_spec(module) is None]
    if missing:
        raise InputError(f"the upstream tests need {', '.join(missing)}: pip install 'hf-neuron[upstream]'")
    if options.workers < 1 or options.timeout_s <= 0:
        raise InputError("-n must be at least 1 and --timeout more than 0 seconds")


#: pytest's exit statuses of a session that ended by itself: all passed, some failed, interrupted (as errors during
#: collection stop it: the plugin records each), none collected. Any other (a signal, a test's ``os._exit``, pytest's
#: internal error) cut it short.
PYTEST_ENDED = (0, 1, 2, 5)


def _outcomes(results: Path, device: Device, run_id: str) -> Counter[str]:
    """How many tests of run ``run_id`` on ``device`` have each outcome so far."""
    records, _ = read_records([results])
    return Counter(r["outcome"] for r in records if r["run_id"] == run_id and r["device"] == device)


def check_devices(results: Path, job: str, device: Device) -> str:
    """Read the device probes of ``job`` on ``device``; return what they show (for the progress line) or raise
    :class:`DeviceMismatchError` when they show the tests ran elsewhere, or cannot tell."""
    probes: list[dict[str, Any]] = []
    for path in sorted((results / PROBES).glob(f"{job}-{device}-*.json")):
        try:
            probes.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as exc:
            raise DeviceMismatchError(f"device probe {path} is unreadable ({exc}): cannot tell where the {device} "
                                      "run ran") from exc
    ran = [probe for probe in probes if probe.get("tests")]
    if not ran:
        return "no test ran"
    chosen = sorted({str(probe.get("selected")) for probe in ran})
    allocations = sum(int(probe.get("neuron_allocations") or 0) for probe in ran)
    pytest_pids = {probe.get("pid") for probe in probes}
    for path in sorted((results / PROBES / f"{job}-{device}-processes").glob("process-*.json")):
        with contextlib.suppress(OSError, ValueError):  # a process killed while writing: it reports nothing
            child = json.loads(path.read_text(encoding="utf-8"))
            if child.get("pid") not in pytest_pids:  # the processes the tests launched
                allocations += int(child.get("neuron_allocations") or 0)
    where = f"the {job} run on {device}"
    if chosen != [device]:
        raise DeviceMismatchError(f"{where} ran its tests on {', '.join(chosen)}, not on {device}, by its suite's "
                                  f"own device selection: its records in {results} are not reported (see "
                                  f"{results / PROBES})")
    if device == "neuron" and allocations == 0:
        raise DeviceMismatchError(f"{where} allocated nothing on neuron: nothing shows its tests ran there; its "
                                  f"records in {results} are not reported")
    if device == "cpu" and allocations:
        raise DeviceMismatchError(f"{where} allocated {allocations} times on a neuron device: the CPU run did not run "
                                  f"on the CPU alone; its records in {results} are not reported")
    return f"the suite chose {device}" + (f", {allocations} allocations on neuron" if device == "neuron" else "")


def run(options: UpstreamOptions, progress: Callable[[str], None] = print) -> list[UpstreamRecord]:
    """Run every job on both devices; return the run's records. :class:`InputError` on bad input, before anything
    runs; :class:`DeviceMismatchError` when a run did not run where it says."""
    _check_prerequisites(options)
    chosen = suite(options.suite)
    if options.configured:
        options = configured_source(chosen, options)
    tree = resolve_source(chosen, options)
    installed = source.installed_version(chosen.distribution)
    beside = None if options.against is None else source.install_beside(chosen.distribution, options.against,
                                                                         _cache(options))
    against = (f"{chosen.distribution} {options.against}, installed beside {installed} ({beside})" if beside
               else f"{chosen.distribution} {installed} (installed)")
    jobs = plan(chosen, tree.root, options, progress)
    not_applicable = options.not_applicable or NOT_APPLICABLE_PATH
    load_not_applicable(not_applicable)  # a malformed list stops the run before it starts
    entries = load_stand_ins(options.stand_ins or STAND_INS_PATH)
    env = environment.collect()
    environment.require_backend("neuron", env)
    if (held := read_records([options.results])[0]):
        raise InputError(f"--results {options.results} already holds {len(held)} upstream records of run "
                         f"{held[0]['run_id']}: choose a new directory (or remove that one)")
    progress(f"{chosen.name} tests from {tree.root} ({tree.describe()}), against {against}")
    run_id = new_run_id()
    logs = options.results / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="hf-neuron-upstream-") as scratch:
        stand_ins = prepare(entries, chosen.name, _cache(options) / "stand-ins", Path(scratch) / "hf-home", progress)
        links = {}
        if chosen.src_package is not None:
            links[f"src/{chosen.src_package}"] = source.installed_package(chosen.src_package)
        work = source.prepare_worktree(tree.root, Path(scratch) / "tree", links=links, packages=chosen.packages)
        if (spec := spec_library(chosen.name)) is not None:
            write_spec_file(spec, work)
        for job in jobs:
            for device in DEVICES:
                _run_job(chosen, job, device, options, run_id,
                         {**env, "upstream_source": {**tree.provenance, "against": against}},
                         Path(not_applicable), stand_ins, work, Path(scratch), logs, progress, beside)
    return [r for r in read_records([options.results])[0] if r["run_id"] == run_id]


def _run_job(chosen: Suite, job: Job, device: Device, options: UpstreamOptions, run_id: str, env: Env,
             not_applicable: Path, stand_ins: StandInCache, work: Path, scratch: Path, logs: Path,
             progress: Callable[[str], None], beside: Path | None = None) -> None:
    config = PluginConfig(run_id, chosen.name, job.unit, device, str(options.results.resolve()), env,
                          str(not_applicable.resolve()), unit_pattern=chosen.unit_pattern, job=job.name,
                          probes=chosen.device_probes, stand_in_root=str(stand_ins.home),
                          stand_in_ids=dict(stand_ins.ids), architectures=dict(chosen.architectures))
    log = logs / f"{chosen.name}-{job.name}-{device}.log"
    started = time.time()
    before = _outcomes(options.results, device, run_id)
    with log.open("w", encoding="utf-8") as output:
        status = subprocess.run(
            pytest_command(chosen, job, config.write(scratch / f"{job.name}-{device}.json"), options),
            cwd=work, env=_environment(chosen, job, device, options, env["backend"], stand_ins, scratch / "pycache",
                                       beside),
            stdout=output, stderr=subprocess.STDOUT, check=False,
        ).returncode
    if not _outcomes(options.results, device, run_id) - before:
        _record_nothing_ran(options.results, config, job, status, log, started)
    elif status not in PYTEST_ENDED:
        _record_unfinished(options.results, config, job, status, log, started)
    where = check_devices(options.results, job.name, device)
    counts = ", ".join(f"{n} {outcome}" for outcome, n in
                       (_outcomes(options.results, device, run_id) - before).most_common())
    progress(f"{chosen.name} {job.name} on {device}: {counts} in {time.time() - started:.0f} s, pytest's exit status "
             f"{status}; {where} (log: {log})")


def _record_nothing_ran(results: Path, config: PluginConfig, job: Job, status: int, log: Path,
                        started: float) -> None:
    _record_each_target(results, config, job, "error", f"pytest exited with status {status} without recording a "
                        f"test ({_last_line(log)}); see {log}", started)


def _record_unfinished(results: Path, config: PluginConfig, job: Job, status: int, log: Path,
                       started: float) -> None:
    how = f"killed by signal {-status}" if status < 0 else f"exit status {status}"
    _record_each_target(results, config, job, "crashed", f"pytest did not finish on {config.device} ({how}; "
                        f"{_last_line(log)}): the tests after the crash have no record; see {log}", started)


def _last_line(log: Path) -> str:
    return (log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-1:] or ["no output"])[0]


def _record_each_target(results: Path, config: PluginConfig, job: Job, outcome: Outcome, message: str,
                        started: float) -> None:
    """One record of ``outcome`` per target of ``job`` on ``config.device``, saying ``message``."""
    writer = RecordWriter(results, f"{job.name}-{config.device}-runner")
    for target in job.targets:
        writer.write(make_record(config, target, outcome, failure=text_failure(message, outcome=outcome),
                                 started=started, finished=time.time()))
    writer.close()
