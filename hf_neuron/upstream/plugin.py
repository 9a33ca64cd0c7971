"""The pytest plugin loaded into a run of upstream tests: one record per test, written as the test ends.

``hf-neuron upstream`` starts pytest on an upstream test file with ``-p hf_neuron.upstream.plugin
--hf-neuron-upstream FILE``, where ``FILE`` is a :class:`PluginConfig` as JSON. Where a test runs (the only
process, or an xdist worker), the plugin describes each failure from its exception (type, message, raising frame,
fingerprint) and attaches it to the report; the process that started the run (pytest-xdist's controller, or the
only process) turns each test's reports into one :class:`~hf_neuron.upstream.records.UpstreamRecord`. A test file
that cannot be collected gets one ``error`` record under the file's node id; a test whose worker died gets a
``crashed`` one.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Generator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import pytest

from hf_neuron.compat.upstream_not_applicable import NotApplicableList, load_not_applicable
from hf_neuron.matrix.case.capture import describe_exception
from hf_neuron.matrix.results.store import RecordWriter
from hf_neuron.upstream.records import SCHEMA_VERSION, Device, UpstreamRecord, short_name
from hf_neuron.vocabulary.failures import Failure, failure, failure_text
from hf_neuron.vocabulary.outcomes import DID_NOT_WORK, Outcome
from hf_neuron.vocabulary.records import Env

__all__ = ["OPTION", "PluginConfig", "make_record", "record_of", "text_failure"]

OPTION = "--hf-neuron-upstream"
#: The user property under which a report carries its failure's description.
_FAILURE = "hf_neuron_failure"
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
    """What a test run records: under which run, suite and architecture, on which device, where, with which
    environment block, against which list of tests not applicable on neuron."""

    run_id: str
    suite: str
    model_type: str
    device: Device
    results: str
    env: Env
    not_applicable: str

    def write(self, path: Path) -> Path:
        path.write_text(json.dumps(dataclasses.asdict(self)), encoding="utf-8")
        return path

    @classmethod
    def read(cls, path: Path) -> PluginConfig:
        return cls(**json.loads(path.read_text(encoding="utf-8")))


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
    started: float, finished: float,
) -> UpstreamRecord:
    """A record of ``config``'s run (times in seconds since the epoch)."""
    return {
        "schema": SCHEMA_VERSION, "run_id": config.run_id, "suite": config.suite, "model_type": config.model_type,
        "test": node_id, "device": config.device, "outcome": outcome, "reason": reason,
        "duration_s": round(duration_s, 3), "failure": failure, "not_applicable": entry, "env": config.env,
        "started_at": _iso(started), "finished_at": _iso(finished),
    }


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
        entry = not_applicable.match(text, suite=config.suite, model_type=config.model_type, test=short_name(node_id))
        if entry is not None and outcome != "passed":
            outcome, reason = "known-failure", entry.reason
    return make_record(
        config, node_id, outcome, reason=reason, failure=failed, entry=None if entry is None else entry.as_dict(),
        duration_s=sum(report.duration for report in reports),
        started=min(report.start for report in reports), finished=max(report.stop for report in reports),
    )


class _Recorder:
    """Collects each test's reports in the controlling process and writes its record after the last one."""

    def __init__(self, config: PluginConfig) -> None:
        self.config = config
        self.not_applicable = load_not_applicable(Path(config.not_applicable))
        self.writer = RecordWriter(Path(config.results), f"{config.model_type}-{config.device}")
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


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(OPTION, metavar="FILE", help="hf-neuron upstream: the run's configuration (JSON)")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed and call.excinfo is not None:
        report.user_properties.append((_FAILURE, describe_exception(call.excinfo.value)))
    return report


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption(OPTION)
    if path is None or hasattr(config, "workerinput"):  # not asked to record, or an xdist worker
        return
    config.pluginmanager.register(_Recorder(PluginConfig.read(Path(path))), "hf_neuron_upstream_recorder")
