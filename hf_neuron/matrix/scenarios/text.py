"""The inference scenarios of transformers models: ``load``, ``forward``, ``generate``, ``bf16``, ``compile``,
``save``. The decoding ones are skipped for a model class without ``generate``.

Each runs on ``ctx.device`` and compares with the same computation on the CPU (``compile`` and ``save`` with the
eager / original model on the same device, which ``forward`` has already compared with the CPU). ``load`` compares
weights exactly. A forward pass compares the outputs the model's group names (a language model's logits). Greedy
decoding compares the scores of every step (within the dtype's tolerance) and the tokens exactly, except after a step
where the CPU itself saw a tie: when the device picks a token whose CPU score is within the tolerance of the CPU's
choice, both are right, and the steps after it are not compared (their inputs differ); what a generation makes
besides tokens (a waveform, codes, a spectrogram) is compared within the dtype's tolerance; a generation that gives no
per-step scores (a block diffusion model's canvases) is compared by its tokens alone, exactly. Every forward pass and
generation starts from ``torch.manual_seed`` with the case's seed; a failed comparison with the CPU of one whose CPU
result moves when only that seed changes is untested (:func:`~hf_neuron.matrix.scenarios.contract.unless_random`):
the model draws random numbers there, and the device draws other numbers than the CPU.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
from typing import TYPE_CHECKING, Any

from hf_neuron.matrix.case.observe import compile_mark, compiled_since, device_graphs, fresh_dynamo, not_the_device
from hf_neuron.matrix.scenarios.contract import (
    EXACT,
    CaseContext,
    ScenarioResult,
    Tolerance,
    as_accurate,
    beyond_tolerance,
    compare,
    compare_named,
    unless_random,
    worst_of,
)
from hf_neuron.matrix.scenarios.text_models import (
    NEW_TOKENS,
    forward_outputs,
    greedy,
    load_model,
    sample_ids,
)
from hf_neuron.tiny.groups import Decoding
from hf_neuron.vocabulary.records import DEVICE_STEPS, GRAPH_BUDGET, GRAPHS_PER_GENERATION, Parity

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    import torch
    from transformers import PreTrainedModel

__all__ = [
    "BUDGET_TOKENS",
    "CACHES",
    "TOKEN_MISMATCHES",
    "bf16",
    "compare_outputs",
    "compile_backend",
    "compile_forward",
    "decoding_held_to_float32",
    "flex_attention",
    "forward",
    "generate",
    "generate_compiled",
    "graph_budget",
    "in_dtype",
    "load",
    "save",
    "sdpa",
]

#: New tokens of the graph budget's second generation (:func:`graph_budget`): four more decoding steps than
#: :data:`~hf_neuron.matrix.scenarios.text_models.NEW_TOKENS`' (9 against 5, after the prompt's token).
BUDGET_TOKENS = NEW_TOKENS + 4

#: The caches ``generate`` decodes with: the model's default, and a static cache (which transformers compiles
#: with the device's ``torch.compile`` backend on ``neuron``).
CACHES: tuple[str | None, ...] = (None, "static")

#: Why a failed comparison with the CPU of a computation that draws random numbers says nothing about the device.
_DRAWS_ELSEWHERE = ("the device draws them from its own generator, not the CPU's, so its results cannot be held to "
                    "the CPU's")


def _named_tensors(model: PreTrainedModel) -> dict[str, torch.Tensor]:
    return dict(itertools.chain(model.named_parameters(), model.named_buffers()))


def load(ctx: CaseContext) -> ScenarioResult:
    """``from_pretrained(checkpoint, device_map=device)`` puts every parameter and buffer on the device, holding
    the values a CPU load holds."""
    model = load_model(ctx, ctx.device)
    expected_type = model.device.type
    tensors = _named_tensors(model)
    elsewhere = [f"{name} ({tensor.device})" for name, tensor in tensors.items() if tensor.device.type != expected_type]
    if model.device.type != ctx.device.split(":")[0] or elsewhere:
        return ScenarioResult.failed(
            f"{len(elsewhere)} of {len(tensors)} tensors not on {ctx.device} after from_pretrained(device_map="
            f"{ctx.device!r}) (model.device {model.device}): {', '.join(elsewhere[:5])}"
        )
    return compare_named(tensors, _named_tensors(load_model(ctx, "cpu")), "tensor", EXACT, device=ctx.device)


def compare_outputs(actual: Mapping[str, torch.Tensor], expected: Mapping[str, torch.Tensor], what: str,
                    tolerance: Tolerance | None = None, reference: str = "the CPU's", *,
                    device: str | None = None) -> ScenarioResult:
    """:func:`compare` for each output of ``expected`` (``what`` names it where it says ``{}``: ``"compiled {}"``);
    the worst (:func:`~hf_neuron.matrix.scenarios.contract.worst_of`: an output with nothing to compare, an empty one,
    counts only when every output is; no output at all is ``untested``). Outputs on one side only fail."""
    if set(actual) != set(expected):
        return ScenarioResult.failed(f"{what.format('outputs')}: {sorted(actual)}, {reference} {sorted(expected)}")
    if not expected:
        return ScenarioResult.untested(f"{what.format('outputs')}: {reference} are none: nothing to compare", "checks")
    return worst_of([compare(actual[name], expected[name], what.format(name), tolerance, reference, device=device)
                     for name in expected])


def _outputs_agree(ctx: CaseContext, actual: Mapping[str, torch.Tensor], reference: PreTrainedModel,
                  input_ids: torch.Tensor, what: str,
                  expected: Mapping[str, torch.Tensor] | None = None) -> ScenarioResult:
    """:func:`compare_outputs` of the device's forward ``actual`` with ``reference``'s (on the CPU) behind
    ``input_ids`` (``expected``, when the caller has them already), both from the case's seed, untested where the
    CPU's outputs move with the seed alone (:func:`~hf_neuron.matrix.scenarios.contract.unless_random`)."""
    if expected is None:
        expected = forward_outputs(reference, input_ids, seed=ctx.seed)

    def reseeded(seed: int) -> ScenarioResult:
        return compare_outputs(forward_outputs(reference, input_ids, seed=seed), expected,
                               f"{what} under seed {seed}", reference=f"the CPU's under seed {ctx.seed}")

    return unless_random(compare_outputs(actual, expected, what, device=ctx.device), reseeded, ctx.seed,
                         "forward pass", _DRAWS_ELSEWHERE)


