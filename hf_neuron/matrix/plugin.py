"""The pytest plugin of the matrix suite: cases as tests, records, crashes, timeouts, resume, progress.

``matrix/conftest.py`` loads it. Every process reads the options and computes the same selected cases.

* The **controller** (the process you started) opens the results directory (a new run, or ``--resume``: cases
  with a record are deselected), hands the run id, the environment block and the already-recorded cases to each
  worker it starts (so a replacement worker collects exactly what the first ones did), shows progress, and
  records the case a worker was running when it died (``crashed``).
* Each **worker** (pytest-xdist) runs its cases with :class:`~hf_neuron.matrix.case.execute.CaseRunner`, which writes
  each record to the worker's own file the moment the case ends, then reports the outcome to pytest.

Without xdist (``-n 0``) one process does both, and a crash ends the run (``--resume`` continues it):
``hf-neuron matrix run`` always uses workers. See :mod:`hf_neuron.matrix.case.isolation` for the design.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import time
from collections.abc import Callable, Generator
from pathlib import Path
from typing import IO, Any

import pytest

from hf_neuron.compat.known_failures import KnownFailures
from hf_neuron.errors import InputError
from hf_neuron.matrix.case.execute import CaseRunner
from hf_neuron.matrix.case.isolation import (
    describe_exit,
    harden_worker,
    read_fatal_error,
)
from hf_neuron.matrix.case.observe import watch_torch_compile
from hf_neuron.matrix.case.verdict import Attempt, to_record
from hf_neuron.matrix.options import MatrixConfig, add_options
from hf_neuron.matrix.profiles import apply_profile
from hf_neuron.matrix.progress import Progress
from hf_neuron.matrix.results import environment
from hf_neuron.matrix.results.store import RecordWriter, now_iso, open_run, read_records
from hf_neuron.matrix.results.summary import summarize
from hf_neuron.matrix.scenarios.registry import load_scenarios
from hf_neuron.matrix.selection import Case
from hf_neuron.matrix.workdir import SliceLedger, create_workdir, remove_workdir
from hf_neuron.settings import SettingError
from hf_neuron.vocabulary.failures import failure
from hf_neuron.vocabulary.records import Env, Record

__all__ = ["CASE_PARAM", "PROPERTY"]

#: The test parameter holding a :class:`~hf_neuron.matrix.selection.Case`.
CASE_PARAM = "matrix_case"
#: Key of the worker input this plugin adds, and of the user property a case's report carries.
PROPERTY = "hf_neuron_matrix"
#: The ``when`` of the report xdist makes for the test a dead worker was running.
_CRASH_REPORT = "???"
_CRASH_WAIT_S = 5.0


def _crash_log(workdir: Path, worker_id: str) -> Path:
    """Where worker ``worker_id``'s faulthandler writes if the worker dies of a fatal signal."""
    return workdir / "crash" / f"{worker_id}.log"


@dataclasses.dataclass
class _Run:
    """What every process of the run knows."""

    config: MatrixConfig
    cases: list[Case]
    pending: list[Case]
    run_id: str
    env: Env
    workdir: Path
    known: KnownFailures
    runner: CaseRunner | None = None
    crash_log: IO[str] | None = None


_RUN = pytest.StashKey[_Run]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("hf-neuron matrix", "the compatibility matrix (see `hf-neuron matrix run --help`)")
    add_options(group.addoption, "pytest", ("select", "run"))


def _distributed(config: pytest.Config) -> bool:
    return config.getoption("dist", "no") != "no" and bool(config.getoption("tx", None))


def _runner(config: MatrixConfig, run: _Run, process: str) -> CaseRunner:
    return CaseRunner(
        scenarios=load_scenarios(config.scenario_module),
        known=run.known,
        writer=RecordWriter(config.results, process),
        run_id=run.run_id,
        env=run.env,
        device=config.device,
        timeout_s=config.timeout_s,
        workdir=run.workdir,
        ledger=SliceLedger(run.workdir, run.pending),
    )


