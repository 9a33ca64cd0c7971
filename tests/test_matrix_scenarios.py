"""The scenario contract: parity against the CPU with the per-dtype tolerance, the shared tiny checkpoint, and
the built-in text scenarios on a tiny Llama, on the CPU (the runner's CPU re-run calls them the same way) and on
the reference device (which computes what the CPU does, exactly)."""

from __future__ import annotations

import dataclasses
import sys
import types
from pathlib import Path

import pytest
from _helpers_patches import pre_release_flex_attention

from hf_neuron.matrix.case.observe import watch_torch_compile
from hf_neuron.matrix.scenarios import text, text_models
from hf_neuron.matrix.scenarios.contract import (
    EXACT,
    TOLERANCES,
    CaseContext,
    ScenarioResult,
    compare,
    compare_named,
)
from hf_neuron.matrix.scenarios.registry import ScenarioDeclaration, load_scenarios
from hf_neuron.matrix.scenarios.text import _agree, compare_outputs
from hf_neuron.matrix.scenarios.text_models import NEW_TOKENS, disable_dropout
from hf_neuron.matrix.scenarios.training import STEPS
from hf_neuron.tiny.groups import Decoding, transformers_models
from hf_neuron.vocabulary.records import DEVICE_STEPS

torch = pytest.importorskip("torch")

SCENARIOS = load_scenarios()
VARIANT_SCENARIOS = SCENARIOS.of_kind("variant")
TRL = ("sft", "dpo", "grpo", "trl_cli")


def test_compare_uses_the_dtype_tolerance() -> None:
    expected = torch.tensor([1.0, -2.0, 3.0])
    assert compare(expected + 1e-5, expected, "logits").outcome == "passed"
    missed = compare(expected + 1e-2, expected, "logits")
    assert missed.outcome == "failed" and missed.parity_missed
    assert missed.parity["metric"] == "max_abs_diff_over_bound"
    assert missed.parity["tolerance"] == pytest.approx(TOLERANCES["float32"].bound(1.0))  # the worst: the smallest
    assert (missed.parity["compared"], missed.parity["positions"]) == (3, 3)
    assert missed.message.startswith("logits differ from the CPU's: 3 of 3 values beyond |a - e| <= 0.0001 + "
                                     "0.0001·|e| (float32); the worst 0.01")
    halves = expected.to(torch.bfloat16)
    assert compare(halves + 0.0078125, halves, "logits").outcome == "passed"  # one bfloat16 ulp at 1.0
    assert compare(halves * 1.03, halves, "logits").outcome == "failed"  # 3% off: rtol-dominant, 1.6e-2


def test_each_element_is_held_to_its_own_bound() -> None:
    # the old rule scaled the bound by the largest expected value: 1e6 let the small logit be off by 100
    expected = torch.tensor([1e6, 1.0, -0.5])
    result = compare(expected + torch.tensor([0.0, 0.01, 0.0]), expected, "logits")
    assert result.outcome == "failed", result
    assert "1 of 3 values beyond" in result.message and "(expected 1)" in result.message
    assert compare(expected + torch.tensor([50.0, 0.0, 0.0]), expected, "logits").outcome == "passed"  # 5e-5 of 1e6


def test_masked_logits_must_equal_and_the_rest_is_compared() -> None:
    low = torch.finfo(torch.float32).min  # chameleon masks its image tokens' logits with the float32 minimum
    expected = torch.tensor([[low, 2.0, low, -1.0]])
    assert compare(expected.clone(), expected, "logits").parity["compared"] == 2
    off = compare(expected + torch.tensor([[0.0, 0.01, 0.0, 0.0]]), expected, "logits")
    assert off.outcome == "failed", "one masked value used to make the bound 3.4e34: nothing was compared"
    assert off.parity["tolerance"] < 1e-3
    unmasked = expected.clone()
    unmasked[0, 0] = -1e30
    moved = compare(unmasked, expected, "logits")
    assert moved.outcome == "failed" and moved.message.startswith("logits: 1 of the 2 masked, infinite or NaN values")
    all_masked = torch.full((2, 3), low)
    nothing = compare(all_masked.clone(), all_masked, "logits")
    assert (nothing.outcome, nothing.gap) == ("untested", "checks"), "a comparison of masks alone checks nothing"
    assert "no value to hold to the tolerance" in nothing.message
    assert compare(all_masked.clone(), all_masked, "buffer", EXACT).outcome == "passed", "exact: equality is the check"


def test_a_large_gradient_loosens_no_other_tensor() -> None:
    expected = {"embed": torch.full((4,), 1e17), "head": torch.ones(4)}  # blip-2's tiny gradients reach 1e17
    close = {"embed": expected["embed"] * (1 + 1e-6), "head": torch.ones(4) + 1e-6}
    assert compare_named(close, expected, "gradient of").outcome == "passed"
    off = {"embed": expected["embed"].clone(), "head": torch.ones(4) + 0.05}
    failed = compare_named(off, expected, "gradient of")
    assert failed.outcome == "failed" and failed.message.startswith("gradient of head differ from the CPU's")
    inside = {"embed": torch.full((4,), 1e17), "head": torch.tensor([1.0, 1.0, 1.0, 1e17])}
    mixed = compare_named(inside, {"embed": inside["embed"], "head": torch.ones(4)}, "gradient of")
    assert mixed.outcome == "failed", "within one tensor, a large value loosens no other element either"


