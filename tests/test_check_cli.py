"""``hf-neuron check MODEL`` as a user runs it: the plan and the slice's verdicts in a table or one JSON object, and
its exit status — 0 when nothing failed on neuron, 1 when something did (a case that fails on neuron only, a
quantization that does not run there), 2 on bad input — each with the input that makes it so."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _helpers import run_cli
from test_matrix_mutation import linear_off_by

from hf_neuron.cli.check import check
from hf_neuron.vocabulary.exits import EXIT_FAILURES, EXIT_OK, EXIT_USAGE

#: A Qwen2-like decoder, narrow enough for a test (width 256), with a tied 4096-token vocabulary, stated bfloat16.
SMALL: dict[str, Any] = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 256, "intermediate_size": 512,
    "num_hidden_layers": 24, "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 4096,
    "max_position_embeddings": 2048, "tie_word_embeddings": True, "torch_dtype": "bfloat16", "bos_token_id": 4000,
    "eos_token_id": 4001, "rope_theta": 1000000.0,
}
#: What ``--json`` gives at least.
KEYS = {"model", "model_type", "parameters", "active_parameters", "memory", "neuron_cores", "verdicts"}


def _folder(tmp_path: Path, config: dict[str, Any], name: str = "org--small") -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def _check(folder: Path, *extra: str) -> Any:
    return check(str(folder), seq=512, batch=1, lora_rank=8, layers=2, max_gb=None, plan_only=False, as_json=True,
                 scenarios=list(extra), profile="trainium", timeout=600, results=None)


def test_the_cost_estimate_is_printed_and_in_the_json(tmp_path: Path) -> None:
    """``--cost`` prints the estimate's table (labelled an estimate, with its assumptions); ``--json`` carries it
    under ``cost`` for every family, with the fields the issue asks for."""
    result = run_cli(["check", str(_folder(tmp_path, SMALL)), "--plan-only", "--cost", "--json", "--batch", "4"])
    assert result.returncode == EXIT_OK, result.stderr[-3000:]
    assert "ESTIMATE     price-performance at 2048 tokens x 4 (not a measurement" in result.stderr
    assert "trn2   assumes: estimate, not a measurement: Trainium2" in result.stderr
    cost = json.loads(result.stdout)["cost"]
    assert set(cost) == {"trn2", "trn3", "h100", "h200"}
    assert set(cost["h100"]) >= {"devices", "prefill_tokens_per_s", "decode_tokens_per_s",
                                 "decode_tokens_per_s_batch", "train_tokens_per_s", "usd_per_hour",
                                 "usd_per_million_output_tokens", "assumptions"}
    assert cost["h100"]["decode_tokens_per_s_batch"] > cost["h100"]["decode_tokens_per_s"] > 0
    assert cost["h100"]["usd_per_million_output_tokens"] > 0
    assert cost["trn2"]["usd_per_hour"] is None and cost["trn2"]["devices"] == 1  # no sourced trn2 price
    without = run_cli(["check", str(_folder(tmp_path, SMALL, "plain")), "--plan-only"])
    assert without.returncode == EXIT_OK and "ESTIMATE" not in without.stdout


@pytest.mark.slow
def test_a_checkpoint_is_planned_and_its_slice_passes(tmp_path: Path) -> None:
    result = run_cli(["check", str(_folder(tmp_path, SMALL)), "--json", "--seq", "512"])
    assert result.returncode == EXIT_OK, result.stderr[-3000:]
    found = json.loads(result.stdout)
    assert set(found) >= KEYS and (found["model"], found["model_type"]) == ("org--small", "qwen2")
    assert isinstance(found["parameters"], int) and found["active_parameters"] is None
    assert set(found["memory"]) == {"inference", "full_fine_tune", "lora"}
    assert set(found["neuron_cores"]) == {"trn2", "trn3"}
    assert found["neuron_cores"]["trn2"]["inference"] == {"cores": 1, "chips": 1, "instances": 1}
    assert found["verdicts"] == dict.fromkeys(["forward", "backward", "generate", "compile", "dtype"], "passed")
    assert found["backend"] == "reference" and found["profile"] == "trainium"
    assert "forward    pass" in result.stderr and "parameters" in result.stderr  # the table goes to stderr


@pytest.mark.slow
def test_a_slice_that_fails_on_neuron_only_exits_1(tmp_path: Path) -> None:
    folder = _folder(tmp_path, SMALL)
    assert _check(folder, "forward") == EXIT_OK
    with linear_off_by(1e-3):
        assert _check(folder, "forward") == EXIT_FAILURES


@pytest.mark.slow
def test_a_slice_that_fails_on_the_cpu_too_is_listed_not_counted(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    folder = _folder(tmp_path, {"model_type": "gpt2", "n_embd": 256, "n_head": 4, "n_layer": 12, "n_positions": 8,
                                "vocab_size": 4096})
    assert _check(folder, "forward") == EXIT_OK  # 12 tokens of input past 8 positions: an index error everywhere
    found = json.loads(capsys.readouterr().out)
    assert found["verdicts"] == {"forward": "fails-on-cpu-too"}
    assert found["cases"][0]["cpu_verdict"] == "fails-on-cpu-too"


@pytest.mark.slow
def test_a_slice_over_the_memory_budget_is_untested(tmp_path: Path) -> None:
    result = run_cli(["check", str(_folder(tmp_path, SMALL)), "--json", "--max-gb", "0.001", "--scenario", "forward"])
    assert result.returncode == EXIT_OK, result.stderr[-3000:]
    found = json.loads(result.stdout)
    assert found["verdicts"] == {"forward": "untested"} and found["cases"][0]["gap"] == "memory-budget"
    assert "to train (does NOT fit)" in result.stderr and "not training (does NOT fit); budget 0.0 GiB" in result.stderr


@pytest.mark.slow
def test_a_slice_too_big_to_train_still_runs_what_does_not_train(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from hf_neuron.checkpoint.instances import GIB
    from hf_neuron.checkpoint.slice import BYTES_PER_PARAMETER, BYTES_PER_PARAMETER_INFERENCE, plan_slice
    from hf_neuron.checkpoint.source import resolve

    folder = _folder(tmp_path, SMALL)
    smallest = plan_slice(resolve(str(folder)), budget=1)
    between = smallest.parameters * (BYTES_PER_PARAMETER + BYTES_PER_PARAMETER_INFERENCE) / 2 / GIB
    assert check(str(folder), seq=512, batch=1, lora_rank=8, layers=2, max_gb=between, plan_only=False,
                 as_json=True, scenarios=["forward", "backward"], profile="trainium", timeout=600,
                 results=None) == EXIT_OK
    said = capsys.readouterr()
    found = json.loads(said.out)
    assert found["verdicts"] == {"forward": "passed", "backward": "untested"}
    assert [case["gap"] for case in found["cases"] if case["scenario"] == "backward"] == ["memory-budget"]
    assert "to train (does NOT fit)" in said.err and "not training (fits)" in said.err


@pytest.mark.parametrize(("method", "status", "said"), [
    ("gptq", EXIT_FAILURES, "gptq: not-runnable: its quantized layers run gptqmodel's kernels"),
    ("mxfp4", EXIT_OK, "mxfp4: runs-dequantized: transformers runs MXFP4 on cuda, xpu or the CPU only"),
])
def test_a_quantized_checkpoint_names_its_method(tmp_path: Path, method: str, status: int, said: str) -> None:
    quantized = {**SMALL, "quantization_config": {"quant_method": method, "bits": 4}}
    result = run_cli(["check", str(_folder(tmp_path, quantized)), "--plan-only"])
    assert result.returncode == status, result.stderr[-3000:]
    assert said in result.stdout


@pytest.mark.parametrize(("argument", "message"), [
    ("absent/config.json", "no such file or folder"),
    ("bad.json", "not valid JSON"),
    ("unknown", "model_type 'no_such_type' is not a model type of the installed transformers"),
    ("org/not-cached", "is not in the local Hugging Face cache"),
])
def test_bad_input_exits_2_saying_what_to_do(tmp_path: Path, argument: str, message: str) -> None:
    (tmp_path / "bad.json").write_text("{")
    (tmp_path / "unknown").mkdir()
    (tmp_path / "unknown" / "config.json").write_text('{"model_type": "no_such_type"}')
    path = argument if argument == "org/not-cached" else str(tmp_path / argument)
    result = run_cli(["check", path], env={"HF_HUB_CACHE": str(tmp_path / "cache")})
    assert result.returncode == EXIT_USAGE and message in result.stderr, result.stderr[-2000:]
    assert result.stderr.startswith("hf-neuron check: error: ")


@pytest.mark.slow
def test_a_slice_that_fails_on_neuron_only_under_the_trainium_profile(tmp_path: Path) -> None:
    """Granite Speech's projector attends a batch of 1 learned queries to a batch of windows; under the trainium
    profile scaled_dot_product_attention takes the device's fused kernel (TorchNeuron's selection), whose meta
    function gives the query's batch, so ``torch.compile(backend="neuron")`` fails tracing the projector. The CPU
    parity profile (the CPU's kernel choice) compiles it: the slice fails on neuron only, and only under the
    profile that predicts Trainium."""
    from hf_neuron.tiny.transformers.config import tiny_config

    folder = _folder(tmp_path, json.loads(tiny_config("granite_speech").to_json_string()))
    outcomes = {}
    for profile in ("trainium", "cpu-parity"):
        result = run_cli(["check", str(folder), "--json", "--scenario", "compile", "--profile", profile])
        assert result.stdout, result.stderr[-3000:]
        found = json.loads(result.stdout)
        failure = found["cases"][0]["failure"]
        outcomes[profile] = (result.returncode, found["verdicts"], failure and failure["failure_class"])
    assert outcomes == {"trainium": (EXIT_FAILURES, {"compile": "fails-on-neuron"}, "compile"),
                        "cpu-parity": (EXIT_OK, {"compile": "passed"}, None)}


@pytest.mark.slow
def test_a_slices_compiled_decoding_is_held_to_its_graph_budget(tmp_path: Path) -> None:
    """The checkpoint lane's graphs per generation: the slice's ``generate`` holds its compiled decoding to the graph
    budget the tiny models' ``generate_compiled`` does."""
    from hf_neuron.report.load import load_records
    from hf_neuron.vocabulary.records import GRAPH_BUDGET, GRAPHS_PER_GENERATION

    results = tmp_path / "results"
    status = check(str(_folder(tmp_path, SMALL)), seq=512, batch=1, lora_rank=8, layers=2, max_gb=None,
                   plan_only=False, as_json=True, scenarios=["generate"], profile="trainium", timeout=600,
                   results=results)
    assert status == EXIT_OK
    (record,) = [r for r in load_records([results]).records if r["scenario"] == "generate"]
    budget = {leg["name"]: leg for leg in record["legs"]}[GRAPH_BUDGET]
    assert budget["outcome"] == "passed" and budget["details"][GRAPHS_PER_GENERATION] == {"6": 1, "10": 1}, budget
