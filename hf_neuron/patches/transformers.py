"""transformers: detect ``neuron`` by device, list it, place pipelines on it, keep its RNG in Trainer checkpoints, and
compile generation with the device's settings when the user chose no backend, keep a compiled graph whole where
transformers would break it for a message or a check (once-only advice, tensor checks), and explain that flex
attention needs what the neuron device does not offer instead of failing deep inside it; and two bugs of transformers
that fail on every device, each with a small and certain fix (GIT's text-only training loss, Reformer's axial position
weights in bfloat16). Bugs without one are recorded in ``compat/library_bugs.toml``."""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import os
import textwrap
from collections.abc import Callable
from typing import Any

from hf_neuron.backends import neuron_module
from hf_neuron.patches import neuron_device
from hf_neuron.patches.registry import Patch
from hf_neuron.vocabulary.failures import LIMITATIONS

__all__ = ["PATCHES"]

VERSIONS = ">=5.24,<5.25"


def _lists_neuron(original: Callable[[], frozenset[str]]) -> Callable[[], frozenset[str]]:
    @functools.wraps(original)
    def get_available_devices() -> frozenset[str]:
        devices = original()
        return devices | {neuron_device.DEVICE} if neuron_device.neuron_available() else devices

    return get_available_devices


def _places_on_neuron(original: Callable[..., None]) -> Callable[..., None]:
    signature = inspect.signature(original)

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:  # noqa: N807 - replaces Pipeline.__init__
        bound = signature.bind(self, *args, **kwargs)
        device = bound.arguments.get("device")
        model = bound.arguments.get("model")
        if device is None and getattr(model, "hf_device_map", None) is None:
            current = getattr(model, "device", None)  # a model already on a neuron device stays there
            device = neuron_device.neuron_index(current) or 0
        if isinstance(device, int) and device >= 0 and neuron_device.neuron_is_accelerator():
            import torch

            bound.arguments["device"] = torch.device(neuron_device.DEVICE, device)
        original(*bound.args, **bound.kwargs)

    return __init__


def _rng_file(trainer: Any, directory: str) -> str:
    name = "rng_state.pth" if trainer.args.world_size <= 1 else f"rng_state_{trainer.args.process_index}.pth"
    return os.path.join(directory, name)


def _distributed(trainer: Any) -> bool:
    from transformers.training_args import ParallelMode

    return bool(trainer.args.parallel_mode == ParallelMode.DISTRIBUTED)


def _load_states(path: str) -> dict[str, Any]:
    import torch
    from transformers.trainer_pt_utils import safe_globals

    with safe_globals():
        return dict(torch.load(path, weights_only=True))


def _saves_neuron_rng(original: Callable[[Any, str], None]) -> Callable[[Any, str], None]:
    @functools.wraps(original)
    def _save_rng_state(self: Any, output_dir: str) -> None:
        original(self, output_dir)
        if neuron_device.neuron_available():
            import torch

            path = _rng_file(self, output_dir)
            states = _load_states(path)
            neuron = neuron_module()
            states[neuron_device.DEVICE] = neuron.get_rng_state_all() if _distributed(self) else neuron.get_rng_state()
            torch.save(states, path)

    return _save_rng_state


def _restores_neuron_rng(original: Callable[[Any, str | None], None]) -> Callable[[Any, str | None], None]:
    @functools.wraps(original)
    def _load_rng_state(self: Any, checkpoint: str | None) -> None:
        original(self, checkpoint)
        if checkpoint is None or not neuron_device.neuron_available():
            return
        if not os.path.isfile(_rng_file(self, checkpoint)):
            return

        state = _load_states(_rng_file(self, checkpoint)).get(neuron_device.DEVICE)
        if state is not None:
            (neuron_module().set_rng_state_all if _distributed(self) else neuron_module().set_rng_state)(state)

    return _load_rng_state


#: What a user on neuron can use instead of what needs Inductor.
_INSTEAD = {"flex_attention": LIMITATIONS["flex-attention"]}


def _device_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    """The device type of a call: its ``device`` argument, else its first tensor's."""
    import torch

    device = kwargs.get("device")
    if device is not None:
        return torch.device(device).type
    tensor = next((value for value in (*args, *kwargs.values()) if isinstance(value, torch.Tensor)), None)
    return None if tensor is None else tensor.device.type


def _torch_refuses_flex_attention() -> bool:
    """Whether torch's ``flex_attention`` refuses neuron tensors: its device check does (the pre-release TorchNeuron
    tree, whose users patched it); the released backend (2.33 and later) runs FlexAttention, so it must accept them.
    A torch without that check refuses nothing."""
    import torch
    from torch.nn.attention import flex_attention as torch_flex

    check = getattr(torch_flex, "_validate_device", None)
    probe = torch.empty(0, device=neuron_device.DEVICE)
    try:
        if check is not None:
            check(probe, probe, probe)
    except ValueError:
        return True
    return False


