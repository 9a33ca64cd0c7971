"""Every rule of hf_neuron/device/trainium_rules.py fires on an input that triggers it and stays silent on one that does
not, when its switch is on; with its switch off it does not fire. Every rule and compile check cites its sources and
releases; the trainium profile turns on the rules the release it predicts follows by default, and a rule that changed
between releases shows the older behaviour under the older release's switches and the current one under the predicted
release's."""

from __future__ import annotations

import pytest
from _helpers import run

from hf_neuron import settings
from hf_neuron.device.trainium_rules import COMPILE_CHECKS, TRAINIUM_RULES, Rule, checked, profile_switches
from hf_neuron.matrix.profiles import PROFILES
from hf_neuron.vocabulary import trainium_sources
from hf_neuron.vocabulary.trainium_sources import Citation, CitationError

#: The values of the switches when a rule is off.
_OFF = {rule.switch: rule.off for rule in TRAINIUM_RULES}

_COMPILED = """
    import torch
    def compiled(fn, *args):
        try:
            torch.compile(fn, backend="neuron", fullgraph=True)(*args)
            return "compiled"
        except Exception as error:
            return "rejected " + ("NCC_EVRF060" if "NCC_EVRF060" in str(error) else
                                  "NCC_EVRF004" if "NCC_EVRF004" in str(error) else type(error).__name__)
"""