def test_compare_named_reports_the_worst_tensor_by_name() -> None:
    expected = {"a": torch.ones(3), "b": torch.ones(3) * 100}
    close = {"a": torch.ones(3) + 1e-6, "b": torch.ones(3) * 100 + 1e-3}
    result = compare_named(close, expected, "gradient of")
    assert result.outcome == "passed" and result.parity["value"] == pytest.approx(1e-3, rel=1e-3)
    off = {"a": torch.ones(3) + 1e-2, "b": expected["b"]}
    failed = compare_named(off, expected, "gradient of")
    assert failed.outcome == "failed" and failed.message.startswith("gradient of a differ from the CPU's")
    missing = compare_named({"a": expected["a"]}, expected, "gradient of")
    assert missing.outcome == "failed" and "1 missing on the device, e.g. b" in missing.message
    extra = compare_named({**expected, "c": torch.ones(1)}, expected, "gradient of")
    assert extra.outcome == "failed" and "1 on the device only, e.g. c" in extra.message
    shape = compare(torch.ones(2), torch.ones(3), "logits")
    assert shape.outcome == "failed" and shape.message == "logits have shape (2,), the CPU's (3,)"
    low = torch.finfo(torch.float32).min
    masked = {"mask": torch.full((2,), low), "a": torch.ones(2)}
    assert compare_named(dict(masked), masked, "buffer").outcome == "passed", "one tensor compared is a check"
    only_masks = compare_named({"mask": masked["mask"]}, {"mask": masked["mask"]}, "buffer")
    assert only_masks.outcome == "untested"


def test_exact_tolerates_nothing_and_names_its_reference() -> None:
    expected = torch.tensor([1.0, 2.0])
    assert compare(expected.clone(), expected, "logits", EXACT).outcome == "passed"
    result = compare(expected + 1e-7, expected, "logits", EXACT, reference="the saved model's")
    assert result.outcome == "failed"
    assert result.message.startswith("logits differ from the saved model's: 1 of 2 values differ (exact); the largest "
                                     "difference 1.19e-07 (expected 1)")
    assert "(exact)" in result.message


def test_infinities_and_nans_compare_as_values_and_records_stay_finite() -> None:
    inf, nan = float("inf"), float("nan")
    expected = torch.tensor([-inf, 1.0, nan, 2.0])  # e.g. a causal mask buffer, a NaN both sides produce
    same = compare(expected.clone(), expected, "buffers", EXACT)
    assert same.outcome == "passed" and same.parity == {"metric": "max_abs_diff_over_bound", "value": 0.0,
                                                        "tolerance": 0.0, "compared": 2, "positions": 4}
    assert compare(expected + torch.tensor([0.0, 1e-5, 0.0, 0.0]), expected, "logits").parity["tolerance"] > 0
    for device_value in (torch.tensor([0.0, 1.0, nan, 2.0]), torch.tensor([-inf, 1.0, 3.0, 2.0])):
        differs = compare(device_value, expected, "buffers", EXACT)
        assert differs.outcome == "failed" and differs.parity is None  # a record holds no inf or NaN
        assert differs.message == "buffers: 1 of the 2 masked, infinite or NaN values of the CPU's differ on the device"
    for device_value in (torch.tensor([-inf, inf, nan, 2.0]), torch.tensor([-inf, nan, nan, 2.0])):
        blown = compare(device_value, expected, "logits")
        assert blown.outcome == "failed" and blown.parity is None
        assert blown.message == "logits: 1 values are infinite or NaN on the device where the CPU's are finite"


def test_a_case_of_legs_passes_only_for_what_it_did() -> None:
    passed = ScenarioResult.passed({"metric": "max_abs_diff_over_bound", "value": 1.0, "tolerance": 4.0})
    worse = ScenarioResult.passed({"metric": "max_abs_diff_over_bound", "value": 3.0, "tolerance": 4.0})
    skipped = ScenarioResult.skipped("no static-cache decoding")
    both = ScenarioResult.of_legs([("default cache", passed), ("static cache", worse)])
    assert both.outcome == "passed" and both.parity["value"] == 3.0
    assert [(leg["name"], leg["outcome"]) for leg in both.legs] == [("default cache", "passed"),
                                                                    ("static cache", "passed")]
    one = ScenarioResult.of_legs([("default cache", passed), ("static cache", skipped)])
    assert one.outcome == "passed" and one.legs[1]["reason"] == "no static-cache decoding"
    none = ScenarioResult.of_legs([("static cache", skipped)])
    assert none.outcome == "skipped" and none.message == "static cache: no static-cache decoding"
    failed = ScenarioResult.of_legs([("default cache", ScenarioResult.failed("off")), ("static cache", passed)])
    assert failed.outcome == "failed" and failed.message == "off" and len(failed.legs) == 2
    untested = ScenarioResult.of_legs([("a", passed), ("b", ScenarioResult.untested("masks only", "checks"))])
    assert untested.outcome == "untested" and untested.gap == "checks"
    assert both.details is None, "no leg said how many steps it ran"
    counted = ScenarioResult.of_legs([("a", passed.with_details({DEVICE_STEPS: 4})),
                                      ("b", ScenarioResult.failed("off").with_details({"cache": "StaticCache",
                                                                                       DEVICE_STEPS: 3}))])
    assert counted.outcome == "failed" and counted.details == {"cache": "StaticCache", DEVICE_STEPS: 7}


