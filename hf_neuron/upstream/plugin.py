"""The pytest plugin loaded into a run of upstream tests: one record per test, written as the test ends.

``hf-neuron upstream`` starts pytest on upstream test files with ``-p hf_neuron.upstream.plugin
--hf-neuron-upstream FILE``, where ``FILE`` is a :class:`PluginConfig` as JSON. Where a test runs (the only
process, or an xdist worker), the plugin describes each failure from its exception (type, message, raising frame,
fingerprint) and the Hub stand-ins the test read (an audit hook sees every file opened in the run's offline cache),
and attaches both to the report; the process that started the run (pytest-xdist's controller, or the only process)
turns each test's reports into one :class:`~hf_neuron.upstream.records.UpstreamRecord`. A test file that cannot be
collected gets one ``error`` record under the file's node id; a test whose worker died gets a ``crashed`` one.

Each process that ran tests also leaves a **device probe** (``<results>/devices/<job>-<device>-<process>.json``):
the device the suite's own test utilities chose (:func:`hf_neuron.testing.device.selected_device`) and how many
allocations the process made on neuron. The runner reads them to refuse a "neuron" run that ran on the CPU, or the
reverse.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
import time
from collections.abc import Generator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import pytest

from hf_neuron.compat.upstream_not_applicable import NotApplicableList, load_not_applicable
from hf_neuron.matrix.case.capture import MESSAGE_CHARS, describe_exception
from hf_neuron.matrix.results.store import RecordWriter
from hf_neuron.upstream.records import SCHEMA_VERSION, Device, UpstreamRecord, short_name
from hf_neuron.vocabulary.failures import Failure, failure, failure_text
from hf_neuron.vocabulary.outcomes import DID_NOT_WORK, Outcome
from hf_neuron.vocabulary.records import Env

__all__ = ["OPTION", "PROBES", "PluginConfig", "make_record", "probe_path", "record_of", "text_failure"]

OPTION = "--hf-neuron-upstream"
#: The user property under which a report carries its failure's description.
_FAILURE = "hf_neuron_failure"
#: The user property under which a report carries the Hub ids of the stand-ins its test read.
_STAND_INS = "hf_neuron_stand_ins"
#: The folder of the results directory that holds the device probes.
PROBES = "devices"
#: Audit events whose first argument is a path a test read.
_READS = frozenset({"open", "os.listdir", "os.scandir"})
#: The ``when`` of the report pytest-xdist makes for the test a dead worker was running.
_CRASH = "???"
#: pytest-timeout's failure message starts with this.
_TIMEOUT = "Timeout"
#: What stands for the exception type of a failure pytest reports without an exception, and of a dead worker.
_NO_EXCEPTION = "pytest"
_CRASHED = "WorkerCrashed"
#: The end of pytest's text kept as a failure's traceback.
_KEPT_CHARS = 8000


@dataclasses.dataclass(frozen=True)
class PluginConfig:
    """What a test run records: under which run, suite and unit (``model_type``: an architecture; None: each test's
    unit from its node id by ``unit_pattern``), on which device, where, with which environment block, against which
    list of tests not applicable on neuron; which job of the run it is, where the suite keeps its device
    (``probes``), the offline cache of stand-ins (``stand_in_root``, its folders' Hub ids ``stand_in_ids``), and the
    architecture each unit that tests one tests (``architectures``: the suite's)."""

    run_id: str
    suite: str
    model_type: str | None
    device: Device
    results: str
    env: Env
    not_applicable: str
    unit_pattern: str = ""
    job: str = "run"
    probes: tuple[str, ...] = ()
    stand_in_root: str | None = None
    stand_in_ids: Mapping[str, str] = dataclasses.field(default_factory=dict)
    architectures: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def unit(self, node_id: str) -> str:
        """The unit of the test ``node_id``."""
        if self.model_type is not None:
            return self.model_type
        found = re.search(self.unit_pattern, node_id) if self.unit_pattern else None
        return found.group("unit") if found else "other"

    def write(self, path: Path) -> Path:
        path.write_text(json.dumps(dataclasses.asdict(self)), encoding="utf-8")
        return path

    @classmethod
    def read(cls, path: Path) -> PluginConfig:
        fields = json.loads(path.read_text(encoding="utf-8"))
        fields["probes"] = tuple(fields.get("probes", ()))
        return cls(**fields)


def probe_path(config: PluginConfig, process: str) -> Path:
    """Where ``process`` (``main`` or an xdist worker id) of a run leaves its device probe."""
    return Path(config.results) / PROBES / f"{config.job}-{config.device}-{process}.json"


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="milliseconds")


def _failure(report: pytest.TestReport | pytest.CollectReport, outcome: Outcome) -> Failure:
    """The failure a report carries, classified for ``outcome``: its exception's description, else (a dead worker,
    a collection error reported without one) the last line of pytest's report."""
    for key, value in report.user_properties if isinstance(report, pytest.TestReport) else ():
        if key == _FAILURE:  # put there by pytest_runtest_makereport below, before the outcome was known
            found = cast(Failure, value)
            return failure(found["type"], found["message"], found["frame"], found["traceback"], outcome=outcome)
    return text_failure(report.longreprtext, outcome=outcome)


def text_failure(text: str, type_name: str = _NO_EXCEPTION, message: str | None = None, *,
                 outcome: Outcome = "failed") -> Failure:
    """A failure known only by what pytest printed (``text``, kept as its traceback): the message is its last
    line unless given."""
    text = text.strip()
    message = message or (text.splitlines()[-1] if text else "failed")
    return failure(type_name, message, "", text[-_KEPT_CHARS:], outcome=outcome)


def _skip_reason(report: pytest.TestReport) -> str:
    if hasattr(report, "wasxfail"):
        return f"expected to fail upstream (xfail): {report.wasxfail or 'no reason given'}"
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return reason.removeprefix("Skipped: ") or "skipped"


def make_record(
    config: PluginConfig, node_id: str, outcome: Outcome, *, reason: str | None = None,
    failure: Failure | None = None, entry: dict[str, Any] | None = None, duration_s: float = 0.0,
    started: float, finished: float, stand_ins: tuple[str, ...] = (),
) -> UpstreamRecord:
    """A record of ``config``'s run (times in seconds since the epoch)."""
    unit = config.unit(node_id)
    record: UpstreamRecord = {
        "schema": SCHEMA_VERSION, "run_id": config.run_id, "suite": config.suite, "model_type": unit,
        "test": node_id, "device": config.device, "outcome": outcome, "reason": reason,
        "duration_s": round(duration_s, 3), "failure": failure, "not_applicable": entry, "env": config.env,
        "started_at": _iso(started), "finished_at": _iso(finished), "stand_ins": list(stand_ins),
    }
    if (architecture := config.architectures.get(unit)) is not None:
        record["architecture"] = architecture
    return record


def record_of(
    reports: list[pytest.TestReport], config: PluginConfig, not_applicable: NotApplicableList
) -> UpstreamRecord:
    """One test's record from its reports (setup, call, subtests, teardown; or xdist's report of a dead worker)."""
    failing = next((report for report in reports if report.failed), None)
    outcome: Outcome
    reason: str | None = None
    failed: Failure | None = None
    if failing is not None and failing.when == _CRASH:
        # One message for every dead worker (xdist names the worker and the test), so crashes group together.
        outcome = "crashed"
        failed = text_failure(failing.longreprtext, _CRASHED, "the worker process running the test died",
                              outcome=outcome)
    elif failing is not None:
        failed = _failure(failing, "failed")
        timed_out = failed["message"].startswith(_TIMEOUT) and "pytest-timeout" in failed["message"]
        outcome = "timeout" if timed_out else "failed" if failing.when == "call" else "error"
        failed = _failure(failing, outcome)
    elif skipped := next((r for r in reports if r.skipped and not isinstance(r, pytest.SubtestReport)), None):
        # a skipped subtest skips that subtest only: the test passes (as pytest counts it)
        outcome, reason = "skipped", _skip_reason(skipped)
    else:
        outcome = "passed"
    node_id = reports[0].nodeid
    entry = None
    if config.device == "neuron" and outcome in (*DID_NOT_WORK, "passed"):
        text = None if failed is None else failure_text(failed)
        if failed is not None and len(failed["message"]) >= MESSAGE_CHARS:
            # a message cut at its limit goes on in the traceback: a launcher's (accelerate launch, torchrun) says why
            # its workers failed after its command line and their warnings
            text = f"{text}\n{failed['traceback']}"
        entry = not_applicable.match(text, suite=config.suite, model_type=config.unit(node_id),
                                     test=short_name(node_id))
        if entry is not None and outcome != "passed":
            outcome, reason = "known-failure", entry.reason
    stand_ins = sorted({hub_id for report in reports for key, value in report.user_properties
                        if key == _STAND_INS for hub_id in cast(list[str], value)})
    return make_record(
        config, node_id, outcome, reason=reason, failure=failed, entry=None if entry is None else entry.as_dict(),
        duration_s=sum(report.duration for report in reports),
        started=min(report.start for report in reports), finished=max(report.stop for report in reports),
        stand_ins=tuple(stand_ins),
    )


class _Recorder:
    """Collects each test's reports in the controlling process and writes its record after the last one."""

    def __init__(self, config: PluginConfig) -> None:
        self.config = config
        self.not_applicable = load_not_applicable(Path(config.not_applicable))
        self.writer = RecordWriter(Path(config.results), f"{config.job}-{config.device}")
        self.reports: dict[str, list[pytest.TestReport]] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.reports.setdefault(report.nodeid, []).append(report)
        if report.when in ("teardown", _CRASH):
            self.writer.write(record_of(self.reports.pop(report.nodeid), self.config, self.not_applicable))

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if not report.failed:
            return
        now = time.time()
        self.writer.write(
            make_record(self.config, report.nodeid, "error", failure=_failure(report, "error"), started=now,
                        finished=now)
        )

    def pytest_unconfigure(self) -> None:
        self.writer.close()


class _Runner:
    """Where tests run (the only process, or an xdist worker): describes each failure and the stand-ins each test
    read, and leaves the process's device probe at the end."""

    def __init__(self, config: PluginConfig, process: str) -> None:
        self.config = config
        self.process = process
        self.tests = 0
        self.read: set[str] = set()
        self._root = (config.stand_in_root.rstrip("/") + "/") if config.stand_in_root else None
        if self._root is not None:
            sys.addaudithook(self._audit)

    def _audit(self, event: str, args: tuple[Any, ...]) -> None:
        if event not in _READS or not args or self._root is None:
            return
        path = args[0]
        if not isinstance(path, str):
            if not isinstance(path, os.PathLike):
                return
            path = os.fspath(path)
            if not isinstance(path, str):
                return
        if path.startswith(self._root):
            relative = path[len(self._root):].split("/")  # hub/<folder>/... or datasets/<folder>/...
            if len(relative) > 1 and (hub_id := self.config.stand_in_ids.get(relative[1])) is not None:
                self.read.add(hub_id)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, object, object]:
        self.tests += 1
        self.read = set()
        return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if report.failed and call.excinfo is not None:
            report.user_properties.append((_FAILURE, describe_exception(call.excinfo.value)))
        if self.read:
            report.user_properties.append((_STAND_INS, sorted(self.read)))
        return report

    def pytest_sessionfinish(self) -> None:
        if not self.tests:
            return
        from hf_neuron.testing.device import neuron_allocations, selected_device

        probe = {"job": self.config.job, "device": self.config.device, "process": self.process, "pid": os.getpid(),
                 "tests": self.tests, "selected": selected_device(self.config.probes),
                 "neuron_allocations": neuron_allocations()}
        path = probe_path(self.config, self.process)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(probe) + "\n", encoding="utf-8")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(OPTION, metavar="FILE", help="hf-neuron upstream: the run's configuration (JSON)")


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption(OPTION)
    if path is None:  # not asked to record
        return
    settings = PluginConfig.read(Path(path))
    worker = getattr(config, "workerinput", None)
    if worker is None:  # the only process, or xdist's controller (which runs no test itself)
        config.pluginmanager.register(_Recorder(settings), "hf_neuron_upstream_recorder")
    process = "main" if worker is None else str(worker["workerid"])
    config.pluginmanager.register(_Runner(settings, process), "hf_neuron_upstream_runner")
