"""Graph-break patches keep what they patch: transformers' once-only advice, which Dynamo skips in a compiled graph
once patched (``transformers.*-once-skipped-in-compiled-graphs``), is still given once where the model runs eagerly;
the placeholder counts without a boolean index (``transformers.placeholder-count-without-boolean-index-*``) give the
same mask and the same error, and are every model that needs one. test_patch_lifecycle shows each break coming back
without its patch."""

from __future__ import annotations

import ast
import logging
from pathlib import Path

import pytest
import torch
from _helpers_patches import placeholder_mask, reinstalled

from hf_neuron.patches.transformers import PLACEHOLDER_COUNT_CLASSES


@pytest.mark.parametrize("method", ["warning_once", "info_once"])
def test_once_only_advice_is_given_once_eagerly_and_skipped_in_a_graph(
        neuron: object, method: str, caplog: pytest.LogCaptureFixture) -> None:
    from torch._dynamo.utils import counters
    from transformers.utils import logging as hf_logging

    logger = hf_logging.get_logger(f"hf_neuron_test.{method}")
    logger.setLevel(logging.INFO)

    def forward(x: torch.Tensor) -> torch.Tensor:
        getattr(logger, method)("advice for %s", method)
        return x * 2

    x = torch.ones(3, device="neuron")
    torch._dynamo.reset()
    counters.clear()
    with caplog.at_level(logging.INFO, logger=logger.name):
        torch.compile(forward, backend="neuron")(x)
        assert sum(counters["graph_break"].values()) == 0
        assert not [record for record in caplog.records if record.name == logger.name], "skipped in the graph"
        forward(x), forward(x)
    given = [record.getMessage() for record in caplog.records if record.name == logger.name]
    assert given == [f"advice for {method}"], "eagerly: once"


def _checks_a_boolean_index_count(function: ast.FunctionDef) -> bool:
    """Whether ``function`` calls ``torch_compilable_check`` on a count taken with a boolean index."""
    return any(isinstance(check, ast.Call) and isinstance(check.func, ast.Name)
               and check.func.id == "torch_compilable_check" and check.args
               and any(isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                       and node.func.attr == "numel" and isinstance(node.func.value, ast.Subscript)
                       and isinstance(node.func.value.slice, ast.Name) for node in ast.walk(check.args[0]))
               for check in ast.walk(function))


def test_every_placeholder_mask_that_counts_with_a_boolean_index_is_patched() -> None:
    """The installed transformers scanned: each class whose own ``get_placeholder_mask`` checks a count taken with
    ``inputs_embeds[mask].numel()`` (``torch_compilable_check``) is in the patch's list, and the list names no other
    (a new transformers release that adds or fixes one fails here, and the patch's version range is to be
    reviewed)."""
    import transformers

    found = set()
    for path in sorted((Path(transformers.__file__).parent / "models").glob("*/modeling_*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef) and any(
                    isinstance(item, ast.FunctionDef) and item.name == "get_placeholder_mask"
                    and _checks_a_boolean_index_count(item) for item in node.body):
                found.add((path.parent.name, node.name))
    assert found == set(PLACEHOLDER_COUNT_CLASSES)


@pytest.mark.parametrize(("module", "name"), [("voxtral", "VoxtralModel"), ("minicpmv4_6", "MiniCPMV4_6Model")])
def test_a_placeholder_count_gives_the_same_mask_and_error_without_a_break(neuron: object, module: str,
                                                                            name: str) -> None:
    breaks, patched = placeholder_mask(module, name)
    assert breaks == 0
    with pytest.raises(ValueError, match="do not match"):  # one feature row short of the two tokens: eagerly checked
        placeholder_mask(module, name, features=1, compiled=False)
    with reinstalled():
        breaks, original = placeholder_mask(module, name)
        assert breaks >= 1, "transformers' own count: nonzero, a data-dependent shape"
        with pytest.raises(ValueError, match="do not match"):
            placeholder_mask(module, name, features=1, compiled=False)
    assert torch.equal(patched.cpu(), original.cpu())