#: rule -> (code printing what the triggering input and the control input did, lines with the rule on, lines off).
RULE_CHECKS: dict[str, tuple[str, list[str], list[str]]] = {
    "64bit-narrowing": ("""
        import torch
        x = torch.tensor([1.0 + 1e-12], dtype=torch.float64, device="neuron")
        print((x * 1).cpu().item() == 1.0, (x * 1).dtype)
        y = torch.tensor([1.5], device="neuron")
        print((y * 1).cpu().item() == 1.5, (y * 1).dtype)
        """, ["True torch.float64", "True torch.float32"], ["False torch.float64", "True torch.float32"]),
    "memory-formats": ("""
        import torch
        x = torch.randn(1, 3, 4, 4, device="neuron")
        for memory_format in (torch.channels_last, torch.contiguous_format):
            try:
                x.contiguous(memory_format=memory_format)
                print("allowed")
            except RuntimeError as error:
                print("refused" if "only support contiguous or preserve" in str(error) else error)
        """, ["refused", "allowed"], ["allowed", "allowed"]),
    "compile-integer-scatter": (_COMPILED + """
    index = torch.tensor([0, 1, 0], device="neuron")
    scatter = lambda src: torch.zeros(2, dtype=src.dtype, device="neuron").scatter_add(0, index, src)
    print(compiled(scatter, torch.ones(3, dtype=torch.int64, device="neuron")))
    print(compiled(scatter, torch.ones(3, device="neuron")))
    """, ["rejected NCC_EVRF060", "compiled"], ["compiled", "compiled"]),
    "compile-complex": (_COMPILED + """
    pairs = torch.randn(4, 2, device="neuron")
    print(compiled(lambda x: torch.view_as_complex(x) * 2, pairs))
    print(compiled(lambda x: x * 2, pairs))
    """, ["rejected NCC_EVRF004", "compiled"], ["compiled", "compiled"]),
    "compile-backend-selection": ("""
        import torch
        for device in ("neuron", "cpu"):
            try:
                torch.compile(lambda t: t * 2)(torch.ones(2, device=device))
                print("compiled")
            except Exception as error:
                print("rejected", type(error).__name__)
        """, ["compiled", "compiled"], ["rejected InductorError", "compiled"]),
    "fallback-log": ("""
        import torch
        x = torch.randn(4, 4, device="neuron")
        torch.neuron.reset_op_log()
        x.argmax()
        print(sorted(torch.neuron.get_fallback_ops()))
        torch.neuron.reset_op_log()
        x @ x
        print(sorted(torch.neuron.get_fallback_ops()))
        """, ["['aten::argmax']", "[]"], ["[]", "[]"]),
    "complex-falls-back": ("""
        import torch
        z = torch.randn(4, dtype=torch.complex64, device="neuron")
        r = torch.randn(4, device="neuron")
        for t in (z, r):
            torch.neuron.reset_op_log()
            t * t
            print(sorted(torch.neuron.get_fallback_ops()))
        """, ["['aten::mul.Tensor']", "[]"], ["[]", "[]"]),
    "composite-routes": ("""
        import torch
        x = torch.randn(4, 4, device="neuron")
        torch.neuron.reset_op_log()
        x / 3
        print(sorted(torch.neuron.get_executed_ops()))
        torch.neuron.reset_op_log()
        x @ x
        print(sorted(torch.neuron.get_executed_ops()))
        """, ["['aten::div.out']", "['aten::mm']"], ["['aten::div.Tensor']", "['aten::mm']"]),
    "contiguous-results": ("""
        import torch
        x = torch.randn(2, 8, 4, 4).to(memory_format=torch.channels_last).to("neuron")
        weight = torch.randn(8, 8, 3, 3, device="neuron")
        print((x + 1).is_contiguous(), torch.nn.functional.conv2d(x, weight, padding=1).is_contiguous())
        print(x.transpose(2, 3).is_contiguous(), x.log1p().is_contiguous())  # a view; a fallback keeps the CPU's
        """, ["True True", "False False"], ["False False", "False False"]),
    "fused-attention": ("""
        import torch
        import torch.nn.functional as F
        for shape in ((1, 2, 4, 8), (2, 4, 8)):
            torch.neuron.reset_op_log()
            F.scaled_dot_product_attention(*(torch.randn(shape, device="neuron") for _ in range(3)))
            print(any("overrideable" in name for name in torch.neuron.get_executed_ops()))
        """, ["True", "False"], ["False", "False"]),
    "flex-attention": ("""
        import torch
        from torch.nn.attention.flex_attention import flex_attention
        for device in ("neuron", "cpu"):
            q = torch.randn(1, 2, 8, 4, device=device)
            try:
                flex_attention(q, q, q)
                print("ran")
            except ValueError as error:
                print("refused" if "FlexAttention is only supported" in str(error) else error)
        """, ["ran", "ran"], ["refused", "ran"]),
    "rng-on-cpu": ("""
        import torch
        torch.manual_seed(0); torch.randn(5); on_device = torch.randn(5, device="neuron").cpu()
        torch.manual_seed(0); torch.randn(5); on_cpu = torch.randn(5)
        print(torch.equal(on_device, on_cpu))  # one stream: the CPU's
        torch.neuron.manual_seed(0); first = torch.randn(5, device="neuron").cpu()
        torch.neuron.manual_seed(0); second = torch.randn(5, device="neuron").cpu()
        print(torch.equal(first, second))  # the device's generator governs
        """, ["True", "False"], ["False", "True"]),
}


def test_every_rule_has_a_check_and_a_switch() -> None:
    assert sorted(RULE_CHECKS) == sorted(rule.name for rule in TRAINIUM_RULES), "a rule without a check (or stale)"
    names = {switch.name for switch in settings.SWITCHES}
    for rule in TRAINIUM_RULES:
        assert rule.switch in names, rule.name
        on, off = ({rule.switch: value} for value in (rule.value, rule.off))
        assert settings.read(rule.switch, on) != settings.read(rule.switch, off), rule.name


def test_every_rule_and_compile_check_cites_its_sources_and_releases() -> None:
    sources = trainium_sources.load()
    rules, checks = checked()
    assert rules == TRAINIUM_RULES and checks == COMPILE_CHECKS
    for entry in (*rules, *checks):
        assert entry.citation.sources and entry.citation.releases, entry.name
        assert sources.problem(entry.citation) is None, entry.name
        # a fact no released source states says so
        assert sources.confirmed(entry.citation) or entry.citation.unconfirmed or set(entry.citation.releases) == {
            "pre-release"}, entry.name