def _forward_with(ctx: CaseContext, **config: Any) -> ScenarioResult:
    """The outputs of one forward pass on the device equal the CPU's (both with ``config``), within the float32
    tolerance. The device runs first, so that a failure there costs no CPU work."""
    model = load_model(ctx, ctx.device, **config)
    input_ids = sample_ids(ctx, model)
    actual = forward_outputs(model, input_ids, seed=ctx.seed)
    with not_the_device():  # what the CPU's pass compiles (flex attention's) is the reference's, not the device's
        return _outputs_agree(ctx, actual, load_model(ctx, "cpu", **config), input_ids, "{}")


def forward(ctx: CaseContext) -> ScenarioResult:
    """The outputs of one forward pass on the device (a language model's logits) equal the CPU's, within the float32
    tolerance (the tiny config's eager attention)."""
    return _forward_with(ctx)


def sdpa(ctx: CaseContext) -> ScenarioResult:
    """``forward`` with ``attn_implementation="sdpa"`` (what transformers picks by itself where supported)."""
    return _forward_with(ctx, attn_implementation="sdpa")


@contextlib.contextmanager
def _compiled_densely() -> Iterator[None]:
    """While inside, what ``torch.compile`` hands to Inductor (its default backend) is compiled by ``aot_eager``:
    AOTAutograd's graphs run eagerly, FlexAttention computed densely (its scores matrix, the masks as -inf, softmax),
    as the device computes it, instead of through Inductor's C++ template."""
    import torch
    from torch._dynamo.backends.registry import lookup_backend

    wrapper = torch._TorchCompileInductorWrapper
    inductor_call = wrapper.__call__

    def __call__(self: Any, model_: torch.fx.GraphModule, inputs_: Any, **kwargs: Any) -> Any:  # noqa: N807
        return lookup_backend("aot_eager")(model_, inputs_)

    wrapper.__call__ = __call__  # type: ignore[method-assign]
    try:
        yield
    finally:
        wrapper.__call__ = inductor_call  # type: ignore[method-assign]