def _start_controller(pytest_config: pytest.Config, config: MatrixConfig, cases: list[Case]) -> _Run:
    known = config.read_data_files()  # every data file is read and checked before the first case runs
    apply_profile(config.profile, os.environ)  # before any worker (or this process's first case) imports torch
    scenarios = load_scenarios(config.scenario_module)
    env = environment.collect(config.profile, scenarios.named(config.selection.scenarios))
    environment.require_backend(config.device, env)
    if pytest_config.option.collectonly:
        run_id, done = "collect-only", set[str]()
    else:
        manifest, done = open_run(
            config.results, resume=config.resume, run_id=config.run_id,
            selection=config.selection.as_json(), device=config.device,
        )
        run_id = manifest.run_id
    pending = [case for case in cases if case.case_id not in done]
    if not pending:
        pytest.exit(f"all {len(cases)} selected cases already have records in {config.results}: nothing to run", 0)
    run = _Run(config, cases, pending, run_id, env, create_workdir(), known)
    if not _distributed(pytest_config) and not pytest_config.option.collectonly:
        run.runner = _runner(config, run, "main")
    controller = _Controller(run, done, collecting=pytest_config.option.collectonly)
    pytest_config.pluginmanager.register(controller, "hf-neuron-matrix-controller")
    return run


def _start_worker(config: MatrixConfig, cases: list[Case], worker_input: dict[str, Any]) -> _Run:
    given = worker_input[PROPERTY]
    done = set(given["done"])
    pending = [case for case in cases if case.case_id not in done]
    known = config.known()
    run = _Run(config, cases, pending, given["run_id"], given["env"], Path(given["workdir"]), known)
    run.runner = _runner(config, run, worker_input["workerid"])
    return run


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    try:
        matrix = MatrixConfig.from_values(vars(config.option))
        cases = matrix.cases()
        worker_input = getattr(config, "workerinput", None)
        if worker_input is None:
            config.stash[_RUN] = _start_controller(config, matrix, cases)
        else:
            config.stash[_RUN] = _start_worker(matrix, cases, worker_input)
    except (InputError, SettingError) as exc:
        raise pytest.UsageError(str(exc)) from exc


def pytest_sessionstart(session: pytest.Session) -> None:
    """Harden a worker (after pytest's own faulthandler set-up, which would take over the crash log); wherever cases
    run, note what ``torch.compile`` is asked for."""
    worker_input = getattr(session.config, "workerinput", None)
    run = session.config.stash.get(_RUN, None)
    if worker_input is not None and run is not None:
        run.crash_log = harden_worker(_crash_log(run.workdir, worker_input["workerid"]))
    if run is not None and run.runner is not None:
        watch_torch_compile()


def pytest_unconfigure(config: pytest.Config) -> None:
    run = config.stash.get(_RUN, None)
    if run is None:
        return
    if run.runner is not None:
        run.runner.writer.close()
    if run.crash_log is not None:
        run.crash_log.close()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if CASE_PARAM in metafunc.fixturenames:
        pending = metafunc.config.stash[_RUN].pending
        metafunc.parametrize(CASE_PARAM, pending, ids=[case.test_id for case in pending])


def _report(record: Record) -> None:
    """Tell pytest what the record says (the record is already written): a pass only for a record that passed."""
    outcome, failure = record["outcome"], record["failure"]
    if outcome == "skipped":
        pytest.skip(record["reason"] or "")
    if outcome == "untested":  # the harness could not test it: never shown as a pass
        pytest.skip(f"untested ({record['gap']}): {record['reason'] or ''}")
    if outcome == "known-failure":
        pytest.xfail(record["reason"] or "")
    if failure is not None:
        first_line = (failure["message"].splitlines() or [""])[0]
        pytest.fail(f"{outcome} [{failure['failure_class']}] {failure['type']}: {first_line}", pytrace=False)


@pytest.fixture
def run_matrix_case(request: pytest.FixtureRequest) -> Callable[[Case], None]:
    """Runs a case through the worker's :class:`CaseRunner` and reports its record's outcome to pytest."""
    run = request.config.stash[_RUN]
    assert run.runner is not None, "cases run in workers (or in the one process of -n 0)"
    runner = run.runner

    def run_case(case: Case) -> None:
        record = runner.run(case)
        summary = {"case_id": case.case_id, "outcome": record["outcome"], "duration_s": record["duration_s"]}
        request.node.user_properties.append((PROPERTY, summary))
        _report(record)

    return run_case


@pytest.hookimpl(wrapper=True)
def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> Generator[None, Any, Any]:
    """No per-test letters on the terminal: the progress bar or lines stand for them."""
    status = yield
    is_case = report.when == _CRASH_REPORT or PROPERTY in dict(report.user_properties)
    if is_case and isinstance(status, tuple) and len(status) == 3:
        category, _, word = status
        return category, "", word
    return status