@pytest.mark.parametrize(("citation", "problem"), [
    (lambda: Citation((), ("2.34",)), "needs at least one source"),
    (lambda: Citation(("env-vars",), ()), "needs at least one release"),
    (lambda: trainium_sources.load().check(Citation(("a-forum-post",), ("2.34",)), "rule x"),
     r"rule x: cites unknown source\(s\) \['a-forum-post'\]"),
    (lambda: trainium_sources.load().check(Citation(("env-vars",), ("2.40",)), "rule x"),
     r"rule x: names unknown release\(s\) \['2.40'\]"),
])
def test_a_citation_without_a_source_or_release_is_refused(citation: object, problem: str) -> None:
    with pytest.raises(CitationError, match=problem):
        citation()  # type: ignore[operator]


@pytest.mark.parametrize("rule", TRAINIUM_RULES, ids=lambda rule: rule.name)
def test_the_trainium_profile_turns_on_the_rules_of_the_release_it_predicts(rule: Rule) -> None:
    """On where the predicted release follows the rule by default; hf-neuron's own switch off where it does not; the
    real backend's own variable (a non-default setting there) left at its default."""
    profile = PROFILES["trainium"]
    assert profile.predicts == trainium_sources.load().predicts == "2.34"
    switches = profile.switches
    if profile.predicts in rule.default_releases:
        assert switches.get(rule.switch) == rule.value
    elif rule.own_switch:
        assert switches.get(rule.switch) == rule.off
    else:
        assert rule.switch not in switches and settings.read(rule.switch, {}) != settings.read(
            rule.switch, {rule.switch: rule.value})


@pytest.mark.parametrize("name", sorted(RULE_CHECKS))
def test_the_rule_fires_on_its_input_and_not_on_the_control(name: str) -> None:
    rule = next(rule for rule in TRAINIUM_RULES if rule.name == name)
    code, fired, silent = RULE_CHECKS[name]
    base = dict(_OFF)
    if rule.switch != "HF_NEURON_EMULATOR_OP_LOG":
        base["HF_NEURON_EMULATOR_OP_LOG"] = "1"  # the rule's effect is seen in the op log
    on = run(code, {**base, rule.switch: rule.value})
    off = run(code, base)
    assert on.returncode == 0, on.stderr
    assert off.returncode == 0, off.stderr
    assert on.stdout.splitlines() == fired, f"{name} on: trigger, then control"
    assert off.stdout.splitlines() == silent, f"{name} off"


