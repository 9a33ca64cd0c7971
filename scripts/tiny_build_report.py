"""Try every causal-LM model type of the installed transformers as a tiny model on the CPU.

Prints how many build, forward and generate, and for each failure the stage and the reason; exits 1 when a type
fails that ``compat/tiny_overrides.toml`` does not review as ``runs = false``. Other groups (``--group``) are checked
with text inputs only, so image-text types needing images fail at forward. Usage::

    python scripts/tiny_build_report.py [--group decoder] [--only llama,gpt2] [--json out.json]
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--group", default="decoder", choices=("decoder", "encoder-decoder", "image-text", "all"),
                        help="catalog group to try (default: decoder)")
    parser.add_argument("--only", default="", help="comma-separated model types")
    parser.add_argument("--no-generate", action="store_true", help="stop after the forward pass")
    parser.add_argument("--json", type=Path, help="also write the results as JSON")
    args = parser.parse_args(argv)

    import torch
    from transformers.utils import logging

    from hf_neuron.compat.tiny_overrides import load_overrides
    from hf_neuron.matrix.catalog.cpu_check import check_text_model
    from hf_neuron.tiny.transformers.model_types import generative_types

    torch.set_num_threads(1)
    logging.set_verbosity_error()
    types = [t for t, (group, _) in generative_types().items() if args.group in ("all", group)]
    if args.only:
        types = [t for t in types if t in set(args.only.split(","))]

    start = time.perf_counter()
    results = []
    for model_type in types:
        result = check_text_model(model_type, until="forward" if args.no_generate else "generate")
        results.append(result)
        status = "ok" if result.ok else f"{result.stage}: {result.error}"
        print(f"{model_type:28s} {result.seconds:6.1f}s {result.parameters / 1e6:6.2f}M  {status}", flush=True)
    elapsed = time.perf_counter() - start

    stages = collections.Counter(r.stage for r in results)
    built = len(results) - stages["config"] - stages["build"]
    forwarded = built - stages["forward"]
    generated = forwarded - stages["generate"]
    print(f"\n{len(results)} types: {built} build, {forwarded} forward, "
          f"{generated if not args.no_generate else '-'} generate; {elapsed:.0f}s")
    reviewed = {t for t, override in load_overrides().items() if not override.runs}
    for result in results:
        if not result.ok:
            note = " (reviewed: runs = false)" if result.model_type in reviewed else ""
            print(f"  {result.model_type}: {result.stage}: {result.error}{note}")
    if args.json:
        args.json.write_text(json.dumps([dataclasses.asdict(r) for r in results], indent=1) + "\n")
    return 0 if all(r.ok or r.model_type in reviewed for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