def flex_attention(ctx: CaseContext) -> ScenarioResult:
    """``forward`` with ``attn_implementation="flex_attention"`` on the device: transformers compiles the attention and
    its block mask with torch.compile's default backend, which the device replaces with its own on a graph on the
    device. Its outputs are held to the CPU's ``forward`` with the tiny config's own (eager) attention, the same
    attention computed without FlexAttention: torch's FlexAttention on the CPU compiles an Inductor C++ template that
    corrupts memory for some shapes (pytorch/pytorch#153145: nightly-20261206-2's doge, lighton_ocr, mistral3 and
    seamless_m4t_v2 cases crashed their worker inside it), and costs a cold compile a worker. The case run on the CPU
    (the re-run that tells whether a device failure fails there too) computes FlexAttention as the device does,
    densely (:func:`_compiled_densely`), so that it meets what the device met and not that template. Dynamo starts
    afresh, as in the other compiling scenarios."""
    fresh_dynamo()
    with _compiled_densely() if ctx.device == "cpu" else contextlib.nullcontext():
        model = load_model(ctx, ctx.device, attn_implementation="flex_attention")
        input_ids = sample_ids(ctx, model)
        actual = forward_outputs(model, input_ids, seed=ctx.seed)
    return _outputs_agree(ctx, actual, load_model(ctx, "cpu"), input_ids, "{} (FlexAttention)")


#: The parity metric of greedy decoding whose tokens differ from the CPU's where its scores did not tie.
TOKEN_MISMATCHES = "token_mismatches"


def _diverging_step(actual: torch.Tensor, expected: torch.Tensor, expected_scores: torch.Tensor,
                    tolerance: Tolerance) -> tuple[int, list[str]]:
    """The first step whose token differs in some row between the ``actual`` and ``expected`` tokens (``NEW_TOKENS``
    when none does), and the rows whose difference is not a tie of the CPU's scores within ``tolerance``."""
    first, mismatches = expected.shape[1], []
    for row in range(expected.shape[0]):
        differing = (actual[row] != expected[row]).nonzero()
        if not len(differing):
            continue
        step = int(differing[0])
        first = min(first, step)
        scores = expected_scores[step, row]
        chosen, other = int(expected[row, step]), int(actual[row, step])
        margin = float(scores[chosen] - scores[other])
        bound = tolerance.bound(float(scores[chosen]))
        if not margin <= bound:
            mismatches.append(f"row {row} step {step}: token {other}, the CPU's {chosen} (CPU score margin "
                              f"{margin:.3g} > tolerance {bound:.3g})")
    return first, mismatches


def _agree(actual: Decoding, expected: Decoding, tolerance: Tolerance, what: str,
           reference: str = "the CPU's") -> ScenarioResult:
    """The scores of every step up to and including the first differing token within ``tolerance``, element by element
    (suppressed tokens, -inf, suppressed on both), and the greedy tokens equal but where the CPU's scores of both
    tokens tie; what the generation made besides tokens within ``tolerance``. ``reference`` names where ``expected``
    comes from, for the messages."""
    tokens = _tokens_agree(actual, expected, tolerance, what, reference) if expected.tokens is not None else None
    if not expected.outputs or (tokens is not None and tokens.outcome != "passed"):
        return tokens if tokens is not None else ScenarioResult.failed(f"{what} made neither tokens nor outputs")
    outputs = compare_outputs(actual.outputs, expected.outputs, f"{what}: {{}}", tolerance, reference)
    return tokens if tokens is not None and outputs.outcome == "passed" else outputs