#: The rules the released backend changed: code printing what the device does, its lines under the pre-release tree's
#: switches, and under the predicted release's (2.34).
RELEASE_CHANGES: dict[str, tuple[str, list[str], list[str]]] = {
    "rng-on-cpu": ("""
        import torch
        generator = torch.Generator(device="neuron").manual_seed(3)
        try:
            torch.randn(4, device="neuron", generator=generator)
            print("an explicit neuron generator: used")
        except RuntimeError:
            print("an explicit neuron generator: refused")
        torch.neuron.manual_seed(7); first = torch.randn(5, device="neuron").cpu()
        torch.neuron.manual_seed(7); second = torch.randn(5, device="neuron").cpu()
        print("the device's generator draws:", torch.equal(first, second))
        torch.manual_seed(0); first = torch.randn(5, device="neuron").cpu()
        torch.manual_seed(0); second = torch.randn(5, device="neuron").cpu()
        print("torch.manual_seed reproduces them:", torch.equal(first, second))
        torch.manual_seed(0); torch.randn(5, device="neuron"); after = torch.randn(5)
        torch.manual_seed(0); alone = torch.randn(5)
        print("the CPU's stream is left alone:", torch.equal(after, alone))
        """,
        ["an explicit neuron generator: refused", "the device's generator draws: False",
         "torch.manual_seed reproduces them: True", "the CPU's stream is left alone: False"],
        ["an explicit neuron generator: used", "the device's generator draws: True",
         "torch.manual_seed reproduces them: True", "the CPU's stream is left alone: True"]),
    "compile-complex": ("""
        import torch
        def rotary(x, freqs):  # Llama 4's and DeepSeek-V2's complex rotary embedding
            pairs = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
            return torch.view_as_real(pairs * freqs).flatten(-2).type_as(x)
        torch.manual_seed(0)
        freqs = torch.polar(torch.ones(8, 4), torch.randn(8, 4)).to("neuron")
        x = torch.randn(2, 8, 8, device="neuron")
        try:
            out = torch.compile(rotary, backend="neuron", fullgraph=True)(x, freqs)
            print("compiled, as eagerly:", torch.allclose(out.cpu(), rotary(x, freqs).cpu()))
        except Exception as error:
            print("rejected", "NCC_EVRF004" if "NCC_EVRF004" in str(error) else type(error).__name__)
        """, ["rejected NCC_EVRF004"], ["compiled, as eagerly: True"]),
    "flex-attention": ("""
        import torch
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
        causal = lambda b, h, q, k: q >= k
        torch.manual_seed(0)
        q, k, v = (torch.randn(1, 2, 16, 8) for _ in range(3))
        expected = flex_attention(q, k, v, block_mask=create_block_mask(causal, None, None, 16, 16, device="cpu"))
        on_neuron = lambda: (t.to("neuron") for t in (q, k, v))
        try:
            mask = create_block_mask(causal, None, None, 16, 16, device="neuron")
            out = flex_attention(*on_neuron(), block_mask=mask)
            print("eager, as on the CPU:", torch.allclose(out.cpu(), expected, atol=1e-6))
        except ValueError:
            print("eager: refused")
        try:  # as transformers does: the mask and the attention compiled with torch.compile's default backend
            mask = torch.compile(create_block_mask)(causal, None, None, 16, 16, device="neuron")
            out = torch.compile(flex_attention)(*on_neuron(), block_mask=mask)
            print("compiled, as on the CPU:", torch.allclose(out.cpu(), expected, atol=1e-6))
        except Exception as error:
            print("compiled: failed", type(error).__name__)
        """, ["eager: refused", "compiled: failed InductorError"],
        ["eager, as on the CPU: True", "compiled, as on the CPU: True"]),
    "compile-backend-selection": ("""
        import torch
        model = torch.nn.Linear(4, 2).to("neuron")
        x = torch.randn(3, 4, device="neuron")
        try:
            out = torch.compile(model)(x)  # no backend named: Inductor by name
            print("compiled, as eagerly:", torch.allclose(out.cpu(), model(x).cpu()))
        except Exception as error:
            print("rejected", type(error).__name__)
        """, ["rejected InductorError"], ["compiled, as eagerly: True"]),
}


def test_every_rule_a_release_changed_shows_both_behaviours() -> None:
    changed = sorted(rule.name for rule in TRAINIUM_RULES
                     if ("pre-release" in rule.default_releases) != ("2.34" in rule.default_releases))
    assert changed == sorted(RELEASE_CHANGES), "a rule that changed between releases without a test of both"


def _release_environment(release: str) -> dict[str, str | None]:
    """The switches of a profile predicting ``release``, the others of any release unset."""
    every = {switch for name in trainium_sources.load().releases for switch in profile_switches(name)}
    return {**dict.fromkeys(every), **profile_switches(release)}


@pytest.mark.parametrize("name", sorted(RELEASE_CHANGES))
def test_a_changed_rule_behaves_as_each_release_does(name: str) -> None:
    rule = next(rule for rule in TRAINIUM_RULES if rule.name == name)
    assert ("pre-release" in rule.default_releases) != ("2.34" in rule.default_releases), "a rule 2.34 changed"
    code, old, new = RELEASE_CHANGES[name]
    before, now = run(code, _release_environment("pre-release")), run(code, _release_environment("2.34"))
    assert before.returncode == 0, before.stderr
    assert now.returncode == 0, now.stderr
    assert before.stdout.splitlines() == old, f"{name} under the pre-release tree"
    assert now.stdout.splitlines() == new, f"{name} under 2.34"