def _explains_flex_attention(original: dict[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    flex = original["flex_attention"]

    @functools.wraps(flex)
    def flex_attention(*args: Any, **kwargs: Any) -> Any:
        if _device_of(args, kwargs) == neuron_device.DEVICE and _torch_refuses_flex_attention():
            raise NotImplementedError(
                "attn_implementation='flex_attention' needs Inductor (it compiles the attention and its block mask "
                f"with it), which has no lowering for the neuron device: {_INSTEAD['flex_attention']}"
            )
        return flex(*args, **kwargs)

    return {**original, "flex_attention": flex_attention}


class UnchosenBackend(str):
    """``CompileConfig``'s default backend (``"inductor"``) when the user did not pass one: equal to it everywhere
    (``torch.compile`` looks it up by name as before), but a model on neuron knows to use the device's backend."""

    __slots__ = ()


def _remembers_unchosen_backend(original: Callable[..., None]) -> Callable[..., None]:
    signature = inspect.signature(original)

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:  # noqa: N807 - replaces CompileConfig.__init__
        original(self, *args, **kwargs)
        if "backend" not in signature.bind(self, *args, **kwargs).arguments and isinstance(self.backend, str):
            self.backend = UnchosenBackend(self.backend)

    return __init__


def _for_the_device(model: Any, compile_config: Any) -> Any:
    """``compile_config`` as ``model`` on neuron compiles it: without a backend the user chose, every field left at
    ``CompileConfig``'s own default takes the device's (transformers' ``_default_compile_config``: backend 'neuron',
    dynamic=False, mode='default'); anything else is the user's, unchanged (an explicit 'inductor' too: on a Neuron
    device the backend selects itself, its mode ignored with a warning)."""
    if compile_config is None or model.device.type != neuron_device.DEVICE:
        return compile_config
    if isinstance(compile_config.backend, UnchosenBackend):
        device_default = model._default_compile_config()
        changes = {field.name: getattr(device_default, field.name) for field in dataclasses.fields(compile_config)
                   if getattr(compile_config, field.name) == field.default}
        return dataclasses.replace(compile_config, **changes)
    return compile_config


def _uses_device_backend(original: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    @functools.wraps(original)
    def compiled_call(self: Any, compile_config: Any) -> Any:
        return original(self, _for_the_device(self, compile_config))

    return compiled_call


def _counts_topk_in_float(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def build_attention_mask_from_topk(self: Any, topk_indices: Any, query_states: Any, kv_length: int) -> Any:
        if topk_indices.device.type != neuron_device.DEVICE:
            return original(self, topk_indices, query_states, kv_length)
        import torch

        # transformers 5.24's body, counting in float32 (exact: a row counts at most its top-k hits)
        topk_valid = topk_indices.ge(0) & topk_indices.lt(kv_length)
        safe_indices = topk_indices.clamp(0, kv_length - 1)
        counts = torch.zeros(*topk_indices.shape[:2], kv_length, dtype=torch.float32, device=topk_indices.device)
        counts.scatter_add_(-1, safe_indices, topk_valid.to(torch.float32))
        mask = counts.ne(0).unsqueeze(1)
        if self.config._attn_implementation == "sdpa":
            return mask
        visible = torch.full((), 0.0, device=query_states.device, dtype=query_states.dtype)
        return torch.where(mask, visible, torch.finfo(query_states.dtype).min)

    return build_attention_mask_from_topk


#: The multimodal models of transformers 5.24 whose ``get_placeholder_mask`` counts their placeholder tokens for
#: ``torch_compilable_check`` by indexing the embeddings with the boolean mask (``inputs_embeds[mask].numel()``):
#: (module under ``transformers.models``, class). HunYuan-VL's, which branches on the count in Python (``if ... !=
#: ...: raise``), would break its graph on the branch instead: not patched.
#: ``tests/test_graph_break_patches.py`` scans the installed transformers and checks this list is every one of them.
PLACEHOLDER_COUNT_CLASSES = (
    ("audioflamingo3", "AudioFlamingo3Model"), ("diffusion_gemma", "DiffusionGemmaEncoderModel"),
    ("dots3_note", "Dots3NoteModel"), ("fun_asr_nano", "FunAsrNanoModel"), ("glmasr", "GlmAsrModel"),
    ("granite_speech", "GraniteSpeechModel"), ("granite_speech_plus", "GraniteSpeechPlusModel"),
    ("inkling", "InklingModel"), ("inkling2", "Inkling2Model"),
    ("inkling2_loop", "Inkling2LoopModel"), ("minicpm_ocr", "MiniCPMOcrModel"), ("minicpmv4_6", "MiniCPMV4_6Model"),
    ("minicpmv4_7", "MiniCPMV4_7Model"), ("minimax_m3_vl", "MiniMaxM3VLModel"),
    ("moss_transcribe_diarize", "MossTranscribeDiarizeModel"), ("musicflamingo", "MusicFlamingoModel"),
    ("nemotron3_5_transcribe", "Nemotron3_5TranscribeModel"), ("omniasr", "OmniASRModel"),
    ("qwen3_asr", "Qwen3ASRModel"), ("vibevoice", "VibeVoiceModel"), ("voxtral", "VoxtralModel"),
)


class _CountByMask(ast.NodeTransformer):
    """Rewrites ``values[mask].numel()`` (a boolean index: ``nonzero``, a shape that depends on the data, a graph break)
    into the count it is, ``mask.sum() * (values.numel() // max(mask.numel(), 1))``: a boolean mask indexes the leading
    dimensions it matches, so each selected position keeps ``values.numel() // mask.numel()`` elements (1 for the
    mask expanded to the embeddings, as these models expand it), and an empty mask selects none. A tensor, which
    ``torch_compilable_check`` takes as it takes the comparison it replaces."""

    found = 0

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        func = node.func
        if not (isinstance(func, ast.Attribute) and func.attr == "numel" and not node.args and not node.keywords
                and isinstance(func.value, ast.Subscript) and isinstance(func.value.slice, ast.Name)):
            return node
        self.found += 1
        values, mask = func.value.value, func.value.slice
        count = ast.parse(f"({ast.unparse(mask)}.sum() * ({ast.unparse(values)}.numel() // "
                          f"max({ast.unparse(mask)}.numel(), 1)))", mode="eval").body
        return ast.copy_location(count, node)


def _counts_placeholders_by_sum(original: Callable[..., Any]) -> Callable[..., Any]:
    """``original`` (a ``get_placeholder_mask``) compiled again from its source with :class:`_CountByMask`'s rewrite,
    in its own module's globals (so that the module's other patched bindings are the ones it calls), at its own lines
    (a traceback shows transformers' file)."""
    if original.__code__.co_freevars:
        raise TypeError(f"{original.__qualname__} closes over {original.__code__.co_freevars}: not recompiled")
    tree = ast.parse(textwrap.dedent(inspect.getsource(original)))
    function = tree.body[0]
    assert isinstance(function, ast.FunctionDef)
    function.decorator_list = []
    rewrite = _CountByMask()
    tree = ast.fix_missing_locations(rewrite.visit(tree))
    if not rewrite.found:
        raise LookupError(f"{original.__qualname__} no longer counts with a boolean index: the patch is not needed")
    ast.increment_lineno(tree, original.__code__.co_firstlineno - 1)
    namespace: dict[str, Any] = {}
    exec(compile(tree, inspect.getsourcefile(original) or "<transformers>", "exec"), original.__globals__, namespace)
    replacement = namespace[original.__name__]
    return functools.wraps(original)(replacement)


#: The methods of transformers' ``StaticSlidingWindowLayer`` that keep its true length in a tensor of the layer's own
#: once patched (``transformers.sliding-window-cache-length-*``): a layer keeps it there only when all of them are,
#: and otherwise decodes as transformers does (one patch reverted, a subclass overriding one of them).
_TENSOR_LENGTH_METHODS = ("update", "get_mask_sizes", "get_seq_length", "reset", "crop")

#: The attribute that holds a patched layer's true length, a tensor beside transformers' ``cumulative_length``, which
#: keeps transformers' meaning (the next free slot, no longer advanced once the window is full): models read it to
#: write their own states (DiffusionGemma's canvas), and past the window it would index out of bounds.
_LENGTH = "_hf_neuron_length"


def _length_in_tensor(layer: Any) -> bool:
    """Whether ``layer`` (a ``StaticSlidingWindowLayer`` on neuron) keeps its length in a tensor: every method of
    :data:`_TENSOR_LENGTH_METHODS` its class resolves is a replacement of ours."""
    if not layer.is_initialized or layer.device.type != neuron_device.DEVICE:
        return False
    return all(getattr(getattr(type(layer), name), "_hf_neuron_tensor_length", False)
               for name in _TENSOR_LENGTH_METHODS)


def _tensor_length(replacement: Callable[..., Any]) -> Callable[..., Any]:
    replacement._hf_neuron_tensor_length = True  # type: ignore[attr-defined]
    return replacement


def _true_length(layer: Any) -> Any:
    """The layer's true length as a tensor, made from its Python length the first time (eager code: a layer's first
    update, a prompt or a first token, runs before its decoding is compiled)."""
    length = getattr(layer, _LENGTH, None)
    if length is None:
        import torch

        length = torch.full_like(layer.cumulative_length, layer.cumulative_length_int)
        if not torch.compiler.is_compiling():
            torch._dynamo.mark_static_address(length)
        setattr(layer, _LENGTH, length)
    return length


def _sync_length_int(layer: Any) -> None:
    """The layer's Python length as its tensor says (eager code; read in a compiled region it is a graph break)."""
    layer.cumulative_length_int = int(_true_length(layer))


def _sliding_update_in_tensor(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def update(self: Any, key_states: Any, value_states: Any, *args: Any, **kwargs: Any) -> Any:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        if not _length_in_tensor(self):
            return original(self, key_states, value_states, *args, **kwargs)
        length = _true_length(self)
        if key_states.shape[-2] != 1:  # a prompt or a chunk: transformers' own update, its length kept in the tensor
            _sync_length_int(self)
            keys, values = original(self, key_states, value_states, *args, **kwargs)
            length.fill_(self.cumulative_length_int)
            return keys, values
        import torch

        # One decoding step, transformers' two branches as tensor operations: the window rolls by one once it is full
        # (length >= window), and the new states go in its last slot, else in the next free one, where transformers'
        # `cumulative_length` advances too.
        full = length >= self.max_cache_len
        position = length.clamp(max=self.max_cache_len - 1).reshape(1)
        for cached, new in ((self.keys, key_states), (self.values, value_states)):
            states = torch.where(full, cached.roll(-1, dims=-2), cached)
            states.index_copy_(2, position, new)
            cached.copy_(states)  # in place: the cache keeps its static address
        self.cumulative_length.add_(full.logical_not().to(self.cumulative_length.dtype))
        length.add_(1)
        return self.keys, self.values

    return _tensor_length(update)


def _sliding_mask_sizes_in_tensor(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def get_mask_sizes(self: Any, query_length: int) -> Any:
        if not _length_in_tensor(self):
            return original(self, query_length)
        if query_length != 1:
            _sync_length_int(self)
            return original(self, query_length)
        # transformers' sizes for one query: the window's length whether full or not, and the position of its first
        # slot (0 until it is full), as a tensor
        return self.max_cache_len, (_true_length(self) - self.max_cache_len + 1).clamp(min=0)

    return _tensor_length(get_mask_sizes)


def _sliding_seq_length_in_tensor(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def get_seq_length(self: Any) -> Any:
        # as StaticLayer.get_seq_length answers: a tensor, which a compiled region reads without a guard
        return _true_length(self) if _length_in_tensor(self) else original(self)

    return _tensor_length(get_seq_length)


def _sliding_reset_in_tensor(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def reset(self: Any) -> None:
        original(self)
        if _length_in_tensor(self):
            _true_length(self).zero_()

    return _tensor_length(reset)


def _sliding_crop_in_tensor(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def crop(self: Any, tokens_to_remove: int) -> None:
        if _length_in_tensor(self):
            _sync_length_int(self)  # transformers' crop takes the tokens from the Python length
            _true_length(self).sub_(abs(tokens_to_remove))
        original(self, tokens_to_remove)

    return _tensor_length(crop)


def _pads_for_a_tensor_offset(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def prepare_padding_mask(attention_mask: Any, kv_length: int, kv_offset: Any) -> Any:
        import torch

        if attention_mask is None or not isinstance(kv_offset, torch.Tensor):
            return original(attention_mask, kv_length, kv_offset)
        # the padding a tensor offset may need at most, without asking its value: positions past the 2D mask are
        # padding (False) either way
        return torch.nn.functional.pad(attention_mask, (0, kv_length))

    return prepare_padding_mask


def _checks_tensors_outside_neuron_graphs(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def torch_compilable_check(cond: Any, msg: Any, error_type: type[Exception] = ValueError) -> None:
        import torch

        if (isinstance(cond, torch.Tensor) and cond.device.type == neuron_device.DEVICE
                and torch.compiler.is_compiling()):
            return  # checked where the model runs eagerly; inside a neuron graph it would be a break and a host read
        original(cond, msg, error_type)

    return torch_compilable_check


def _advice_skipped_by_dynamo(original: Callable[..., Any]) -> Callable[..., Any]:
    """The same logging method, which Dynamo skips in a compiled region (its ``ignore_logging_functions``): the set
    holds the replacement itself, so reverting the patch (the original back on ``Logger``) ends the skipping."""
    from hf_neuron import import_hooks

    @functools.wraps(original)
    def advice_once(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)

    import_hooks.when_imported("torch._dynamo.config",
                               lambda config: config.ignore_logging_functions.add(advice_once))
    return advice_once


def _git_text_only_loss(original: Callable[..., Any]) -> Callable[..., Any]:
    signature = inspect.signature(original)

    @functools.wraps(original)
    def forward(self: Any, *args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(self, *args, **kwargs)
        labels = bound.arguments.get("labels")
        if labels is None or any(bound.arguments.get(name) is not None for name in ("pixel_values", "inputs_embeds")):
            return original(self, *args, **kwargs)
        extra = dict(bound.arguments.get("kwargs", {}))
        shift_labels = extra.pop("shift_labels", None)
        bound.arguments.update(labels=None, kwargs=extra)
        if bound.arguments.get("use_cache") is None:
            bound.arguments["use_cache"] = False  # as the original does for a training step
        outputs = original(*bound.args, **bound.kwargs)
        logits = outputs[0] if isinstance(outputs, tuple) else outputs.logits
        if shift_labels is None:  # next-token prediction over the text: no image token comes first
            logits, shift_labels = logits[:, :-1, :], labels[:, 1:]
        loss = self.loss_function(logits=logits.contiguous(), labels=None, vocab_size=self.config.vocab_size,
                                  shift_labels=shift_labels.contiguous(), **extra)
        return (loss, *outputs) if isinstance(outputs, tuple) else type(outputs)(loss=loss, **outputs)

    return forward


def _axial_positions_in_default_dtype(original: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(original)
    def __init__(self: Any, config: Any) -> None:  # noqa: N807 - replaces AxialPositionEmbeddings.__init__
        original(self, config)
        import torch

        dtype = torch.get_default_dtype()  # from_pretrained(dtype=...) builds the model with it as the default
        for index, weight in enumerate(self.weights):
            if weight.dtype != dtype:
                self.weights[index] = torch.nn.Parameter(weight.detach().to(dtype))

    return __init__


PATCHES: list[Patch] = [
    Patch(
        id="transformers.detect-neuron-by-device",
        library="transformers",
        module="transformers.utils.import_utils",
        attribute="is_torch_neuron_available",
        versions=VERSIONS,
        reason="transformers/utils/import_utils.py `is_torch_neuron_available()` answers False unless a package "
        "named `torch_neuronx` is importable, and is `lru_cache`d; `TrainingArguments` (device `neuron:0`, "
        "`torch_compile_backend='neuron'`) and `is_torch_bf16_gpu_available()` rely on it. The replacement asks "
        "torch, caches only True and keeps the dynamo constant marker.",
        replace=neuron_device.detection,
        upstream_fix="Test the registered PrivateUse1 backend name (or `torch.accelerator`) instead of the package.",
    ),
    Patch(
        id="transformers.available-devices-include-neuron",
        library="transformers",
        module="transformers.utils",
        attribute="get_available_devices",
        versions=VERSIONS,
        reason="transformers/utils/__init__.py `get_available_devices()` lists cuda, mps, xpu, npu, hpu, mlu, "
        "musa and supa but never neuron (read by the bitsandbytes integration and continuous batching).",
        replace=_lists_neuron,
        upstream_fix="Add `if is_torch_neuron_available(): devices.add('neuron')`.",
    ),
    Patch(
        id="transformers.pipeline-places-on-neuron",
        library="transformers",
        module="transformers.pipelines.base",
        attribute="Pipeline.__init__",
        versions=VERSIONS,
        reason="transformers/pipelines/base.py `Pipeline.__init__` turns `device=None` into 0 and maps an index "
        "to mlu, musa, cuda, npu, hpu, xpu or mps, else the CPU: on neuron a pipeline runs on the CPU and moves a "
        "model already on neuron back to it. When neuron is torch's accelerator, the replacement passes "
        "`neuron:<index>` for an index, and for `None` the model's neuron device or `neuron:0` (a model "
        "dispatched with a `device_map` keeps its placement).",
        replace=_places_on_neuron,
        upstream_fix="An `elif is_torch_neuron_available(): torch.device(f'neuron:{device}')` branch, or "
        "`torch.accelerator.current_accelerator()` for any index.",
    ),
    Patch(
        id="transformers.trainer-saves-neuron-rng",
        library="transformers",
        module="transformers.trainer",
        attribute="Trainer._save_rng_state",
        versions=VERSIONS,
        reason="transformers/trainer.py `Trainer._save_rng_state()` saves the RNG state of cuda, xla, npu, hpu, "
        "mlu and musa but not neuron, so a resumed run draws different dropout masks. The replacement adds "
        "`torch.neuron.get_rng_state()` (`_all` when distributed) under the key 'neuron'.",
        replace=_saves_neuron_rng,
        upstream_fix="A neuron branch in `_save_rng_state()`.",
    ),
    Patch(
        id="transformers.trainer-restores-neuron-rng",
        library="transformers",
        module="transformers.trainer",
        attribute="Trainer._load_rng_state",
        versions=VERSIONS,
        reason="transformers/trainer.py `Trainer._load_rng_state()` restores no neuron RNG state. The replacement "
        "restores the 'neuron' entry written by `transformers.trainer-saves-neuron-rng`.",
        replace=_restores_neuron_rng,
        upstream_fix="A neuron branch in `_load_rng_state()` (`set_rng_state_for_device('NEURON', ...)`).",
    ),
    Patch(
        id="transformers.flex-attention-explains-neuron",
        library="transformers",
        module="transformers.modeling_utils",
        attribute="AttentionInterface._global_mapping",
        versions=VERSIONS,
        reason="transformers/integrations/flex_attention.py compiles the attention and its block mask with "
        "torch.compile's default backend. Where the neuron backend is not selected by itself and torch's "
        "flex_attention refuses neuron tensors (the pre-release TorchNeuron tree), "
        "`attn_implementation='flex_attention'` fails on neuron deep inside Inductor (\"LoweringException: "
        "AssertionError ... Pointwise('neuron', ...)\"); there the replacement raises at once, saying to use 'sdpa' "
        "or 'eager'. Where torch accepts them (the released backend, 2.33 and later, which runs FlexAttention), it "
        "calls transformers' own. Models look the implementation up in this class-level mapping at call time.",
        replace=_explains_flex_attention,
        upstream_fix="An Inductor lowering for neuron (or a neuron flex-attention kernel); until then transformers "
        "could refuse flex_attention on devices Inductor cannot lower for.",
    ),
    Patch(
        id="transformers.flex-attention-mask-explains-neuron",
        library="transformers",
        module="transformers.masking_utils",
        attribute="AttentionMaskInterface._global_mapping",
        versions=VERSIONS,
        reason="transformers/masking_utils.py `flex_attention_mask()` builds its BlockMask with `create_block_mask`, "
        "compiled by Inductor, before any attention runs: with flex_attention on neuron this is where the model "
        "fails first. On neuron the replacement raises the same clear error as the attention's.",
        replace=_explains_flex_attention,
        upstream_fix="As for the attention: an Inductor lowering for neuron.",
    ),
    Patch(
        id="transformers.compile-config-remembers-unchosen-backend",
        library="transformers",
        module="transformers.generation.configuration_utils",
        attribute="CompileConfig.__init__",
        versions=VERSIONS,
        reason="transformers/generation/configuration_utils.py `CompileConfig` defaults to backend='inductor' (and "
        "mode='reduce-overhead', CUDA graphs), so `CompileConfig()` cannot tell a backend the user chose from one "
        "they left out. The replacement keeps a left-out backend as `UnchosenBackend('inductor')`, a string equal to "
        "'inductor' everywhere, which `transformers.compile-config-uses-device-backend` resolves on neuron.",
        replace=_remembers_unchosen_backend,
        upstream_fix="`CompileConfig(backend=None)` by default, resolved to the device's backend (as "
        "`PreTrainedModel._default_compile_config` does) where the model is compiled.",
    ),
    Patch(
        id="transformers.compile-config-uses-device-backend",
        library="transformers",
        module="transformers.modeling_utils",
        attribute="PreTrainedModel.get_compiled_call",
        versions=VERSIONS,
        reason="transformers/modeling_utils.py `PreTrainedModel.get_compiled_call()` compiles static-cache decoding "
        "with the user's `CompileConfig` as given: `generate(compile_config=CompileConfig())`, as transformers' docs "
        "show it, names Inductor with mode='reduce-overhead' (CUDA graphs), while no compile_config gives the neuron "
        "backend's settings (`_default_compile_config`); on a Neuron device TorchNeuron (2.33 and later) selects its "
        "own backend for Inductor's name and ignores that mode with a warning. For a model on neuron the replacement "
        "gives a CompileConfig without a chosen backend the device's settings for every field left at its default "
        "(backend 'neuron', dynamic=False, mode='default'); an explicit backend is kept, 'inductor' included.",
        replace=_uses_device_backend,
        upstream_fix="`CompileConfig(backend=None)` by default, resolved by `get_compiled_call()` to "
        "`_default_compile_config()`'s values for the model's device.",
    ),
    Patch(
        id="transformers.vibevoice-negative-branch-uses-device-backend",
        library="transformers",
        module="transformers.models.vibevoice.generation_vibevoice",
        attribute="VibeVoiceGenerationMixin._get_negative_compiled_call",
        versions=VERSIONS,
        reason="transformers/models/vibevoice/generation_vibevoice.py `_get_negative_compiled_call()` compiles the "
        "classifier-free guidance branch with the user's `CompileConfig` as given, beside `get_compiled_call()`: "
        "the same resolution as `transformers.compile-config-uses-device-backend` (a CompileConfig without a chosen "
        "backend compiles with the device's settings on neuron; an explicit backend is kept).",
        replace=_uses_device_backend,
        upstream_fix="As for `get_compiled_call()`: `CompileConfig(backend=None)` resolved to the device's backend.",
    ),
    Patch(
        id="transformers.glm5-next-topk-mask-compiles-on-neuron",
        library="transformers",
        module="transformers.models.glm5_next.modeling_glm5_next",
        attribute="Glm5NextTextAttention.build_attention_mask_from_topk",
        versions=VERSIONS,
        reason="transformers/models/glm5_next/modeling_glm5_next.py `Glm5NextTextAttention."
        "build_attention_mask_from_topk()` counts each key's top-k hits with an int32 `scatter_add_`, and only "
        "asks whether a count is nonzero. Compiled (`torch.compile(backend='neuron')`, static-cache generation), the "
        "Neuron compiler rejects integer scatter-with-compute (NCC_EVRF060: it computes in float32). On neuron the "
        "replacement counts in float32, exact for counts up to 2**24 (a row counts at most its top-k), and builds the "
        "same mask.",
        replace=_counts_topk_in_float,
        upstream_fix="Count in the query's float dtype, or scatter booleans, in `build_attention_mask_from_topk()`.",
    ),
    *(Patch(
        id=f"transformers.sliding-window-cache-length-in-tensor-{name.replace('_', '-')}",
        library="transformers",
        module="transformers.cache_utils",
        attribute=f"StaticSlidingWindowLayer.{name}",
        versions=VERSIONS,
        reason="transformers/cache_utils.py `StaticSlidingWindowLayer` (a static cache's sliding-window layers: "
        "Gemma 2, Cohere 2, GPT-OSS, Mistral-style windows) keeps its length in a Python int, "
        "`cumulative_length_int`, that `update()` and `get_mask_sizes()` branch on and `get_seq_length()` returns. "
        "Dynamo guards on its value, so compiled decoding compiles a new graph at every token (on Trainium, a Neuron "
        "compiler run a token, until Dynamo's recompile limit sends the rest of the decoding to eager). On neuron the "
        "five replacements keep the true length in a tensor of the layer's own beside `cumulative_length`, which keeps "
        "transformers' meaning (the next free slot, no longer advanced once the window is full; DiffusionGemma writes "
        "its canvas there): one decoding step writes its states with tensor operations (the window rolls once full, "
        "as `update()` does), the mask's offset is a tensor, `get_seq_length()` returns the tensor, as `StaticLayer`'s "
        "does, and `reset()` and `crop()` move it with the Python length; a step of more than one token (the prompt) "
        "is transformers' own. Each applies only where all five do (`_length_in_tensor`), so reverting one reverts "
        "the behaviour: the same tokens, scores and cache, exactly.",
        replace=replace,
        upstream_fix="`StaticSlidingWindowLayer` keeping its length in its `cumulative_length` tensor and deciding "
        "the window's roll with tensor operations (asked in huggingface/transformers#44609; tenstorrent/tt-xla#3688 "
        "patches the same layer for its compiled decoding).",
    ) for name, replace in (("update", _sliding_update_in_tensor), ("get_mask_sizes", _sliding_mask_sizes_in_tensor),
                            ("get_seq_length", _sliding_seq_length_in_tensor), ("reset", _sliding_reset_in_tensor),
                            ("crop", _sliding_crop_in_tensor))),
    Patch(
        id="transformers.padding-mask-takes-a-tensor-offset",
        library="transformers",
        module="transformers.masking_utils",
        attribute="prepare_padding_mask",
        versions=VERSIONS,
        reason="transformers/masking_utils.py `prepare_padding_mask()` pads the 2D mask when `kv_length + kv_offset` "
        "exceeds it, asking the offset's value: with the tensor offset a sliding-window layer gives once its length "
        "is a tensor (`transformers.sliding-window-cache-length-in-tensor-*`), a compiled region breaks its graph "
        "there. For a tensor offset the replacement pads by `kv_length`, the most it can need, without asking: "
        "the positions past the mask are padding either way. An int offset is the original's.",
        replace=_pads_for_a_tensor_offset,
        upstream_fix="`prepare_padding_mask()` padding to a static bound when `kv_offset` is a tensor.",
    ),
    Patch(
        id="transformers.tensor-checks-stay-out-of-neuron-graphs",
        library="transformers",
        module="transformers.utils.import_utils",
        attribute="torch_compilable_check",
        versions=VERSIONS,
        reason="transformers/utils/import_utils.py `torch_compilable_check()` checks a tensor condition inside a "
        "compiled region with `torch._check_tensor_all()`, which reads the tensor on the host (`Tensor.item()`): "
        "Dynamo breaks the graph there unless scalar outputs are captured. Vision-language models check that their "
        "image tokens match their image features this way in every forward (LLaVA, Aya Vision, PaliGemma, Mistral "
        "3...), so `torch.compile` splits each forward in two device programs with a round trip to the host between "
        "them. On neuron, inside a compiled region, the replacement leaves a tensor condition unchecked (what "
        "transformers' own `TRANSFORMERS_DISABLE_TORCH_CHECK=1` does everywhere); the check still runs where the "
        "model runs eagerly, and a Python condition is the original's.",
        replace=_checks_tensors_outside_neuron_graphs,
        upstream_fix="`torch_compilable_check()` skipping tensor conditions while tracing for a backend that cannot "
        "capture scalar outputs (or a switch for it beside `TRANSFORMERS_DISABLE_TORCH_CHECK`).",
    ),
    *(Patch(
        id=f"transformers.placeholder-count-without-boolean-index-{module.replace('_', '-')}",
        library="transformers",
        module=f"transformers.models.{module}.modeling_{module}",
        attribute=f"{name}.get_placeholder_mask",
        versions=VERSIONS,
        reason=f"transformers/models/{module}/modeling_{module}.py `{name}.get_placeholder_mask()` checks that its "
        "placeholder tokens match its image or audio features with `inputs_embeds[mask].numel() == "
        "features.numel()`: the boolean index is a `nonzero`, whose shape depends on the data, computed before "
        "`torch_compilable_check()` is called, so under `torch.compile` every forward breaks its graph there (two "
        "device programs and a round trip to the host), though the check itself stays out of neuron's graphs "
        "(`transformers.tensor-checks-stay-out-of-neuron-graphs`). The replacement is the same function with that "
        "count taken as `mask.sum()` times the elements a position keeps: the same number, the same check and "
        "message, no data-dependent shape (LLaVA and most of transformers' multimodal models count this way).",
        replace=_counts_placeholders_by_sum,
        upstream_fix=f"`{name}.get_placeholder_mask()` counting with `n_tokens * inputs_embeds.shape[-1] == "
        "features.numel()`, as LLaVA's does.",
    ) for module, name in PLACEHOLDER_COUNT_CLASSES),
    *(Patch(
        id=f"transformers.{name.replace('_', '-')}-skipped-in-compiled-graphs",
        library="transformers",
        module="transformers.utils.logging",
        attribute=f"logging.Logger.{name}",
        versions=VERSIONS,
        reason=f"transformers/utils/logging.py `{name}()`, a once-only message transformers adds to every "
        f"`logging.Logger` (`logger.{name}(...)`): models call these inside their forward (`warning_once`: LED's "
        "padding to the attention window, Voxtral Realtime's default delay tokens, Nemotron-H Omni's deprecated "
        "video layout). Dynamo traces no `logging.Logger` method outside "
        "export: under `torch.compile` each call is a graph break, two device programs and a round trip to the host "
        "for a message. The replacement calls the original, and Dynamo's `ignore_logging_functions` holds it: a "
        "compiled region skips the advice (as `torch.export` does), eager code gives it once, as before. Only these "
        "once-only advisories are skipped; `logger.warning()` and the rest still break the graph.",
        replace=_advice_skipped_by_dynamo,
        upstream_fix=f"`{name}()` returning early under `is_torchdynamo_compiling()`, as transformers' other "
        "compile-time advisories do, or registered in Dynamo's `ignore_logging_functions` by transformers.",
    ) for name in ("warning_once", "info_once")),
    Patch(
        id="transformers.git-text-only-training-loss",
        library="transformers",
        module="transformers.models.git.modeling_git",
        attribute="GitForCausalLM.forward",
        versions=VERSIONS,
        reason="transformers/models/git/modeling_git.py `GitForCausalLM.forward` computes its loss on the logits after "
        "the image's tokens (`logits[:, num_image_tokens:-1]`) whether or not an image was given: a text-only "
        "training step (`labels` without `pixel_values`, which the model accepts and `forward` runs) drops the "
        "first `image_patch_tokens` logits, and fails on every device (\"Expected input batch_size (0) to match "
        "target batch_size\" when the text is shorter, a mismatch otherwise). For `input_ids` and `labels` without "
        "`pixel_values` the replacement computes the same next-token loss over every logit; any other call is the "
        "original's.",
        replace=_git_text_only_loss,
        upstream_fix="`num_image_tokens = ... if pixel_values is not None else 0` in `GitForCausalLM.forward`.",
    ),
    Patch(
        id="transformers.reformer-axial-positions-in-model-dtype",
        library="transformers",
        module="transformers.models.reformer.modeling_reformer",
        attribute="AxialPositionEmbeddings.__init__",
        versions=VERSIONS,
        reason="transformers/models/reformer/modeling_reformer.py `AxialPositionEmbeddings.__init__` creates its "
        "weights with `torch.ones(..., dtype=torch.float32)`, so `from_pretrained(..., dtype=torch.bfloat16)` "
        "leaves them in float32 while every other weight is bfloat16: the position encodings make the hidden "
        "states float32 and the first layer norm fails on every device (\"mixed dtype (CPU): expect parameter to "
        "have scalar type of Float\"). The replacement makes them in the default dtype the model is built in, as "
        "every other weight is (float32 unless the loader says otherwise).",
        replace=_axial_positions_in_default_dtype,
        upstream_fix="`torch.ones(ax_shape)` without `dtype=torch.float32` in `AxialPositionEmbeddings.__init__`.",
    ),
]
