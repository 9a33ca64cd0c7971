"""Try every model type of a group (or all groups) as a tiny model on the CPU, through the group's own CPU check.

Prints how many build and run, and for each failure the stage and the reason; exits 1 when a type fails that the
group's reviewed data does not say cannot run. Usage::

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
    from hf_neuron.vocabulary.groups import GROUPS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--group", default="decoder", choices=(*GROUPS, "all"),
                        help="catalog group to try (default: decoder)")
    parser.add_argument("--only", default="", help="comma-separated model types")
    parser.add_argument("--json", type=Path, help="also write the results as JSON")
    args = parser.parse_args(argv)

    import torch
    from transformers.utils import logging

    from hf_neuron.matrix.catalog.generate import catalog_types
    from hf_neuron.tiny.groups import group_models

    torch.set_num_threads(1)
    logging.set_verbosity_error()
    types = [(t, group) for t, (group, _) in catalog_types().items() if args.group in ("all", group)]
    if args.only:
        types = [(t, group) for t, group in types if t in set(args.only.split(","))]

    start = time.perf_counter()
    results, reviewed = [], set()
    for model_type, group in types:
        result = group_models(group).cpu_check(model_type)
        results.append(result)
        if group_models(group).reviewed(model_type) is not None:
            reviewed.add(model_type)
        status = "ok" if result.ok else f"{result.stage}: {result.error}"
        print(f"{model_type:28s} {result.seconds:6.1f}s {result.parameters / 1e6:6.2f}M  {status}", flush=True)
    elapsed = time.perf_counter() - start

    stages = collections.Counter(r.stage for r in results)
    built = len(results) - stages["config"] - stages["build"]
    print(f"\n{len(results)} types: {built} build, {stages['ok']} run; {elapsed:.0f}s")
    for result in results:
        if not result.ok:
            note = " (reviewed: cannot run)" if result.model_type in reviewed else ""
            print(f"  {result.model_type}: {result.stage}: {result.error}{note}")
    if args.json:
        args.json.write_text(json.dumps([dataclasses.asdict(r) for r in results], indent=1) + "\n")
    return 0 if all(r.ok or r.model_type in reviewed for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