def _greedy(tokens: list[list[int]], scores: list[list[list[float]]]) -> Decoding:
    return Decoding("neuron:0", torch.tensor(tokens), torch.tensor(scores), cache="DynamicCache")


def test_greedy_tokens_agree_unless_the_device_leaves_a_clear_choice() -> None:
    # two rows, two steps, a vocabulary of three; the CPU picked token 0 then 1 in both rows
    scores = [[[5.0, 1.0, 0.0], [5.0, 1.0, 0.0]], [[0.0, 3.0, 3.0], [0.0, 3.0, 1.0]]]
    cpu = _greedy([[0, 1], [0, 1]], scores)
    assert _agree(_greedy([[0, 1], [0, 1]], scores), cpu, TOLERANCES["float32"], "tokens").outcome == "passed"
    tie = _agree(_greedy([[0, 2], [0, 1]], scores), cpu, TOLERANCES["float32"], "tokens")  # row 0 step 1: a tie
    assert tie.outcome == "passed" and tie.parity["value"] == 0
    wrong = _agree(_greedy([[0, 1], [0, 2]], scores), cpu, TOLERANCES["float32"], "tokens")
    assert wrong.outcome == "failed" and wrong.parity["value"] == 1
    assert "row 1 step 1: token 2, the CPU's 1 (CPU score margin 2" in wrong.message


def test_greedy_scores_are_compared_up_to_the_first_different_token() -> None:
    scores = [[[5.0, 1.0, float("-inf")], [5.0, 1.0, float("-inf")]], [[0.0, 3.0, 3.0], [0.0, 3.0, 1.0]]]
    cpu = _greedy([[0, 1], [0, 1]], scores)
    off = [[[5.01, 1.0, float("-inf")], [5.0, 1.0, float("-inf")]], scores[1]]
    drifted = _agree(_greedy([[0, 1], [0, 1]], off), cpu, TOLERANCES["float32"], "tokens")
    assert drifted.outcome == "failed" and drifted.message.startswith("tokens scores differ from the CPU's")
    unsuppressed = [[[5.0, 1.0, 0.0], [5.0, 1.0, float("-inf")]], scores[1]]
    wrong = _agree(_greedy([[0, 1], [0, 1]], unsuppressed), cpu, TOLERANCES["float32"], "tokens")
    assert wrong.outcome == "failed" and "masked, infinite or NaN values of the CPU's differ" in wrong.message
    # a third step: row 0's tie at step 1 leaves the two sides decoding step 2 from different tokens (not compared),
    # but both decoded step 1 itself from the same ones: its scores are compared (the old code compared steps 0 only)
    three = [*scores, [[1.0, 2.0, 0.0], [1.0, 2.0, 0.0]]]
    cpu = _greedy([[0, 1, 1], [0, 1, 1]], three)
    after_the_tie = [*scores, [[9.0, 0.0, 0.0], [1.0, 2.0, 0.0]]]
    assert _agree(_greedy([[0, 2, 0], [0, 1, 1]], after_the_tie), cpu, TOLERANCES["float32"],
                  "tokens").outcome == "passed"
    at_the_tie = [scores[0], [[0.0, 3.0, 3.0], [0.0, 3.0, 2.5]], three[2]]  # row 1 of step 1 off on the device
    off_at_the_tie = _agree(_greedy([[0, 2, 0], [0, 1, 1]], at_the_tie), cpu, TOLERANCES["float32"], "tokens")
    assert off_at_the_tie.outcome == "failed" and off_at_the_tie.message.startswith("tokens scores differ")


def test_a_first_token_that_differs_at_a_tie_still_compares_its_scores() -> None:
    """The device's first token differs from the CPU's and the CPU calls it a tie: the old leg compared scores[:0],
    nothing, and passed 0/0; the first step's scores (same input on both sides) are compared now."""
    cpu = _greedy([[1]], [[[0.0, 3.0, 3.0]]])
    off = _agree(_greedy([[2]], [[[0.0, 3.0, 3.0 + 1e-7]]]), cpu, TOLERANCES["float32"], "tokens")
    assert off.outcome == "passed" and off.parity["compared"] == 3
    far = _agree(_greedy([[2]], [[[7.0, 3.0, 3.0 + 1e-7]]]), cpu, TOLERANCES["float32"], "tokens")
    assert far.outcome == "failed" and far.message.startswith("tokens scores differ from the CPU's")


def test_a_comparison_of_nothing_is_untested() -> None:
    """Empty tensors (and no tensor at all) compared nothing: the old compare passed them."""
    for empty in (torch.zeros(0), torch.zeros(2, 0, 5), torch.zeros(0, dtype=torch.long)):
        result = compare(empty, empty.clone(), "logits")
        assert (result.outcome, result.gap) == ("untested", "checks"), result
        assert "empty" in result.message
    assert compare_named({}, {}, "gradient of").outcome == "untested"
    assert compare_named({"w": torch.zeros(0)}, {"w": torch.zeros(0)}, "gradient of").outcome == "untested"
    assert compare_outputs({}, {}, "{}").outcome == "untested"
    beside = {"logits": torch.ones(2, 3), "empty": torch.zeros(0)}  # an empty output beside a compared one
    assert compare_outputs(beside, {k: v.clone() for k, v in beside.items()}, "{}").outcome == "passed"


