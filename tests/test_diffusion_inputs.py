"""The reviewed input specs of compat/tiny_diffusion.toml: what the reader accepts and refuses, and what each kind of
spec builds from a backbone's config (sizes as expressions, fills, ranges, lists, concatenations, dicts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hf_neuron.compat.tiny_diffusion import EXPRESSION_NAMES, INPUT_KINDS, InputSpec, load_recipes
from hf_neuron.errors import InputError
from hf_neuron.tiny import UnbuildableInputError
from hf_neuron.tiny.diffusion.backbones import BATCH, FRAMES, LATENT_SIZE, TEXT_LENGTH
from hf_neuron.tiny.diffusion.inputs import _Shape, build_spec, evaluate

torch = pytest.importorskip("torch")

SHAPE = _Shape({"in_channels": 4, "patch_size": 2, "layers": [0, 3, 5], "width": 8}, "image")


def _spec(text: str, tmp_path: Path) -> InputSpec:
    path = tmp_path / "tiny_diffusion.toml"
    path.write_text(f'[backbones.X]\nreason = "r"\n{text}\n')
    return next(iter(load_recipes(path)["X"].inputs.values()))


def test_sizes_are_integers_or_expressions_over_the_config_and_the_harness_sizes() -> None:
    names = SHAPE.names()
    assert set(EXPRESSION_NAMES) <= set(names)
    assert (names["batch"], names["frames"], names["size"], names["text"]) == (BATCH, FRAMES, LATENT_SIZE, TEXT_LENGTH)
    assert names["tokens"] == (LATENT_SIZE // 2) ** 2
    assert evaluate(3, names) == 3
    assert evaluate("2 * in_channels + 1", names) == 9
    assert evaluate("len(layers) + max(layers) - min(layers) // 1 + sum(layers)", names) == 3 + 5 + 8
    assert evaluate("size // patch_size * width", names) == LATENT_SIZE // 2 * 8
    with pytest.raises(UnbuildableInputError, match="names 'hidden_size': neither a config argument"):
        evaluate("hidden_size * 2", names)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ('inputs.x = { fill = 1, randn = true, shape = [2] }', "takes one of randn, fill"),
        ('inputs.x = { fill = 1, colour = "red" }', "takes one of randn, fill"),
        ('inputs.x = { dtype = "float64", fill = 1 }', "dtype must be one of float32, long, int32, bool"),
        ('inputs.x = { dtype = "long" }', "draws random normal values: give its 'shape'"),
        ('inputs.x = { shape = ["__import__(\'os\')"] }', "only len, max, min, sum may be called"),
        ('inputs.x = { shape = ["batch.real"] }', "Attribute is not allowed"),
        ('inputs.x = { shape = ["2 ** 8"] }', "Pow is not allowed"),
        ('inputs.x = { shape = [1.5] }', "a size is an integer or an expression string"),
        ('inputs.x = { shape = ["batch +"] }', "invalid syntax"),
        ('inputs.x = { randint = [0] }', r"randint = \[low, high\]"),
        ('inputs.x = { fill = true }', "fill is a number"),
        ('inputs.x = { omit = false }', "omit = true"),
        ('inputs.x = { items = [] }', "items is a list of input specs"),
        ('inputs.x = { concat = [{ fill = 1 }, { colour = 1 }] }', r"inputs.x.concat\[1\]: takes one of"),
        ('inputs.x = { fill = 1, dim = 1 }', "dim \\(an integer\\) goes with concat"),
        ('inputs.x = { rule = 3 }', "rule names the parameter whose generic rule builds it"),
    ],
)
def test_a_malformed_input_spec_names_the_table_and_the_problem(tmp_path: Path, spec: str, message: str) -> None:
    path = tmp_path / "tiny_diffusion.toml"
    path.write_text(f'[backbones.X]\nreason = "r"\n{spec}\n')
    with pytest.raises(InputError, match=message):
        load_recipes(path)


def test_inputs_without_a_reason_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "tiny_diffusion.toml"
    path.write_text('[backbones.X]\ninputs.x = { fill = 1 }\n')
    with pytest.raises(InputError, match=r"\[backbones.X\] reason: changes the config, layout or inputs: say why"):
        load_recipes(path)


def test_each_kind_builds_its_value_from_the_config(tmp_path: Path) -> None:
    generator = torch.Generator().manual_seed(0)

    def build(text: str) -> object:
        return build_spec(_spec(text, tmp_path), SHAPE, generator)

    normal = build('inputs.x = { shape = ["batch", "in_channels * 2"] }')
    assert isinstance(normal, torch.Tensor) and normal.shape == (BATCH, 8) and normal.dtype == torch.float32
    assert torch.equal(build('inputs.x = { fill = 3, dtype = "long" }'), torch.full((BATCH,), 3))
    ids = build('inputs.x = { randint = [0, "in_channels"], shape = [64], dtype = "long" }')
    assert isinstance(ids, torch.Tensor) and ids.dtype == torch.long and int(ids.min()) >= 0 and int(ids.max()) < 4
    assert torch.equal(build('inputs.x = { arange = [1, "1 + in_channels"] }'), torch.arange(1, 5.0))
    rows = build('inputs.x = { arange = [0, 3], shape = ["batch", 3], dtype = "long" }')
    assert torch.equal(rows, torch.arange(3).expand(BATCH, 3))  # type: ignore[arg-type]
    assert torch.equal(build('inputs.x = { tensor = [[1, 2]], dtype = "long" }'), torch.tensor([[1, 2]]))
    per_item = build('inputs.x = { tensor = [6.0, 127.0], shape = ["batch", 2] }')  # a row that follows the batch
    assert torch.equal(per_item, torch.tensor([[6.0, 127.0]] * BATCH))  # type: ignore[arg-type]
    assert build('inputs.x = { int = "size // patch_size" }') == LATENT_SIZE // 2
    assert build('inputs.x = { value = { 0 = [[0, 16]] } }') == {0: [[0, 16]]}  # int keys for a per-sample mapping
    assert build('inputs.x = { value = "extract" }') == "extract"
    listed = build('inputs.x = { shape = ["in_channels"], count = "len(layers)" }')
    assert isinstance(listed, list) and [t.shape for t in listed] == [(4,)] * 3
    assert not torch.equal(listed[0], listed[1])  # each drawn anew
    items = build('inputs.x = { items = [{ arange = [0, "frames"] }, { fill = 0, shape = [2] }] }')
    assert isinstance(items, list) and torch.equal(items[0], torch.arange(FRAMES).float()) and items[1].shape == (2,)
    joined = build('inputs.x = { concat = [{ fill = 1, shape = ["batch", 2] }, { fill = 0, shape = ["batch", 3] }], '
                   'dim = 1, dtype = "bool" }')
    assert isinstance(joined, torch.Tensor) and joined.dtype == torch.bool and joined.shape == (BATCH, 5)
    assert joined[:, :2].all() and not joined[:, 2:].any()
    fields = build('inputs.x = { fields = { mask = { fill = 1, shape = [2], dtype = "bool" }, n = { int = "3" } } }')
    assert isinstance(fields, dict) and fields["n"] == 3 and fields["mask"].dtype == torch.bool
    ids_rule = build('inputs.x = { concat = [{ rule = "txt_ids" }, { rule = "img_ids" }] }')
    assert isinstance(ids_rule, torch.Tensor) and ids_rule.shape == (TEXT_LENGTH + SHAPE.tokens, 3)
    with pytest.raises(UnbuildableInputError, match="no input rule named 'nope'"):
        build('inputs.x = { rule = "nope" }')


def test_every_kind_the_reader_knows_is_described() -> None:
    header = (Path(__file__).resolve().parents[1] / "compat" / "tiny_diffusion.toml").read_text().split("\n\n")[0]
    assert all(kind in header for kind in INPUT_KINDS)


def test_the_batch_is_a_parameter_of_the_input_rules_and_of_reviewed_shapes() -> None:
    from hf_neuron.tiny.diffusion import inputs as input_rules
    from hf_neuron.tiny.diffusion.backbones import build_backbone
    from hf_neuron.tiny.diffusion.inputs import forward_inputs

    flux = build_backbone("FluxTransformer2DModel")
    three = forward_inputs(flux, batch=3)
    assert three["hidden_states"].shape[0] == three["encoder_hidden_states"].shape[0] == 3
    assert three["img_ids"].shape == forward_inputs(flux)["img_ids"].shape  # positions hold no batch
    assert forward_inputs(flux)["hidden_states"].shape[0] == BATCH and input_rules.BATCH == BATCH
    video = build_backbone("UNetSpatioTemporalConditionModel")  # a reviewed shape ["batch", 3] and video latents
    rows = forward_inputs(video, batch=3)
    assert rows["added_time_ids"].shape == (3, 3) and rows["sample"].shape[0] == 3


def test_an_sdxl_unet_gets_its_added_conditions_from_its_config() -> None:
    """SDXL's UNet (``addition_embed_type`` "text_time") reads a pooled text embedding and micro-conditioning time ids
    from ``added_cond_kwargs``: without them its forward raises on every device, and the checkpoint lane's SDXL slices
    "failed on the CPU too"."""
    from diffusers import UNet2DConditionModel

    from hf_neuron.tiny.diffusion.inputs import forward_inputs

    unet = UNet2DConditionModel(
        sample_size=8, block_out_channels=(32, 64), layers_per_block=1, cross_attention_dim=32,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"), up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        attention_head_dim=8, addition_embed_type="text_time", addition_time_embed_dim=8,
        projection_class_embeddings_input_dim=80, norm_num_groups=8).eval()
    inputs = forward_inputs(unet)
    added = inputs["added_cond_kwargs"]
    assert added["text_embeds"].shape[1] + 6 * 8 == 80 and added["time_ids"].shape[1] == 6
    with torch.no_grad():
        assert unet(**inputs).sample.shape == inputs["sample"].shape