def _tokens_agree(actual: Decoding, expected: Decoding, tolerance: Tolerance, what: str,
                  reference: str) -> ScenarioResult:
    assert expected.tokens is not None
    if expected.scores is None:  # a generation without per-step scores: its tokens alone, exactly
        if actual.tokens is None:
            return ScenarioResult.failed(f"{what}: no tokens, {reference} {tuple(expected.tokens.shape)}")
        return compare(actual.tokens, expected.tokens, f"{what} tokens", EXACT, reference)
    if actual.tokens is None or actual.scores is None:
        return ScenarioResult.failed(f"{what}: no tokens, {reference} {tuple(expected.tokens.shape)}")
    if actual.tokens.shape != expected.tokens.shape or actual.scores.shape != expected.scores.shape:
        return ScenarioResult.failed(f"{what}: shape {tuple(actual.tokens.shape)}, {reference} "
                                     f"{tuple(expected.tokens.shape)}")
    steps, mismatches = _diverging_step(actual.tokens, expected.tokens, expected.scores, tolerance)
    if mismatches:
        parity = Parity(metric=TOKEN_MISMATCHES, value=float(len(mismatches)), tolerance=0.0)
        return ScenarioResult.failed(f"{what} differ from {reference}: {'; '.join(mismatches)}", parity)
    upto = steps + 1  # the first differing step's scores too: both sides decoded it from the same tokens
    return compare(actual.scores[:upto], expected.scores[:upto], f"{what} scores", tolerance, reference)


def _decoding(ctx: CaseContext, model: PreTrainedModel, reference: PreTrainedModel, input_ids: torch.Tensor,
              cache: str | None, **generate_kwargs: Any) -> ScenarioResult:
    """One leg of greedy decoding: with ``cache`` (None: the model's default), ``model`` (on ``ctx.device``) agrees
    with ``reference`` (CPU); its details name the cache it decoded with and the graphs the device compiled for it.
    A static-cache leg does not apply to a model that decodes with another cache when asked for a static one.

    transformers compiles static-cache decoding on neuron by itself (not on the CPU), so the device's compiled
    decoding is held to the CPU's eager one, what a user compares it with. On the CPU re-run of a neuron case, the
    "device" side compiles on the CPU with the device's settings (:func:`compile_backend`, in place of any
    ``compile_config`` the scenario passes): a failure of the compile stack itself then fails on the CPU too."""
    dtype = str(reference.dtype).removeprefix("torch.")
    kwargs: dict[str, Any] = {} if cache is None else {"cache_implementation": cache}
    before = compile_mark()
    actual = greedy(model, input_ids, seed=ctx.seed, **_device_kwargs(ctx, cache, generate_kwargs))
    facts = {"cache": actual.cache, **compiled_since(before)}
    if actual.scores is not None:  # the tokens it decoded (a generation of other outputs has no steps to count)
        facts[DEVICE_STEPS] = len(actual.scores)
    what = f"greedy decoding ({cache or 'default'} cache, {dtype})"
    if cache == "static" and not actual.compileable:
        used = "keeps no cache object" if actual.cache == "NoneType" else f"decodes with {actual.cache}"
        return ScenarioResult.skipped(f"{type(model).__name__} {used} when asked for a static cache: it has no "
                                      "static-cache decoding").with_details(facts)
    if actual.device.split(":")[0] != ctx.device.split(":")[0]:
        return ScenarioResult.failed(f"{what} ran on {actual.device}, not on {ctx.device}")
    tolerance = ctx.tolerance(dtype)
    with not_the_device():  # whatever the CPU's decoding compiles is the reference's, not the device's
        expected = greedy(reference, input_ids, seed=ctx.seed, **kwargs)

    def reseeded(seed: int) -> ScenarioResult:
        with not_the_device():
            again = greedy(reference, input_ids, seed=seed, **kwargs)
        return _agree(again, expected, tolerance, f"{what} under seed {seed}", f"the CPU's under seed {ctx.seed}")

    agreed = _agree(actual, expected, tolerance, what)
    return unless_random(agreed, reseeded, ctx.seed, "generation", _DRAWS_ELSEWHERE).with_details(facts)