def test_what_a_generation_makes_besides_tokens_is_compared_within_tolerance() -> None:
    """A model that makes a waveform (or codes, a spectrogram) instead of tokens: its outputs, by name."""
    waveform = torch.linspace(-1.0, 1.0, 8)
    cpu = Decoding("cpu", outputs={"waveform": waveform})
    close = Decoding("neuron:0", outputs={"waveform": waveform + 1e-6})
    assert _agree(close, cpu, TOLERANCES["float32"], "generation").outcome == "passed"
    off = _agree(Decoding("neuron:0", outputs={"waveform": waveform * 1.01}), cpu, TOLERANCES["float32"], "generation")
    assert off.outcome == "failed" and off.message.startswith("generation: waveform differ from the CPU's")
    renamed = _agree(Decoding("neuron:0", outputs={"codes": waveform}), cpu, TOLERANCES["float32"], "generation")
    assert renamed.outcome == "failed" and "['codes'], the CPU's ['waveform']" in renamed.message
    scores = [[[5.0, 1.0, 0.0]]]
    both = Decoding("cpu", torch.tensor([[0]]), torch.tensor(scores), {"waveform": waveform})
    wrong_token = dataclasses.replace(both, tokens=torch.tensor([[1]]))
    assert _agree(both, both, TOLERANCES["float32"], "generation").outcome == "passed"
    assert _agree(wrong_token, both, TOLERANCES["float32"], "generation").outcome == "failed"
    assert _agree(Decoding("cpu"), Decoding("cpu"), TOLERANCES["float32"], "generation").outcome == "failed"


def test_dropout_is_switched_off_everywhere_for_training() -> None:
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(vocab_size=64, n_embd=16, n_layer=1, n_head=2, resid_pdrop=0.5, embd_pdrop=0.5,
                        attn_pdrop=0.5)
    model = GPT2LMHeadModel(config).train()
    disable_dropout(model)
    ids = torch.randint(0, 64, (2, 8))
    assert torch.equal(model(ids).logits, model(ids).logits)
    assert all(m.p == 0 for m in model.modules() if isinstance(m, torch.nn.Dropout))
    assert (model.config.resid_pdrop, model.config.attn_pdrop) == (0.0, 0.0)


def test_spec_augment_masks_are_switched_off_for_training() -> None:
    """A speech encoder's SpecAugment masks come from numpy's generator, not torch's: two seeded training forwards
    differ until ``disable_dropout`` sets ``mask_time_prob`` and ``mask_feature_prob`` to 0."""
    from transformers import BertConfig, SpeechEncoderDecoderConfig, SpeechEncoderDecoderModel, Wav2Vec2Config

    def forward(model: torch.nn.Module) -> torch.Tensor:
        torch.manual_seed(0)
        values = torch.sin(torch.arange(4000.0)).repeat(2, 1)
        return model(input_values=values, decoder_input_ids=torch.tensor([[1, 2, 3]] * 2)).logits

    encoder = Wav2Vec2Config(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
                             conv_dim=(8, 8), conv_stride=(5, 4), conv_kernel=(10, 4), num_conv_pos_embeddings=4,
                             num_conv_pos_embedding_groups=2, mask_time_prob=0.5, mask_time_length=2,
                             mask_feature_prob=0.5, mask_feature_length=2, hidden_dropout=0.0, attention_dropout=0.0,
                             activation_dropout=0.0, feat_proj_dropout=0.0, layerdrop=0.0, final_dropout=0.0)
    decoder = BertConfig(vocab_size=32, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=32, is_decoder=True, add_cross_attention=True)
    config = SpeechEncoderDecoderConfig.from_encoder_decoder_configs(encoder, decoder)
    config.decoder_start_token_id, config.pad_token_id = 1, 0
    model = SpeechEncoderDecoderModel(config).train()
    assert not torch.equal(forward(model), forward(model)), "SpecAugment is on: seeded forwards must differ"
    disable_dropout(model)
    assert torch.equal(forward(model), forward(model))
    assert (model.config.encoder.mask_time_prob, model.config.encoder.mask_feature_prob) == (0.0, 0.0)


def test_a_scenario_runs_its_groups_implementation_or_its_librarys() -> None:
    def text(ctx: CaseContext) -> ScenarioResult:
        return ScenarioResult.skipped(f"text {ctx.model_type}")

    def vision(ctx: CaseContext) -> ScenarioResult:
        return ScenarioResult.skipped(f"vision {ctx.model_type}")

    scenario = ScenarioDeclaration("load", "core", False, {"transformers": text, "image-text": vision}, "it does")
    assert scenario.implementation("decoder") is text and scenario.implementation("diffusion") is None
    assert scenario.implementation("image-text") is vision, "a group's own implementation comes before its library's"
    assert scenario.groups() == ("audio", "decoder", "encoder-decoder", "image-text")
    assert scenario(CaseContext("llama", "decoder", "load", "cpu", Path("."))).message == "text llama"
    with pytest.raises(KeyError, match="no implementation for group 'diffusion'"):
        scenario(CaseContext("UNet2DModel", "diffusion", "load", "cpu", Path(".")))


