"""Selection: catalog x scenarios narrowed by name, group, slice; unknown names and empty selections are errors
that say what is valid; `hf-neuron matrix list` prints what a run would run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _helpers_matrix import FAKE, FIXTURES, cli

from hf_neuron.compat.ranking import RankEntry, best_of_each_group, write_ranking
from hf_neuron.compat.slices import SLICES_PATH as SLICES_FILE
from hf_neuron.compat.slices import load_slices
from hf_neuron.errors import InputError
from hf_neuron.matrix.scenarios.contract import CaseContext, ScenarioResult
from hf_neuron.matrix.scenarios.registry import ScenarioDeclaration, ScenarioSet, load_scenarios
from hf_neuron.matrix.selection import TOP_RANKED_FEATURE, Architecture, Selection, read_catalog, select

CATALOG = [Architecture("llama", "decoder"), Architecture("gpt2", "decoder"), Architecture("t5", "encoder-decoder")]


def _passes(ctx: CaseContext) -> ScenarioResult:
    return ScenarioResult.passed()


def _scenarios(**groups: str) -> ScenarioSet:
    """Scenarios by name, each implemented for the library or group given."""
    return ScenarioSet({name: ScenarioDeclaration(name, "core", False, {group: _passes}, "it passes")
                        for name, group in groups.items()})


SCENARIOS = _scenarios(load="transformers", forward="transformers")


def _ids(selection: Selection, slices: Path = SLICES_FILE) -> list[str]:
    return [case.case_id for case in select(CATALOG, SCENARIOS, selection, slices)]


def test_order_is_catalog_then_scenario_and_filters_intersect() -> None:
    assert _ids(Selection()) == ["llama::load", "llama::forward", "gpt2::load", "gpt2::forward", "t5::load",
                                 "t5::forward"]
    assert _ids(Selection(archs=("t5", "llama"), scenarios=("forward",))) == ["llama::forward", "t5::forward"]
    assert _ids(Selection(group="encoder-decoder")) == ["t5::load", "t5::forward"]


@pytest.mark.parametrize(
    ("selection", "message"),
    [
        (Selection(archs=("lama",)), r"--arch: unknown architecture 'lama' \(did you mean 'llama'\?\); "
                                     r"valid \(3\): llama, gpt2, t5"),
        (Selection(scenarios=("train",)), r"--scenario: unknown scenario 'train'; valid \(2\): load, forward"),
        (Selection(group="diffusion"), 'the selection is empty: .*"group": "diffusion".* matches no case'),
        (Selection(archs=("t5",), group="decoder"), "the selection is empty: .* matches no case"),
    ],
)
def test_bad_selections_say_what_is_valid(selection: Selection, message: str) -> None:
    with pytest.raises(InputError, match=message):
        _ids(selection)


def test_an_unknown_name_among_many_gets_suggestions_the_count_and_how_to_list_them_not_the_list() -> None:
    catalog = [Architecture(f"arch{i:02d}", "decoder") for i in range(40)] + [Architecture("llama", "decoder")]
    with pytest.raises(InputError) as error:
        select(catalog, SCENARIOS, Selection(archs=("lama", "zzz")), SLICES_FILE)
    assert str(error.value) == (
        "--arch: unknown architecture 'lama' (did you mean 'llama'?), 'zzz'; 41 architectures are known; "
        "`hf-neuron matrix list --architectures` lists them"
    )
    assert "arch07" not in str(error.value)
    many = _scenarios(**{f"s{i}": "transformers" for i in range(13)})
    with pytest.raises(InputError, match=r"^--scenario: unknown scenario 's20' \(did you mean .*\); 13 scenarios are "
                       r"known; `hf-neuron matrix list` lists the cases \(architecture::scenario\)$"):
        select(catalog, many, Selection(scenarios=("s20",)), SLICES_FILE)


def test_slices(tmp_path: Path) -> None:
    slices = tmp_path / "slices.toml"
    slices.write_text('[small]\ndescription = "two"\narchitectures = ["gpt2", "t5"]\n'
                      '[broken]\ndescription = "x"\narchitectures = ["llama", "mamba"]\n')
    assert _ids(Selection(slice="small", scenarios=("load",)), slices) == ["gpt2::load", "t5::load"]
    with pytest.raises(InputError, match=r"--slice: unknown slice 'ci'; valid \(2\): small, broken"):
        _ids(Selection(slice="ci"), slices)
    with pytest.raises(InputError, match="slice 'broken' lists mamba, which the catalog does not have"):
        _ids(Selection(slice="broken"), slices)
    slices.write_text('[small]\narchitectures = ["gpt2"]\n')
    with pytest.raises(InputError, match=r"slices\.toml:1: \[small\]: must have the keys description, arch"):
        load_slices(slices)


def test_the_ci_slice_is_a_dozen_causal_lm_architectures_across_families() -> None:
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    (ci,) = [s for name, s in load_slices(SLICES_FILE).items() if name == "ci"]
    assert len(ci.architectures) == 12
    assert set(ci.architectures) <= set(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES)


def test_catalog_files_are_checked(tmp_path: Path) -> None:
    assert read_catalog(FIXTURES / "catalog.json")[-1] == Architecture("delta", "encoder-decoder")
    bad = tmp_path / "catalog.json"
    for text, message in [("{", "not valid JSON"), ('{"schema": 7}', "schema must be 1")]:
        bad.write_text(text)
        with pytest.raises(InputError, match=f"^{bad}: {message}"):
            read_catalog(bad)


def test_scenario_modules_are_checked(tmp_path: Path) -> None:
    assert load_scenarios(str(FIXTURES / "fake_scenarios.py")).names == ("load", "forward")
    module = tmp_path / "mine.py"
    module.write_text("SCENARIOS = {'warp': print}\n")
    with pytest.raises(InputError, match="must define SCENARIOS, a non-empty sequence of ScenarioDeclaration"):
        load_scenarios(str(module))
    module.write_text("from hf_neuron.matrix.scenarios.registry import ScenarioDeclaration as D\n"
                      "SCENARIOS = [D('warp', 'core', True, {'audio-video': print}, 'it warps')]\n")
    with pytest.raises(InputError, match=r"'warp': implementations for \['audio-video'\], which are neither"):
        load_scenarios(str(module))
    module.write_text("from hf_neuron.matrix.scenarios.registry import ScenarioDeclaration as D\n"
                      "SCENARIOS = [D('warp', 'core', True, {'diffusers': print}, 'it warps')] * 2\n")
    with pytest.raises(InputError, match="declares 'warp' twice"):
        load_scenarios(str(module))
    module.write_text("RUN = {}\n")
    with pytest.raises(InputError, match="must define SCENARIOS"):
        load_scenarios(str(module))
    with pytest.raises(InputError, match=r"scenario module 'no\.such\.module' not found"):
        load_scenarios("no.such.module")


def test_list_prints_case_ids_and_errors_exit_2() -> None:
    listed = cli("list", *FAKE, "--arch", "delta", "alpha", "--scenario", "forward")
    assert listed.returncode == 0 and listed.stdout.split() == ["alpha::forward", "delta::forward"]
    assert "2 cases" in listed.stderr
    wrong = cli("list", *FAKE, "--arch", "alpah")
    assert wrong.returncode == 2
    assert wrong.stderr.startswith("hf-neuron matrix: error: --arch: unknown architecture 'alpah' (did you mean")
    names = cli("list", *FAKE, "--arch", "delta", "alpha", "--architectures")
    assert names.returncode == 0 and names.stdout.split() == ["alpha", "delta"] and "2 architectures" in names.stderr


def test_a_scenario_has_cases_only_for_the_groups_it_applies_to() -> None:
    cases = select(CATALOG, _scenarios(load="transformers", forward="decoder"), Selection(), SLICES_FILE)
    assert [case.case_id for case in cases] == ["llama::load", "llama::forward", "gpt2::load", "gpt2::forward",
                                                "t5::load"]
    assert {case.facts["kind"] for case in cases} == {"core"}, "each case carries what its record says of it"


def test_the_builtin_scenarios_give_transformers_groups_every_scenario_and_diffusion_its_ten() -> None:
    declared = load_scenarios()
    builtin = {name: declared[name] for name in declared if "tiny" in declared[name].models}
    every = ["load", "forward", "generate", "train", "lora", "bf16", "compile", "save", "ddp", "generate_compiled"]
    trl = {"decoder": ["sft", "dpo", "grpo"], "image-text": ["sft"]}  # TRL's trainers: language models only
    moe = frozenset({"router-logits", "sdpa", "flex-attention"})
    for group in ("audio", "decoder", "encoder-decoder", "image-text"):  # one body each, the same for every group
        extras = trl.get(group, [])
        assert [name for name in builtin if builtin[name].implementation(group, frozenset())] == [
            *every[:-1], *extras, every[-1]]
        assert [name for name in builtin if builtin[name].implementation(group, moe)] == [
            *every[:-1], *extras, "sdpa", "flex_attention", "generate_compiled", "train_aux_loss"]
        shared = [name for name in builtin if name not in ("generate", *trl["decoder"])]
        assert {builtin[name].implementation(group, moe) for name in shared} == {
            builtin[name].implementation("decoder", moe) for name in shared}
    assert [name for name in builtin if builtin[name].implementation("decoder", {TOP_RANKED_FEATURE})] == [
        *every[:-1], *trl["decoder"], "trl_cli", every[-1]], "TRL's command line: the best-ranked decoders only"
    assert [name for name in builtin if builtin[name].implementation("diffusion", moe)] == [
        "load", "forward", "generate", "train", "lora", "bf16", "compile", "save", "ddp", "tp"]


def test_the_best_ranked_of_each_group_have_the_top_ranked_feature(tmp_path: Path) -> None:
    groups = {"llama": "decoder", "gpt2": "decoder", "qwen2": "decoder", "llava": "image-text",
              "t5": "encoder-decoder"}
    names = ["gpt2", "gemma", "llava", "qwen2", "llama"]
    ranked = [RankEntry(name, rank, "test") for rank, name in enumerate(names, 1)]
    assert best_of_each_group(groups, 2, ranked) == {"gpt2", "qwen2", "llava"}, "gemma: not in the catalog"
    assert best_of_each_group(groups, 0, ranked) == frozenset()
    ranking = write_ranking([RankEntry("beta", 1, "test"), RankEntry("delta", 2, "test")], tmp_path / "ranking.csv")
    features = {a.model_type: a.features for a in read_catalog(FIXTURES / "catalog.json", ranking)}
    assert {name for name, found in features.items() if TOP_RANKED_FEATURE in found} == {"beta", "delta"}
    top = [case.case_id for case in select(list(read_catalog(FIXTURES / "catalog.json", ranking)),
                                           load_scenarios(), Selection(scenarios=("trl_cli",)), SLICES_FILE)]
    assert top == ["beta::trl_cli"], "a decoder's scenario: delta is an encoder-decoder"


def test_an_entry_that_does_not_build_becomes_untested_cases_with_its_reason(tmp_path: Path) -> None:
    catalog = json.loads((FIXTURES / "catalog.json").read_text())
    catalog["architectures"][1].update(builds=False, reason="config: ValueError: heads do not divide")
    catalog["architectures"][0].update(runs=False, reason="needs audio features", gap="inputs")
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps(catalog))
    architectures = {a.model_type: a for a in read_catalog(path)}
    assert architectures["alpha"].untested is None
    assert architectures["alpha"].reviewed_gap == ("inputs", "needs audio features")
    assert architectures["beta"].untested == (
        "tiny-build", "the tiny model does not build on the CPU: config: ValueError: heads do not divide")
    [case] = select(list(architectures.values()), _scenarios(load="transformers"), Selection(archs=("beta",)),
                    SLICES_FILE)
    assert case.untested == architectures["beta"].untested
    catalog["architectures"][0].update(gap="data")
    path.write_text(json.dumps(catalog))
    with pytest.raises(InputError, match=r"architectures\[0\] \(alpha\) has gap 'data'; gaps are inputs, pipeline"):
        read_catalog(path)