def graphs_compiled(result: ScenarioResult, graphs: int, nothing: ScenarioResult) -> ScenarioResult:
    """``result``, except that a pass for which no graph was compiled for the device (``graphs``) is ``nothing``
    (with ``result``'s details): nothing compiled ran, so the pass compared nothing compiled. Compiled decoding and
    the ``compile`` scenario hold to this one rule."""
    if result.outcome != "passed" or graphs:
        return result
    return nothing.with_details(result.details or {})


def _device_kwargs(ctx: CaseContext, cache: str | None, generate_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The ``generate`` keywords of the device's decoding with ``cache`` (None: the model's default) and
    ``generate_kwargs``; on the CPU re-run of a neuron case, a static cache compiles with the device's settings."""
    kwargs: dict[str, Any] = {} if cache is None else {"cache_implementation": cache}
    rerun_compiled = (_cpu_compile_config() if cache == "static" and ctx.rerun_on_cpu
                      and ctx.device_under_test.startswith("neuron") else {})
    return {**kwargs, **generate_kwargs, **rerun_compiled}


def graph_budget(ctx: CaseContext, model: PreTrainedModel, input_ids: torch.Tensor, compiled: ScenarioResult,
                 **generate_kwargs: Any) -> ScenarioResult:
    """The graph budget of compiled decoding: decoding afresh (Dynamo reset) :data:`BUDGET_TOKENS` new tokens with a
    static cache compiles no more graphs than the ``compiled`` leg did for
    :data:`~hf_neuron.matrix.scenarios.text_models.NEW_TOKENS`. On Trainium every graph is a Neuron compiler run, so
    a decoding whose graphs grow with its tokens (a guard on a value that changes every step) costs a compilation a
    token. Its facts: the graphs of each generation (:data:`~hf_neuron.vocabulary.records.GRAPHS_PER_GENERATION`, by
    new tokens), and the longer one's
    recompilations with their reasons and compile seconds. Not applicable where the compiled leg did not pass."""
    if compiled.outcome != "passed":
        return ScenarioResult.skipped("no compiled decoding to hold to a graph budget: "
                                      f"{compiled.message or 'it compiled nothing'}")
    fresh_dynamo()
    before = compile_mark()
    greedy(model, input_ids, BUDGET_TOKENS, seed=ctx.seed, **_device_kwargs(ctx, "static", generate_kwargs))
    longer = compiled_since(before)
    shorter = int((compiled.details or {}).get("graphs", 0))
    facts = {GRAPHS_PER_GENERATION: {str(NEW_TOKENS): shorter, str(BUDGET_TOKENS): longer["graphs"]},
             **{key: value for key, value in longer.items() if key != "graphs"}}
    if longer["graphs"] > shorter:
        guard = f": {longer['recompile_reasons'][0]}" if longer["recompile_reasons"] else ""
        return ScenarioResult.failed(
            f"compiled decoding recompiles as it decodes: {shorter} graph{'s' * (shorter != 1)} for {NEW_TOKENS} new "
            f"tokens, {longer['graphs']} for {BUDGET_TOKENS} ({longer['recompiles']} recompilations{guard})"
        ).with_details(facts)
    return ScenarioResult.passed(details=facts)


def _compiled(static: ScenarioResult, model: PreTrainedModel) -> ScenarioResult:
    """The compiled-decoding leg of a static-cache leg: the static leg's result (passed, failed, or not applicable),
    except that a pass without any graph compiled for the device is not applicable: there was no compiled decoding."""
    return graphs_compiled(static, (static.details or {}).get("graphs", 0), ScenarioResult.skipped(
        f"transformers decoded {type(model).__name__}'s static cache without compiling anything: no compiled decoding "
        "to test"))