@pytest.mark.parametrize("scenario", ["generate", "generate_compiled", "bf16"])
def test_decoding_is_skipped_for_a_model_class_without_generate(scenario: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A model that predicts no tokens (PI0ForConditionalGeneration, a robot-action policy, has no ``generate``):
    decoding does not apply; bf16 still checks its logits (here: they pass, as the fake's logits are the CPU's)."""

    class Policy(torch.nn.Module):
        logits = torch.zeros(1, 1, 4)

        def forward(self, **inputs: object) -> types.SimpleNamespace:
            return types.SimpleNamespace(logits=self.logits)

    monkeypatch.setattr(text, "load_model", lambda ctx, device, **config: Policy())
    monkeypatch.setattr(text, "sample_ids", lambda ctx, model: torch.zeros(1, 1, dtype=torch.long))
    monkeypatch.setattr(text, "forward_outputs", lambda model, input_ids, seed: {"logits": model().logits})
    result = getattr(text, scenario)(CaseContext("pi0", "image-text", scenario, "cpu", Path(".")))
    if scenario == "bf16":
        assert result.outcome == "passed"
    else:
        assert (result.outcome, result.message) == ("skipped", "Policy has no generate method: decoding does not "
                                                               "apply to it")


def test_a_checkpoint_is_built_once_per_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[Path] = []

    def materialize(model_type: str, out_dir: Path, *, seed: int = 0, **built_from: object) -> Path:
        out_dir.mkdir(parents=True)
        (out_dir / "config.json").write_text(model_type)
        built.append(out_dir)
        return out_dir

    fake = types.ModuleType("hf_neuron.tiny.transformers.checkpoint")
    fake.materialize = materialize  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "hf_neuron.tiny.transformers.checkpoint", fake)
    ctx = CaseContext("llama", "decoder", "forward", "neuron", tmp_path)
    first, second = ctx.checkpoint, ctx.on("cpu").checkpoint
    assert first == second == tmp_path / "checkpoints" / "llama"
    assert (first / "config.json").read_text() == "llama" and len(built) == 1
    assert [p.name for p in (tmp_path / "checkpoints").iterdir()] == ["llama"]  # no staging left behind


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workdir holding a tiny Llama where the runner's checkpoint cache expects it."""
    from transformers import LlamaConfig, LlamaForCausalLM

    workdir = tmp_path_factory.mktemp("workdir")
    config = LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=32)
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(workdir / "checkpoints" / "llama")
    return workdir


@pytest.mark.slow
@pytest.mark.parametrize("device", ["cpu", "neuron"])
# ddp: test_matrix_ddp.py; TRL's (on a checkpoint with its tokenizer, which this tiny Llama has not): test_matrix_trl.py
@pytest.mark.parametrize("scenario", sorted(name for name in set(SCENARIOS.names) - {"ddp", *VARIANT_SCENARIOS, *TRL}
                                             if SCENARIOS[name].implementation("decoder") is not None
                                             and "tiny" in SCENARIOS[name].models))
def test_builtin_text_scenarios_pass_with_exact_parity(tiny_llama: Path, scenario: str, device: str) -> None:
    allocations = torch.neuron.memory_stats()["allocation"]["allocated"]
    result = SCENARIOS[scenario](CaseContext("llama", "decoder", scenario, device, tiny_llama))
    assert result.outcome == "passed", result.message
    assert result.parity is not None
    if scenario == "generate" and device == "neuron":  # its compiled decoding against the CPU's eager one: the
        assert result.parity["value"] < 1e-6, result.parity  # graphs' decompositions round apart by an ulp or so
    else:
        assert result.parity["value"] == 0.0, result.parity
    ran_on_neuron = torch.neuron.memory_stats()["allocation"]["allocated"] > allocations
    assert ran_on_neuron == (device == "neuron")
    steps = {"train": 1 + STEPS, "lora": 1 + STEPS, "bf16": NEW_TOKENS,
             "generate": 2 * NEW_TOKENS}  # generate: the default and the static cache's legs (compiled: the static's)
    assert (result.details or {}).get(DEVICE_STEPS) == steps.get(scenario), "the steps the report divides calls by"


