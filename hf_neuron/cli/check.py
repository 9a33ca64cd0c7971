"""``hf-neuron check MODEL``: will this checkpoint run on Trainium, on how many NeuronCores, at what cost?

It plans the checkpoint at full size without allocating (parameters, memory by use, NeuronCores and chips per
instance family: :mod:`hf_neuron.checkpoint.plan`), with ``--cost`` estimates its price-performance on Trainium and
GPUs (:mod:`hf_neuron.checkpoint.cost`; always in ``--json``, under ``cost``), then runs a real-width slice of it
through the matrix's checkpoint
scenarios on neuron (the reference device where TorchNeuron is not installed, under the ``trainium`` profile) and
compares each with the CPU (:mod:`hf_neuron.matrix.check`). Exit status: 0 when nothing failed on neuron (untested
cases and failures the CPU shares are listed, not counted), 1 when something did (or the checkpoint's quantization
does not run on neuron), 2 on bad input.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hf_neuron import settings
from hf_neuron.checkpoint.instances import GIB
from hf_neuron.checkpoint.plan import USES
from hf_neuron.checkpoint.slice import DEFAULT_LAYERS, SliceRequest, default_budget
from hf_neuron.compat.hardware import trainium_families
from hf_neuron.errors import InputError
from hf_neuron.matrix.profiles import DEFAULT_PROFILE, PROFILES
from hf_neuron.vocabulary.exits import EXIT_FAILURES, EXIT_OK
from hf_neuron.vocabulary.outcomes import label

if TYPE_CHECKING:
    from hf_neuron.checkpoint.facts import Prepared
    from hf_neuron.checkpoint.slice import CheckpointSlice
    from hf_neuron.vocabulary.records import Record

__all__ = ["check", "register", "summary"]

_EPILOG = """\
MODEL is a config.json, a model folder, a diffusers model_index.json, or a Hub id found in the local Hugging Face
cache (never downloaded).
exit status: 0 nothing failed on neuron; 1 something did; 2 bad input.
examples:
  hf-neuron check ./Llama-3.1-8B/config.json
  hf-neuron check Qwen/Qwen3-30B-A3B --seq 8192 --batch 4 --cost
  hf-neuron check black-forest-labs/FLUX.1-dev --plan-only --json
