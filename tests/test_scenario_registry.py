"""Each scenario declared once: the declarations and the scenario functions agree both ways, and a scenario declared
in a module of its own reaches `hf-neuron matrix list`, a run's records and the report like a built-in one."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest
from _helpers_matrix import FIXTURES, cli, raw_records

from hf_neuron.compat.baselines import BASELINE_PATH, load_baseline
from hf_neuron.matrix.scenarios import checkpoint, ddp, diffusion, text, training, trl_cli, trl_trainers
from hf_neuron.matrix.scenarios.contract import CaseContext, ScenarioResult
from hf_neuron.matrix.scenarios.registry import load_scenarios
from hf_neuron.report.site import build_site
from hf_neuron.vocabulary.records import SCHEMA_VERSION

#: The modules that hold scenario functions.
SCENARIO_MODULES = (text, training, ddp, diffusion, checkpoint, trl_trainers, trl_cli)


def _scenario_functions() -> set[object]:
    """Every public function of the scenario modules that takes a case and returns a scenario result."""
    found = set()
    for module in SCENARIO_MODULES:
        for name, function in vars(module).items():
            if name.startswith("_") or not inspect.isfunction(function) or function.__module__ != module.__name__:
                continue
            hints = inspect.signature(function)
            parameters = list(hints.parameters.values())
            if len(parameters) == 1 and parameters[0].annotation in ("CaseContext", CaseContext) and (
                    hints.return_annotation in ("ScenarioResult", ScenarioResult)):
                found.add(function)
    return found


def test_every_declared_implementation_is_a_scenario_function_and_every_one_is_declared() -> None:
    declared = {function for name in load_scenarios() for function in load_scenarios()[name].implementations.values()}
    assert declared == _scenario_functions()


def test_a_scenario_function_nobody_declared_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    def orphan(ctx: CaseContext) -> ScenarioResult:
        return ScenarioResult.passed()

    orphan.__module__ = text.__name__
    monkeypatch.setattr(text, "orphan", orphan, raising=False)
    declared = {f for name in load_scenarios() for f in load_scenarios()[name].implementations.values()}
    assert _scenario_functions() - declared == {orphan}


_OWN_MODULE = '''
from hf_neuron.matrix.scenarios.contract import CaseContext, ScenarioResult
from hf_neuron.matrix.scenarios.registry import ScenarioDeclaration

import fake_scenarios  # the runner's fake scenarios, beside this module


def warp(ctx: CaseContext) -> ScenarioResult:
    """A scenario of one's own: it trains, it is not core."""
    return ScenarioResult.passed()


SCENARIOS = (*fake_scenarios.SCENARIOS,
             ScenarioDeclaration("warp", "extra", True, {"transformers": warp}, "it warps"))
'''


def test_a_scenario_declared_in_a_module_of_its_own_reaches_the_list_the_records_and_the_report(
        tmp_path: Path) -> None:
    module = tmp_path / "my_scenarios.py"
    module.write_text(_OWN_MODULE)
    (tmp_path / "fake_scenarios.py").write_text((FIXTURES / "fake_scenarios.py").read_text())
    options = ["--catalog", str(FIXTURES / "catalog.json"), "--scenario-module", str(module), "--arch", "alpha"]
    listed = cli("list", *options, env={"PYTHONPATH": str(tmp_path)})
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split() == ["alpha::load", "alpha::forward", "alpha::warp"]
    results = tmp_path / "results"
    run = cli("run", *options, "--results", str(results), env={"PYTHONPATH": str(tmp_path)})
    assert run.returncode == 0, run.stderr
    warp = next(record for record in raw_records(results) if record["scenario"] == "warp")
    assert (warp["outcome"], warp["scenario_facts"]) == (
        "passed", {"kind": "extra", "trains": True, "decodes": False})
    assert [s["name"] for s in warp["env"]["scenarios"]] == ["load", "forward", "warp"]
    site = tmp_path / "site"
    build_site([results], site, baseline=load_baseline(BASELINE_PATH))
    index = (site / "index.html").read_text()
    assert ">warp</th>" in index, "the report shows the scenario's column"
    matrix = (site / "downloads" / "matrix.csv").read_text().splitlines()[0].split(",")
    assert "warp" in matrix
    assert json.loads((site / "downloads" / "records.jsonl").read_text().splitlines()[0])["schema"] == SCHEMA_VERSION