def nothing_compiled(what: str) -> ScenarioResult:
    """The ``compile`` scenario's result when Dynamo compiled no graph of ``what`` for the device: untested (gap
    ``checks``), since the "compiled" model ran eagerly and equals eager by construction."""
    return ScenarioResult.untested(f"torch.compile compiled no graph of {what} for the device: the compiled model ran "
                                   "eagerly, so comparing it with eager checks nothing", "checks")


def _undeclared_static_cache(model: PreTrainedModel) -> ScenarioResult:
    return ScenarioResult.skipped(
        f"{type(model).__name__} declares no static-cache decoding (_can_compile_fullgraph is False): transformers' "
        "own generation tests decode it with no static cache (\"some old models cannot correctly use a static cache "
        "because they don't create the causal masks correctly\"); its compiled static-cache decoding is "
        "generate_compiled's")


def _greedy_agrees(ctx: CaseContext, model: PreTrainedModel, reference: PreTrainedModel,
                   caches: tuple[str | None, ...]) -> ScenarioResult:
    """Greedy decoding agrees between ``model`` and ``reference`` with each of ``caches``, one leg each; a static
    cache's has a second, compiled decoding, which applies only where the device compiled it, and for a checkpoint's
    real-width slice its :func:`graph_budget` (a tiny model's is ``generate_compiled``'s). The static leg does not
    apply to a class that declares no static-cache decoding (``_can_compile_fullgraph`` False), which transformers'
    own generation tests decode with no static cache; ``generate_compiled`` still compiles its decoding, as
    ``generate`` does when a user asks for a static cache."""
    input_ids = sample_ids(ctx, reference)
    legs = []
    for cache in caches:
        declared = cache != "static" or getattr(type(model), "_can_compile_fullgraph", True)
        leg = _decoding(ctx, model, reference, input_ids, cache) if declared else _undeclared_static_cache(model)
        legs.append((f"{cache or 'default'} cache", leg))
        if cache == "static":  # the static leg's own decoding: its steps are counted once, in the static leg
            compiled = _compiled(leg, model)
            details = {key: value for key, value in (compiled.details or {}).items() if key != DEVICE_STEPS}
            legs.append(("compiled decoding", compiled.with_details(details)))
            if ctx.slice_request is not None:
                legs.append((GRAPH_BUDGET, graph_budget(ctx, model, input_ids, compiled)))
    return ScenarioResult.of_legs(legs)


def _cpu_compile_config() -> dict[str, object]:
    """``generate`` keywords that compile the decoding step on the CPU with the device's compile settings."""
    from transformers import CompileConfig

    config = CompileConfig(backend=compile_backend("cpu"), dynamic=False, mode="default")
    config._compile_all_devices = True  # type: ignore[assignment]  # declared None, read as a flag
    return {"compile_config": config}


def _no_generate(model: PreTrainedModel) -> ScenarioResult | None:
    """Skipped when ``model``'s class has no ``generate`` (it is no ``GenerationMixin``, e.g. a policy that predicts
    actions rather than tokens): decoding does not apply to it. None when it has one."""
    if callable(getattr(model, "generate", None)):
        return None
    return ScenarioResult.skipped(f"{type(model).__name__} has no generate method: decoding does not apply to it")


def generate(ctx: CaseContext) -> ScenarioResult:
    """Greedy decoding on the device picks the CPU's tokens, with the default cache and with a static cache (its
    compile facts the case's own: Dynamo starts afresh)."""
    fresh_dynamo()
    model = load_model(ctx, ctx.device)
    return _no_generate(model) or _greedy_agrees(ctx, model, load_model(ctx, "cpu"), CACHES)


