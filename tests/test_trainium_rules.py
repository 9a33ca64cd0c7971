"""Every rule of hf_neuron/device/trainium_rules.py fires on an input that triggers it and stays silent on one that does
not, when its switch is on; with its switch off it does not fire. The trainium profile turns every rule on, and the
documentation shows the table."""

from __future__ import annotations

from pathlib import Path

import pytest
from _helpers import run

from hf_neuron import settings
from hf_neuron.device.trainium_rules import TRAINIUM_RULES, Rule, markdown_table
from hf_neuron.matrix.profiles import PROFILES

DOC = Path(__file__).resolve().parents[1] / "docs" / "trainium-prediction.md"

#: The values of the switches when a rule is off (the cpu-parity profile's, or the op log off).
_OFF = {"HF_NEURON_EMULATOR_64BIT": "exact", "HF_NEURON_EMULATOR_MEMORY_FORMATS": "any",
        "HF_NEURON_EMULATOR_COMPILE_CONTRACT": "lenient", "HF_NEURON_EMULATOR_OP_LOG": "0",
        "HF_NEURON_EMULATOR_DISPATCH": "cpu", "HF_NEURON_EMULATOR_RNG": "device"}

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
        assert settings.read(rule.switch, {rule.switch: rule.value}) is not None
        assert rule.source or rule.docs, f"{rule.name}: where does the fact come from?"


@pytest.mark.parametrize("rule", TRAINIUM_RULES, ids=lambda rule: rule.name)
def test_the_trainium_profile_turns_the_rule_on(rule: Rule) -> None:
    """Every rule the released backend follows by default; a rule of a non-default setting keeps the default."""
    switches = PROFILES["trainium"].switches
    if rule.released_default:
        assert switches.get(rule.switch) == rule.value
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


def test_the_documentation_shows_the_rules() -> None:
    assert markdown_table() in DOC.read_text(encoding="utf-8"), \
        "paste hf_neuron.device.trainium_rules.markdown_table() into docs/trainium-prediction.md"