def _returncode(node: Any) -> int | None:
    """The exit status of a dead xdist worker (its ``popen`` gateway's process), if it can be had."""
    popen: subprocess.Popen[bytes] | None = getattr(getattr(node.gateway, "_io", None), "popen", None)
    if popen is None:
        return None
    try:
        return popen.wait(timeout=_CRASH_WAIT_S)
    except subprocess.TimeoutExpired:
        return None


class _Controller:
    """Hooks of the process that started the run: workers' inputs, crashed cases, progress, summary."""

    def __init__(self, run: _Run, done: set[str], collecting: bool) -> None:
        self._run = run
        self._done = done
        self._collecting = collecting
        self._by_test_id = {case.test_id: case for case in run.cases}
        self._started: dict[str, tuple[str, float]] = {}
        self._crashed: dict[str, Record] = {}
        self._progress: Progress | None = None

    def _case(self, nodeid: str) -> Case | None:
        if not nodeid.endswith("]") or "[" not in nodeid:
            return None
        return self._by_test_id.get(nodeid[nodeid.rindex("[") + 1 : -1])

    def pytest_sessionstart(self) -> None:
        if not self._collecting:
            self._progress = Progress(len(self._run.cases), done=len(self._run.cases) - len(self._run.pending))

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[PROPERTY] = {
            "run_id": self._run.run_id,
            "env": self._run.env,
            "done": sorted(self._done),
            "workdir": str(self._run.workdir),
        }

    def pytest_runtest_logstart(self, nodeid: str) -> None:
        self._started[nodeid] = (now_iso(), time.monotonic())

    def _crash_record(self, case: Case, nodeid: str, node: Any) -> Record:
        crash_log = _crash_log(self._run.workdir, node.gateway.id)
        fatal = read_fatal_error(crash_log)
        crash_log.unlink(missing_ok=True)
        status = describe_exit(_returncode(node))
        message = f"the worker process died running this case ({status})"
        info = (failure("WorkerCrash", message, outcome="crashed") if fatal is None
                else failure("WorkerCrash", f"{message}: {fatal.message}", fatal.frame, fatal.dump, outcome="crashed"))
        started_at, start = self._started.get(nodeid, (now_iso(), time.monotonic()))
        return to_record(
            case, Attempt("crashed", failure=info), cpu=None, known=self._run.known, run_id=self._run.run_id,
            env=self._run.env, started_at=started_at, finished_at=now_iso(), duration_s=time.monotonic() - start,
        )

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: Any) -> None:
        """Record the case a worker died running, unless the worker recorded it first (a stuck case's timeout)."""
        case = self._case(crashitem)
        if case is None:
            return
        results = self._run.config.results
        record = next((r for r in read_records(results) if r["case_id"] == case.case_id), None)
        if record is None:
            record = self._crash_record(case, crashitem, getattr(report, "node"))  # noqa: B009 - set by xdist
            writer = RecordWriter(results, "controller")
            try:
                writer.write(record)
            finally:
                writer.close()
        self._crashed[crashitem] = record
        failure = record["failure"]
        report.longrepr = f"{record['outcome']}: {failure['message'] if failure else record['reason']}"

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        case = self._case(report.nodeid)
        if case is None or self._progress is None:
            return
        if report.when == "teardown":
            props: dict[str, Any] | None = dict(report.user_properties).get(PROPERTY)  # type: ignore[assignment]
            if props is not None:
                self._progress.update(case.case_id, props["outcome"], props["duration_s"])
        elif report.when == _CRASH_REPORT and report.nodeid in self._crashed:
            record = self._crashed[report.nodeid]
            self._progress.update(case.case_id, record["outcome"], record["duration_s"])

    def pytest_sessionfinish(self) -> None:
        if self._progress is not None:
            self._progress.close()

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self._collecting:
            return
        records = read_records(self._run.config.results)
        summary = summarize(records, [case.case_id for case in self._run.cases])
        terminalreporter.write_sep("-", f"hf-neuron matrix: run {self._run.run_id}, {self._run.config.results}")
        for line in summary.lines():
            terminalreporter.write_line(line)

    def pytest_unconfigure(self) -> None:
        remove_workdir(self._run.workdir)