def generate_compiled(ctx: CaseContext) -> ScenarioResult:
    """Greedy decoding with a static cache and ``compile_config=CompileConfig()``, as transformers' docs show it
    (no backend chosen: on a neuron device hf-neuron's shim compiles it with the device's backend, where
    ``CompileConfig``'s own default is Inductor), agrees with the CPU's eager decoding; the record says how many graphs
    it compiled, and the graphs do not grow with the tokens decoded (:func:`graph_budget`). It does not apply where
    transformers compiles nothing: a model without static-cache decoding, or one whose decoding it does not
    compile."""
    from transformers import CompileConfig

    fresh_dynamo()
    model = load_model(ctx, ctx.device)
    if (skipped := _no_generate(model)) is not None:
        return skipped
    input_ids = sample_ids(ctx, model)
    reference = load_model(ctx, "cpu")
    leg = _compiled(_decoding(ctx, model, reference, input_ids, "static", compile_config=CompileConfig()), model)
    budget = graph_budget(ctx, model, input_ids, leg, compile_config=CompileConfig())
    return ScenarioResult.of_legs([("compiled decoding", leg), (GRAPH_BUDGET, budget)])


def in_dtype(ctx: CaseContext, dtype: str) -> list[tuple[str, ScenarioResult]]:
    """The legs of inference in ``dtype``: the forward outputs (logits) within that dtype's tolerance of the CPU's,
    and greedy decoding with the default cache agreeing; a leg beyond the tolerance, or a decoding whose tokens differ
    where the CPU's scores did not tie, is held to the CPU's float32 computation of the same inputs instead, as
    accurate as the CPU's own ``dtype`` result (:func:`~hf_neuron.matrix.scenarios.contract.as_accurate`,
    :func:`decoding_held_to_float32`)."""
    reference = load_model(ctx, "cpu", dtype=dtype)
    model = load_model(ctx, ctx.device, dtype=dtype)
    input_ids = sample_ids(ctx, reference)
    actual = forward_outputs(model, input_ids, seed=ctx.seed)
    expected = forward_outputs(reference, input_ids, seed=ctx.seed)
    logits = _outputs_agree(ctx, actual, reference, input_ids, f"{dtype} {{}}", expected)
    float32 = functools.cache(lambda: load_model(ctx, "cpu"))  # loaded once, for the legs beyond the tolerance
    if beyond_tolerance(logits):
        exact = forward_outputs(float32(), input_ids, seed=ctx.seed)
        logits = worst_of([_as_accurate_where_beyond(actual[name], expected[name], exact[name], f"{dtype} {name}")
                           for name in expected])
    decoding = _no_generate(model) or _decoding(ctx, model, reference, input_ids, None)
    if beyond_tolerance(decoding) or _tokens_differ(decoding):
        decoding = _decoding_as_accurate(ctx, model, reference, float32(), input_ids, dtype) or decoding
    return [("logits", logits), ("default cache", decoding)]


def _as_accurate_where_beyond(actual: torch.Tensor, expected: torch.Tensor, exact: torch.Tensor,
                              what: str) -> ScenarioResult:
    """The element-by-element comparison of one output, or where it goes beyond the tolerance :func:`as_accurate`."""
    result = compare(actual, expected, what)
    return as_accurate(actual, expected, exact, what) if beyond_tolerance(result) else result


def _tokens_differ(result: ScenarioResult) -> bool:
    """Whether ``result`` failed on greedy tokens that differ from the CPU's where its scores did not tie."""
    return result.outcome == "failed" and result.parity is not None and result.parity["metric"] == TOKEN_MISMATCHES


def _decoding_as_accurate(ctx: CaseContext, model: PreTrainedModel, reference: PreTrainedModel,
                          float32: PreTrainedModel, input_ids: torch.Tensor, dtype: str) -> ScenarioResult | None:
    """Greedy decoding held to the CPU's float32 decoding (:func:`decoding_held_to_float32`); None where it cannot
    be (the failure stands)."""
    actual = greedy(model, input_ids, seed=ctx.seed, **_device_kwargs(ctx, None, {}))
    expected = greedy(reference, input_ids, seed=ctx.seed)
    exact = greedy(float32, input_ids, seed=ctx.seed)
    return decoding_held_to_float32(actual, expected, exact, f"greedy decoding (default cache, {dtype}) scores")


