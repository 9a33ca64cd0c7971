"""transformers' once-only advice, which Dynamo skips in a compiled graph once patched
(``transformers.*-once-skipped-in-compiled-graphs``; test_patch_lifecycle shows the break coming back without the
patch), is still given once where the model runs eagerly."""

from __future__ import annotations

import logging

import pytest
import torch


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