def test_a_model_declaring_no_static_cache_decoding_is_compiled_only_by_generate_compiled(
        tiny_llama: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """transformers' own tests' rule: a class whose ``_can_compile_fullgraph`` is False is not tested with a static
    cache (old models build causal masks a static cache does not fit). generate's static leg does not apply (blt's,
    xlm's, kosmos-2's failed on both devices); its default cache's is still held to the CPU. generate_compiled still
    compiles its static-cache decoding, as ``generate`` does for a user who asks for one (84 classes that declare
    none passed it in nightly-20261206)."""
    from transformers import LlamaForCausalLM

    monkeypatch.setattr(LlamaForCausalLM, "_can_compile_fullgraph", False)
    result = SCENARIOS["generate"](CaseContext("llama", "decoder", "generate", "neuron", tiny_llama))
    assert result.outcome == "passed", result.message
    assert [(leg["name"], leg["outcome"]) for leg in result.legs] == [
        ("default cache", "passed"), ("static cache", "skipped"), ("compiled decoding", "skipped")]
    assert "_can_compile_fullgraph is False" in (result.legs[1]["reason"] or "")
    compiled = SCENARIOS["generate_compiled"](CaseContext("llama", "decoder", "generate_compiled", "neuron",
                                                          tiny_llama))
    assert compiled.outcome == "passed", compiled.message
    assert compiled.legs[0]["details"]["graphs"] >= 1, compiled.legs


@pytest.mark.parametrize("scenario", ["load", "forward", "train", "lora", "bf16", "compile"])
def test_a_model_that_stays_on_the_cpu_fails_a_neuron_case(tiny_llama: Path, scenario: str,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    original = text_models.load_model
    monkeypatch.setattr(text_models, "load_model", lambda ctx, device, **kwargs: original(ctx, "cpu", **kwargs))
    from hf_neuron.matrix.scenarios import text, training

    for module in (text, training):
        monkeypatch.setattr(module, "load_model", text_models.load_model, raising=False)
    result = SCENARIOS[scenario](CaseContext("llama", "decoder", scenario, "neuron", tiny_llama))
    assert result.outcome == "failed" and "not on neuron" in (result.message or ""), result.message


def test_compile_that_compiled_nothing_is_no_pass(tiny_llama: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """torch.compile that traces no graph (here: one that hands the model back) runs eager code: the old scenario
    compared eager with eager and passed; decoding's compiled leg holds to the same rule (not applicable there)."""
    from hf_neuron.matrix.scenarios.text import graphs_compiled, nothing_compiled

    ctx = CaseContext("llama", "decoder", "compile", "neuron", tiny_llama)
    compiled = SCENARIOS["compile"](ctx)
    assert compiled.outcome == "passed", compiled.message
    monkeypatch.setattr(torch, "compile", lambda model, **kwargs: model)
    result = SCENARIOS["compile"](ctx)
    assert (result.outcome, result.gap) == ("untested", "checks"), result.message
    assert "compiled no graph of the forward pass" in (result.message or "")
    passed, failed = ScenarioResult.passed(), ScenarioResult.failed("off")
    assert graphs_compiled(passed, 2, nothing_compiled("x")) is passed
    assert graphs_compiled(failed, 0, nothing_compiled("x")) is failed
    assert graphs_compiled(passed, 0, nothing_compiled("x")).outcome == "untested"


def test_the_variants_on_neuron(tiny_llama: Path) -> None:
    ctx = CaseContext("llama", "decoder", "sdpa", "neuron", tiny_llama)
    sdpa = SCENARIOS["sdpa"](ctx)
    assert sdpa.outcome == "passed" and sdpa.parity["value"] == 0.0, sdpa.message
    flex = SCENARIOS["flex_attention"](dataclasses.replace(ctx, scenario="flex_attention"))
    assert flex.outcome == "passed" and flex.parity["value"] < 1e-6, flex.message  # 2.34 runs it (the switch)
    with pre_release_flex_attention(), pytest.raises(
            NotImplementedError, match=r"flex_attention' needs Inductor .* attn_implementation='sdpa'"):
        SCENARIOS["flex_attention"](ctx)
    compiled = SCENARIOS["generate_compiled"](ctx)  # CompileConfig() compiles with the device's backend
    assert compiled.outcome == "passed" and compiled.parity["value"] < 1e-6, compiled.message
    assert [(leg["name"], (leg["details"] or {}).get("graphs")) for leg in compiled.legs] == [("compiled decoding", 1),
                                                                                             ("graph budget", None)]
    budget = compiled.legs[1]["details"] or {}  # 5 and 9 decoding steps after the prompt's: one graph each
    assert budget["graphs_per_generation"] == {str(NEW_TOKENS): 1, str(text.BUDGET_TOKENS): 1}, budget
    assert budget["recompiles"] == 0 and budget["recompile_reasons"] == [], budget
    rerun = SCENARIOS["generate_compiled"](ctx.on("cpu"))  # a neuron case's CPU re-run compiles as the device does
    assert rerun.outcome == "passed", rerun.message
    on_cpu = SCENARIOS["generate_compiled"](CaseContext("llama", "decoder", "generate_compiled", "cpu", tiny_llama))
    assert on_cpu.outcome == "skipped" and "without compiling anything" in (on_cpu.message or ""), on_cpu.message
    not_moe = SCENARIOS["train_aux_loss"](ctx)
    assert not_moe.outcome == "skipped" and "not a mixture of experts" in (not_moe.message or "")


def test_the_graph_budget_fails_a_decoding_that_recompiles_every_token(tiny_llama: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The input that breaks the budget: a Python int that every decoding step reads and changes (what
    StaticSlidingWindowLayer's ``cumulative_length_int`` is), which Dynamo guards on, so each token compiles a graph;
    the tokens still agree with the CPU's."""
    original = text_models.load_model

    def counting_steps(ctx: CaseContext, device: str, **kwargs: object) -> object:
        model = original(ctx, device, **kwargs)
        norm = model.model.norm

        class CountingNorm(type(norm)):  # type: ignore[misc]
            def forward(self, hidden: torch.Tensor) -> torch.Tensor:
                self.seen += 1
                return super().forward(hidden)

        norm.seen, norm.__class__ = 0, CountingNorm
        return model

    monkeypatch.setattr(text, "load_model", counting_steps)
    watch_torch_compile()  # Dynamo's recompilation messages, as a matrix worker collects them
    result = SCENARIOS["generate_compiled"](CaseContext("llama", "decoder", "generate_compiled", "neuron", tiny_llama))
    compiled, budget = result.legs
    assert compiled["outcome"] == "passed" and compiled["details"]["graphs"] == NEW_TOKENS - 1, compiled
    assert result.outcome == "failed" and budget["outcome"] == "failed", result
    longer = budget["details"]["graphs_per_generation"][str(text.BUDGET_TOKENS)]
    assert longer > NEW_TOKENS - 1 and budget["details"]["recompiles"] >= longer - 1, budget
    assert ".seen ==" in budget["details"]["recompile_reasons"][0], budget  # Dynamo's guard, named
    assert (result.message or "").startswith(f"compiled decoding recompiles as it decodes: "
                                             f"{NEW_TOKENS - 1} graphs for {NEW_TOKENS} new tokens, {longer} for "
                                             f"{text.BUDGET_TOKENS}"), result.message


def test_the_language_model_hooks_are_logits_greedy_tokens_and_the_prompt_as_labels(tiny_llama: Path) -> None:
    """What the transformers scenarios ask of a group (:class:`hf_neuron.tiny.groups.TransformersModels`), as every
    language-model group answers it (:mod:`hf_neuron.tiny.transformers.outputs`)."""
    from hf_neuron.tiny.groups import TransformersModels
    from hf_neuron.vocabulary.groups import groups_of

    hooks = [name for name in vars(TransformersModels) if not name.startswith("_")]
    assert {"forward_outputs", "decode", "training_inputs", "no_training_loss"} <= set(hooks)
    missing = {group: [hook for hook in hooks if not callable(getattr(transformers_models(group), hook, None))]
               for group in groups_of("transformers")}
    assert missing == {group: [] for group in groups_of("transformers")}
    ctx = CaseContext("llama", "decoder", "forward", "cpu", tiny_llama)
    model = text_models.load_model(ctx, "cpu")
    input_ids = text_models.sample_ids(ctx, model)
    outputs = text_models.forward_outputs(model, input_ids, seed=ctx.seed)
    assert list(outputs) == ["logits"] and torch.equal(outputs["logits"], model(input_ids=input_ids).logits)
    decoded = text_models.greedy(model, input_ids, seed=ctx.seed)
    assert decoded.tokens is not None and tuple(decoded.tokens.shape) == (text_models.BATCH, text_models.NEW_TOKENS)
    assert decoded.scores is not None and decoded.scores.shape[:2] == (text_models.NEW_TOKENS, text_models.BATCH)
    assert decoded.outputs == {} and decoded.device == "cpu"
    batch = text_models.training_inputs(model, {"input_ids": input_ids})
    assert batch["labels"] is input_ids and text_models.no_training_loss(model) is None


def _on_neuron(tensor: torch.Tensor) -> bool:
    return tensor.device.type == "neuron"


def test_forward_compares_every_output_the_group_names(tiny_llama: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = transformers_models("decoder")
    original = package.forward_outputs
    scale = {"neuron": 1.0}

    def with_waveform(model: object, inputs: dict[str, torch.Tensor], seed: int) -> dict[str, torch.Tensor]:
        found = original(model, inputs, seed=seed)  # type: ignore[arg-type]
        logits = found["logits"]
        return {**found, "waveform": logits.sum(-1) * (scale["neuron"] if _on_neuron(logits) else 1.0)}

    monkeypatch.setattr(package, "forward_outputs", with_waveform)
    ctx = CaseContext("llama", "decoder", "forward", "neuron", tiny_llama)
    assert SCENARIOS["forward"](ctx).outcome == "passed"
    scale["neuron"] = 1.01
    off = SCENARIOS["forward"](ctx)
    assert off.outcome == "failed" and (off.message or "").startswith("waveform differ from the CPU's"), off.message
    compiled = SCENARIOS["compile"](ctx)  # the compiled and the eager model are both on neuron: the same waveform
    assert compiled.outcome == "passed", compiled.message


def test_training_takes_the_groups_labels_and_its_reason_for_no_loss(tiny_llama: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    package = transformers_models("decoder")
    original = package.training_inputs

    def shifted_on_neuron(model: object, inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        batch = original(model, inputs)  # type: ignore[arg-type]
        labels = batch["labels"]
        return {**batch, "labels": labels.roll(1, dims=1) if _on_neuron(labels) else labels}

    monkeypatch.setattr(package, "training_inputs", shifted_on_neuron)
    ctx = CaseContext("llama", "decoder", "train", "neuron", tiny_llama)
    wrong_labels = SCENARIOS["train"](ctx)
    assert wrong_labels.outcome == "failed" and (wrong_labels.message or "").startswith("loss differ"), \
        wrong_labels.message
    monkeypatch.setattr(package, "no_training_loss", lambda model: "Llama here computes no loss")
    for scenario in ("train", "lora"):
        result = SCENARIOS[scenario](dataclasses.replace(ctx, scenario=scenario))
        assert (result.outcome, result.message) == ("skipped", "Llama here computes no loss"), scenario


def test_ddp_ranks_report_that_a_model_has_no_training_loss(tiny_llama: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rank asks the group before stepping (here in this process, a group of one), and the scenario does not
    apply when the ranks say so."""
    import torch.distributed as dist

    from hf_neuron.matrix.scenarios import ddp as ddp_module

    monkeypatch.setattr(transformers_models("decoder"), "no_training_loss", lambda model: "no loss here")
    request = {"model_type": "llama", "group": "decoder", "scenario": "ddp", "workdir": str(tiny_llama), "seed": 0,
               "out": str(tiny_llama), "parts": "hf_neuron.matrix.scenarios.text_models"}
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        report = ddp_module.rank_step(request, "cpu")
    finally:
        dist.destroy_process_group()
    assert report == {"rank": 0, "no_training_loss": "no loss here"}

    class Ranks:
        def run(self, request: object, timeout: float) -> list[dict[str, object]]:
            return [report, {**report, "rank": 1}]

    monkeypatch.setattr(ddp_module, "_serving", lambda device_type, workdir: Ranks())
    result = ddp_module.ddp(CaseContext("llama", "decoder", "ddp", "neuron", tiny_llama))
    assert (result.outcome, result.message) == ("skipped", "no loss here")


@pytest.mark.parametrize("model_type", ["mamba", "falcon_h1"])
def test_lora_targets_leave_out_the_linear_layers_peft_refuses_on_a_mamba(model_type: str, tmp_path: Path) -> None:
    """PEFT's "all-linear" picks Mamba's out_proj and then refuses it ("Please remove it from `target_modules`"):
    the group's targets are every other linear layer, which PEFT accepts; a transformer keeps "all-linear"."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from hf_neuron.tiny.transformers.checkpoint import materialize
    from hf_neuron.tiny.transformers.inputs import lora_targets

    model = AutoModelForCausalLM.from_pretrained(materialize(model_type, tmp_path / model_type))
    with pytest.raises(ValueError, match="is incompatible with Mamba-based models"):
        get_peft_model(model, LoraConfig(target_modules="all-linear"))
    model = AutoModelForCausalLM.from_pretrained(materialize(model_type, tmp_path / model_type))
    targets = lora_targets(model)
    assert isinstance(targets, list) and "out_proj" not in targets and "in_proj" in targets, targets
    adapted = get_peft_model(model, LoraConfig(target_modules=targets))
    assert any("lora_A" in name for name, _ in adapted.named_parameters())
    llama = AutoModelForCausalLM.from_pretrained(materialize("llama", tmp_path / "llama"))
    assert lora_targets(llama) == "all-linear"


def test_a_flex_attention_case_is_held_to_the_cpus_eager_attention(tiny_llama: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Dynamo is reset before the device compiles its FlexAttention; the CPU's reference is the model's eager
    attention, never torch's FlexAttention on the CPU (whose Inductor template corrupts memory for some shapes)."""
    from hf_neuron.matrix.scenarios import text

    calls: list[str] = []
    reset, load = text.fresh_dynamo, text.load_model

    def loading(ctx: CaseContext, device: str, **config: object) -> object:
        calls.append(f"{device}:{config.get('attn_implementation', 'own')}")
        return load(ctx, device, **config)  # type: ignore[arg-type]

    monkeypatch.setattr(text, "fresh_dynamo", lambda: (calls.append("reset"), reset())[1])
    monkeypatch.setattr(text, "load_model", loading)
    result = SCENARIOS["flex_attention"](CaseContext("llama", "decoder", "flex_attention", "neuron", tiny_llama))
    assert result.outcome == "passed", result.message
    assert calls == ["reset", "neuron:flex_attention", "cpu:own"], calls


def test_a_flex_attention_case_on_the_cpu_computes_it_as_the_device_does(tiny_llama: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The re-run on the CPU (whether a device failure fails there too) computes FlexAttention densely, as the device
    does, never through Inductor (whose C++ template crashed doge's re-run, and gave T5's batch-broadcast bias another
    error than the device's); outside the case, torch.compile's default backend is Inductor again."""
    import torch

    def refused(*args: object, **kwargs: object) -> object:
        raise AssertionError("Inductor compiled a graph of the CPU's FlexAttention")

    monkeypatch.setattr(torch._TorchCompileInductorWrapper, "__call__", refused)
    result = SCENARIOS["flex_attention"](CaseContext("llama", "decoder", "flex_attention", "cpu", tiny_llama))
    assert result.outcome == "passed", result.message
    assert torch._TorchCompileInductorWrapper.__call__ is refused


def test_a_case_writes_where_its_cpu_rerun_does_but_for_the_device_type(tmp_path: Path) -> None:
    """An error naming a file a case wrote fingerprints the same on the device and in the CPU re-run (qwen2_5_omni's
    save: "<dir> does not appear to have a file named spk_dict.pt"); at random names the two would differ."""
    from hf_neuron.vocabulary.failures import fingerprint

    on_device = CaseContext("qwen2_5_omni", "audio", "save", "neuron", tmp_path)
    with on_device.scratch() as directory:
        (directory / "config.json").touch()
    assert not directory.exists(), "removed when the case is done"
    with on_device.scratch() as again:
        assert again == directory and not any(again.iterdir()), "the same directory, empty"
    message = "{} does not appear to have a file named spk_dict.pt. Checkout 'https://huggingface.co/{}/tree/main'"
    cpu = on_device.on("cpu").scratch_path
    assert cpu != directory
    assert (fingerprint("OSError", message.format(directory, directory), "hub.py:cached_files")
            == fingerprint("OSError", message.format(cpu, cpu), "hub.py:cached_files"))
    assert CaseContext("llama", "decoder", "save", "neuron", tmp_path).scratch_path != directory