"""

#: Each use's name in the table.
_USE_NAMES = {"inference": "inference", "full_fine_tune": "full fine-tune", "lora": "LoRA"}


def _gib(size: int) -> str:
    return f"{size / GIB:.1f} GiB"


def _count(number: int) -> str:
    for scale, unit in ((1e9, "B"), (1e6, "M"), (1e3, "K")):
        if number >= scale:
            return f"{number / scale:.2f} {unit}"
    return str(number)


def _verdict(record: Record) -> str:
    """A record's verdict in the matrix's words (:func:`hf_neuron.vocabulary.records.case_verdict`)."""
    from hf_neuron.vocabulary.records import case_verdict

    return case_verdict(record)


def summary(prepared: Prepared, records: list[Record]) -> dict[str, Any]:
    """The object ``--json`` prints: the checkpoint, its plan, its price-performance estimate per family (``cost``),
    its slice and its verdicts (scenario -> verdict)."""
    from hf_neuron.checkpoint.cost import estimates
    from hf_neuron.checkpoint.facts import checkpoint_facts

    found = prepared.plan
    facts = checkpoint_facts(prepared)
    return {
        "model": prepared.request.id,
        "model_type": prepared.source.architecture,
        "group": prepared.source.group,
        "config": str(prepared.source.path),
        "dtype": prepared.source.dtype,
        "parameters": found.parameters,
        "active_parameters": found.active_parameters,
        "memory": found.memory.by_use(),
        "memory_parts": {"weights": found.memory.weights, "kv_cache": found.memory.kv_cache,
                         "activations": found.memory.activations,
                         "lora_adapter_parameters": found.memory.adapter_parameters,
                         "weights_dtype": found.dtype, "seq": found.seq, "batch": found.batch,
                         "lora_rank": found.lora_rank},
        "neuron_cores": {family: {use: {"cores": spot.cores, "chips": spot.chips, "instances": spot.instances}
                                  for use, spot in uses.items()} for family, uses in found.neuron_cores.items()},
        "cost": {family: found_estimate.as_json() for family, found_estimate in estimates(found).items()},
        "quantization": facts.get("quantization"),
        "slice": facts.get("slice"),
        "verdicts": {record["scenario"]: _verdict(record) for record in records},
        "cases": [{"scenario": record["scenario"], "outcome": record["outcome"], "verdict": _verdict(record),
                   "reason": record["reason"], "gap": record["gap"], "cpu_verdict": record["cpu_verdict"],
                   "failure": record["failure"], "parity": record["parity"], "duration_s": record["duration_s"],
                   "peak_memory_bytes": record["peak_memory_bytes"], "fallback_ops": record["fallback_ops"]}
                  for record in records],
        "backend": records[0]["env"]["backend"] if records else None,
        "profile": records[0]["env"].get("profile") if records else None,
    }


def _plan_lines(prepared: Prepared, inference: CheckpointSlice) -> list[str]:
    """What ``check`` says of ``prepared`` (planned for training cases) and of its slice for the cases that do not
    train (``inference``: the same slice, its own estimate)."""
    found, source = prepared.plan, prepared.source
    memory = found.memory
    active = "" if found.active_parameters is None else f", {_count(found.active_parameters)} active per token"
    lines = [
        f"{prepared.request.id}: {source.architecture} ({source.group}), config {source.path}",
        f"  parameters   {_count(found.parameters)}{active}; dtype {source.dtype or 'not stated'}, weights counted "
        f"in {found.dtype}",
        f"  memory       inference {_gib(memory.inference)} (weights {_gib(memory.weights)} + KV cache "
        f"{_gib(memory.kv_cache)} at {found.seq} tokens x {found.batch}); full fine-tune "
        f"{_gib(memory.full_fine_tune)}; LoRA r={found.lora_rank} {_gib(memory.lora)}",
    ]
    for family in trainium_families():
        spots = found.neuron_cores[family.name]
        uses = "; ".join(f"{_USE_NAMES[use]} {spots[use].cores} core{'s' * (spots[use].cores > 1)} / "
                         f"{spots[use].chips} chip{'s' * (spots[use].chips > 1)}" for use in USES)
        lines.append(f"  {family.name:<12} ({_gib(family.device_bytes)} a NeuronCore at LNC=2) {uses}")
    if prepared.quantization is not None:
        quantized = prepared.quantization
        lines.append(f"  quantized    {quantized.method}: {label(quantized.verdict)}: {quantized.why}")
    cut = prepared.slice
    cuts = ", ".join(cut.reductions) or f"{cut.layers} layer{'s' * (cut.layers > 1)}"
    fits = "fits" if cut.fits else "does NOT fit"
    inferring = "fits" if inference.fits else "does NOT fit"
    lines.append(f"  slice        {cuts}: {_count(cut.parameters)} parameters; needs about {_gib(cut.bytes)} to "
                 f"train ({fits}), {_gib(inference.bytes)} not training ({inferring}); budget {_gib(cut.budget)}")
    return lines


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


def _usd(value: float | None) -> str:
    return "-" if value is None else f"{value:,.2f}"


def _cost_lines(prepared: Prepared) -> list[str]:
    """The price-performance estimate's table (``--cost``), one line a family, then each family's assumptions."""
    from hf_neuron.checkpoint.cost import estimates

    found = prepared.plan
    estimated = estimates(found)
    lines = [f"  ESTIMATE     price-performance at {found.seq} tokens x {found.batch} (not a measurement; "
             "assumptions below, docs/price-performance.md)",
             f"  {'family':<6} {'devices':>7} {'prefill/s':>10} {'decode/s':>9} {'x' + str(found.batch) + '/s':>9} "
             f"{'train/s':>9} {'LoRA/s':>9} {'USD/h':>8} {'USD/M out':>10} {'USD/M train':>11}"]
    for name, row in estimated.items():
        lines.append(f"  {name:<6} {row.devices:>7} {_rate(row.prefill_tokens_per_s):>10} "
                     f"{_rate(row.decode_tokens_per_s):>9} {_rate(row.decode_tokens_per_s_batch):>9} "
                     f"{_rate(row.train_tokens_per_s):>9} {_rate(row.lora_train_tokens_per_s):>9} "
                     f"{_usd(row.usd_per_hour):>8} {_usd(row.usd_per_million_output_tokens):>10} "
                     f"{_usd(row.usd_per_million['train_tokens_per_s']):>11}")
    for name, row in estimated.items():
        lines += [f"  {name:<6} assumes: {'; '.join(row.assumptions[i] for i in (0, 3))}"]
    first = next(iter(estimated.values()))
    lines += [f"  all    assume: {'; '.join(first.assumptions[i] for i in (1, 2))}"]
    return lines


def _case_line(record: Record) -> str:
    verdict = label(_verdict(record))
    failure = record["failure"]
    if failure is not None and _verdict(record) != "passed":
        verdict += f" ({failure['failure_class']})"
    note = (failure["message"].splitlines() or [""])[0] if failure else (record["reason"] or "")
    peak = "" if record["peak_memory_bytes"] is None else _gib(record["peak_memory_bytes"])
    return f"  {record['scenario']:<10} {verdict:<32} {record['duration_s']:>7.1f} s  {peak:>9}  {note[:100]}"


def check(model: str, *, seq: int, batch: int, lora_rank: int, layers: int, max_gb: float | None, plan_only: bool,
          as_json: bool, scenarios: list[str], profile: str, timeout: float | None, results: Path | None,
          cost: bool = False) -> int:
    """Plan ``model`` (with ``cost``, estimate its price-performance) and run its slice (unless ``plan_only``); print
    the table (or ``as_json`` the summary)."""
    from hf_neuron.checkpoint.facts import Prepared, remember
    from hf_neuron.checkpoint.plan import plan
    from hf_neuron.checkpoint.quantization import quantization
    from hf_neuron.checkpoint.slice import plan_slice
    from hf_neuron.checkpoint.source import resolve

    if min(seq, batch, lora_rank, layers) < 1:
        raise InputError("--seq, --batch, --lora-rank and --layers take a whole number of 1 or more")
    if max_gb is not None and not max_gb > 0:
        raise InputError(f"--max-gb {max_gb:g}: give a positive number of GiB")
    from hf_neuron.matrix.check import check_cases, checkpoint_cases, prepare_environment

    prepare_environment(profile)
    source = resolve(model)
    budget = int(max_gb * GIB) if max_gb is not None else default_budget()
    request = SliceRequest(source.name, source.path, layers, budget)
    planned = plan(source, seq=seq, batch=batch, lora_rank=lora_rank)
    inference, prepared = (  # one slice; a case that does not train needs less of the budget
        Prepared(dataclasses.replace(request, trains=trains), source, planned,
                 plan_slice(source, budget=budget, layers=layers, trains=trains), quantization(source.quantization))
        for trains in (False, True))
    remember(inference)
    remember(prepared)
    out = sys.stderr if as_json else sys.stdout
    for line in _plan_lines(prepared, inference.slice) + (_cost_lines(prepared) if cost else []):
        print(line, file=out, flush=True)
    records: list[Record] = []
    if not plan_only:
        cases = checkpoint_cases(request, scenarios)
        if not cases:
            raise InputError(f"--scenario {' '.join(scenarios)}: none of them is a scenario of a checkpoint's slice")
        print(f"  {'scenario':<10} {'verdict':<32} {'time':>9}  {'peak':>9}  note", file=out, flush=True)
        records = check_cases(cases, profile=profile, results=results, on_record=lambda r: print(
            _case_line(r), file=out, flush=True),
            timeout_s=settings.read("HF_NEURON_MATRIX_TIMEOUT") if timeout is None else timeout)
    if as_json:
        print(json.dumps(summary(prepared, records), indent=1))
    failed = any(_verdict(record) == "fails-on-neuron" for record in records)
    not_runnable = prepared.quantization is not None and prepared.quantization.verdict == "not-runnable"
    return EXIT_FAILURES if failed or not_runnable else EXIT_OK


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``check`` command."""
    parser = subparsers.add_parser(
        "check", help="will a checkpoint run on Trainium, on how many NeuronCores, at what cost?",
        description="Plan a checkpoint at full size (parameters, memory, NeuronCores) and run a real-width slice of it "
                    "on neuron against the CPU.", epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", metavar="MODEL", help="config.json, model folder, model_index.json, or cached Hub id")
    parser.add_argument("--seq", type=int, default=4096, metavar="N",
                        help="tokens per sequence the memory is planned for (default 4096)")
    parser.add_argument("--batch", type=int, default=1, metavar="N", help="sequences at once (default 1)")
    parser.add_argument("--lora-rank", type=int, default=16, metavar="R", help="rank of the planned LoRA (default 16)")
    parser.add_argument("--layers", type=int, default=DEFAULT_LAYERS, metavar="N",
                        help=f"layers the slice keeps (default {DEFAULT_LAYERS}; one of every kind the config "
                             "declares)")
    parser.add_argument("--max-gb", type=float, metavar="GIB",
                        help="memory budget of the slice (default: 3/4 of the memory available now)")
    parser.add_argument("--plan-only", action="store_true", help="plan at full size; run nothing")
    parser.add_argument("--cost", action="store_true",
                        help="estimate tokens a second and US dollars a million tokens on Trainium and GPUs (an "
                             "estimate: docs/price-performance.md)")
    parser.add_argument("--json", dest="as_json", action="store_true",
                        help="print one JSON object on stdout (the table goes to stderr)")
    parser.add_argument("--scenario", dest="scenarios", action="extend", nargs="+", default=[], metavar="SCENARIO",
                        help="run only these scenarios (forward, backward, generate, compile, dtype)")
    parser.add_argument("--profile", default=DEFAULT_PROFILE, choices=sorted(PROFILES),
                        help=f"what the reference device is asked to be (default {DEFAULT_PROFILE})")
    parser.add_argument("--timeout", type=float, metavar="SECONDS",
                        help="seconds a scenario may take (default $HF_NEURON_MATRIX_TIMEOUT, 300)")
    parser.add_argument("--results", type=Path, metavar="DIR", help="also write the cases' records here")
    parser.set_defaults(func=lambda args: check(
        args.model, seq=args.seq, batch=args.batch, lora_rank=args.lora_rank, layers=args.layers,
        max_gb=args.max_gb, plan_only=args.plan_only, as_json=args.as_json, scenarios=args.scenarios,
        profile=args.profile, timeout=args.timeout, results=args.results, cost=args.cost))