def decoding_held_to_float32(actual: Decoding, expected: Decoding, exact: Decoding, what: str) -> ScenarioResult | None:
    """A 16-bit greedy decoding (``actual``, the device's) held to the CPU's float32 decoding (``exact``) as the CPU's
    own 16-bit one (``expected``) is: in each row, the scores of every step up to and including the first where any
    of the three chose another token (all three decoded those from the same tokens) are :func:`as_accurate`, and at
    that step the device's token is the CPU's 16-bit one or the float32 one (16-bit rounding moved a near tie, on the
    device or on the CPU). None, and the failure stands, where the device chose a token neither CPU computation chose,
    or where a decoding made no tokens and scores or made something else."""
    import torch

    decodings = (actual, expected, exact)
    if any(d.tokens is None or d.scores is None or d.outputs for d in decodings):
        return None
    a, e, r = (d.tokens.cpu() for d in decodings)  # type: ignore[union-attr]
    if not (a.shape == e.shape == r.shape):
        return None
    held = torch.zeros(a.shape[1], a.shape[0], dtype=torch.bool)  # (steps, rows), as the scores are laid out
    for row in range(a.shape[0]):
        differing = ((a[row] != e[row]) | (e[row] != r[row])).nonzero()
        step = int(differing[0]) if len(differing) else a.shape[1] - 1
        if len(differing) and int(a[row, step]) not in (int(e[row, step]), int(r[row, step])):
            return None
        held[: step + 1, row] = True
    mine, cpus, float32s = (d.scores.cpu()[held] for d in decodings)  # type: ignore[union-attr]
    return as_accurate(mine, cpus, float32s, what)


def bf16(ctx: CaseContext) -> ScenarioResult:
    """In bfloat16, the forward outputs (logits) equal the CPU's within the bfloat16 tolerance, and greedy decoding
    agrees."""
    return ScenarioResult.of_legs(in_dtype(ctx, "bfloat16"))


def compile_backend(device: str) -> str:
    """The ``torch.compile`` backend of a case on ``device``: ``neuron`` on a neuron device (registered by the
    backend that owns the device: never a substitute), else ``aot_eager``: the same pipeline without the Neuron
    compiler's rules (Dynamo, AOTAutograd, the graphs run eagerly), for the CPU re-run of a neuron case and for a
    CPU-only run."""
    return "neuron" if device.split(":")[0] == "neuron" else "aot_eager"


def compile_forward(ctx: CaseContext) -> ScenarioResult:
    """``torch.compile(model, backend=<the device's>)`` computes the eager model's forward outputs (logits) on the
    device, with at least one graph compiled for it (:func:`graphs_compiled`)."""
    import torch

    fresh_dynamo()
    model = load_model(ctx, ctx.device)
    input_ids = sample_ids(ctx, model)
    eager = forward_outputs(model, input_ids, seed=ctx.seed)
    compiled = torch.compile(model, backend=compile_backend(ctx.device), dynamic=False)
    before = device_graphs()
    result = compare_outputs(forward_outputs(compiled, input_ids, seed=ctx.seed),  # type: ignore[arg-type]
                             eager, "compiled {}",
                             reference="eager's", device=ctx.device)
    return graphs_compiled(result, device_graphs() - before, nothing_compiled("the forward pass"))


def save(ctx: CaseContext) -> ScenarioResult:
    """``save_pretrained`` from the device, then ``from_pretrained`` onto it again (with the model's own class):
    exactly the saved model's forward outputs (logits), and the CPU's within tolerance."""
    model = load_model(ctx, ctx.device)
    input_ids = sample_ids(ctx, model)
    expected = forward_outputs(model, input_ids, seed=ctx.seed)
    with ctx.scratch() as directory:
        model.save_pretrained(directory)
        reloaded = forward_outputs(type(model).from_pretrained(directory, device_map=ctx.device,
                                                               dtype=model.dtype).eval(), input_ids,
                                   seed=ctx.seed)
    same = compare_outputs(reloaded, expected, "{} after save and reload", EXACT, device=ctx.device,
                           reference="the saved model's")
    if same.outcome != "passed":
        return same
    return _outputs_agree(ctx, reloaded, load_model(ctx, "cpu"), input_ids, "{} after save and reload")
