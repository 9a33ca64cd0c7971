"""Regenerate the documentation pages written from the code and the data they document.

- ``docs/reference.md``: the environment switches (``hf_neuron.settings.SWITCHES``), the ``torch.neuron`` contract
  (``hf_neuron.device.contract.CONTRACT``), every patch of the registry, the model groups (the group registry), the
  built-in scenarios (their declarations), and the closed sets of outcomes, harness gaps and failure classes.
- ``docs/price-performance.md``: the price-performance estimate's assumptions, hardware and prices with their sources,
  and its calibration against published measurements (``compat/hardware.toml``, ``hf_neuron.checkpoint.cost``).
- ``docs/trainium-profile.md``: the torch-neuronx release the ``trainium`` profile predicts, the sources of its facts
  (``hf_neuron/device/trainium_sources.toml``), and every rule, compile check, the operator list and every known
  failure with its sources and the releases it holds for.
- ``docs/sample-run.md``: the figures of the sample run, from its records (``reports/sample/records.jsonl.gz``), the
  history (``reports/history/``) and the reviewed data (``compat/``), computed by the report's own tables.

``--check`` changes nothing and exits 1 when a page is out of date (``tests/test_readme.py`` runs it).

    python scripts/update_docs.py [--check]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
SAMPLE = ROOT / "reports" / "sample" / "records.jsonl.gz"
HISTORY = ROOT / "reports" / "history"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def switches() -> str:
    """The environment switches, from hf_neuron.settings.SWITCHES."""
    from hf_neuron.settings import SWITCHES

    rows = ["| variable | default | read by | what it does |", "|---|---|---|---|"]
    rows += [f"| `{s.name}` | `{s.default or '(unset)'}` | {s.read_by} | {_cell(s.doc)} |" for s in SWITCHES]
    return "\n".join(rows)


def contract() -> str:
    """The torch.neuron contract, from hf_neuron.device.contract.CONTRACT."""
    from hf_neuron.device.contract import CONTRACT

    rows = ["| name | kind | called by | must |", "|---|---|---|---|"]
    rows += [f"| `{r.name}` | {r.kind} | {_cell(r.callers)} | {_cell(r.behaviour)} |" for r in CONTRACT]
    return "\n".join(rows)


def patches() -> str:
    """Every patch of the registry with its reason."""
    from hf_neuron.patches.table import markdown_table

    return markdown_table().rstrip("\n")


def groups() -> str:
    """The model groups, from the group registry."""
    from hf_neuron.vocabulary.groups import REGISTRY

    rows = ["| group | holds | shares the scenarios of | model types from (loaded through) | package | also read as |",
            "|---|---|---|---|---|---|"]
    for d in REGISTRY:
        mappings = "; ".join(f"`{m}` (`{c}`)" for m, c in d.auto_classes) or "its package"
        aliases = ", ".join(f"`{a}`" for a in d.aliases) or "—"
        rows.append(f"| `{d.name}` | {d.description} | {d.library} | {mappings} | `{d.models}` | {aliases} |")
    return "\n".join(rows)


def scenarios() -> str:
    """The built-in scenarios, from their declarations."""
    from hf_neuron.matrix.scenarios.registry import load_scenarios

    declared = load_scenarios()
    rows = ["| scenario | kind | trains | requires | runs on | groups | passes when |",
            "|---|---|---|---|---|---|---|"]
    for name in declared:
        d = declared[name]
        rows.append(f"| `{name}` | {d.kind} | {'yes' if d.trains else 'no'} | {d.requires or '—'} | "
                    f"{', '.join(d.models)} | {', '.join(d.groups())} | {_cell(d.passes)} |")
    return "\n".join(rows)


def closed_sets() -> str:
    """The outcomes, harness gaps and failure classes."""
    from hf_neuron.vocabulary.failures import EXCUSING_CLASSES, FAILURE_CLASSES, NEURON_ONLY_CLASSES, RULES
    from hf_neuron.vocabulary.gaps import GAP_MEANINGS
    from hf_neuron.vocabulary.outcomes import OUTCOMES, label

    why = {rule.failure_class: rule.why for rule in RULES}
    known = "what the runner knows: the case timed out, its process died, a parity check missed its tolerance"
    why.update({"timeout": known, "crash": known, "numerics-mismatch": known, "other": "no rule matched"})
    lines = ["Outcomes of a record: " + ", ".join(f"`{o}` ({label(o)})" for o in OUTCOMES) + ".", "",
             "| harness gap | means |", "|---|---|"]
    lines += [f"| `{gap}` | {meaning} |" for gap, meaning in GAP_MEANINGS.items()]
    lines += ["", "| failure class | excuses a CPU failure of its class | neuron's by construction | matched by |",
              "|---|---|---|---|"]
    lines += [f"| `{c}` | {'yes' if c in EXCUSING_CLASSES else 'no'} | {'yes' if c in NEURON_ONLY_CLASSES else 'no'} "
              f"| {_cell(why[c])} |"
              for c in FAILURE_CLASSES]
    return "\n".join(lines)


def reference() -> str:
    """The whole reference page."""
    return f"""# hf-neuron reference

Generated from the code by `python scripts/update_docs.py` (a test fails when it is out of date): do not edit.

- [Environment switches](#environment-switches)
- [The `torch.neuron` contract](#the-torchneuron-contract)
- [Patches](#patches)
- [Groups](#groups)
- [Scenarios](#scenarios)
- [Outcomes, gaps, failure classes](#outcomes-gaps-failure-classes)

## Environment switches

Every variable is validated when read; a bad value stops `import torch` (or the command) with a message naming the
variable, the value and what is accepted, and `hf-neuron settings` prints each one's value here. The fidelity
switches make the reference device behave like Trainium hardware where it differs from the CPU.

{switches()}

## The `torch.neuron` contract

Every function TorchNeuron documents for `torch.neuron`, plus what torch and the Hugging Face libraries call on a
device module (`hf_neuron/device/contract.py`). `tests/test_device_contract.py` checks each against whichever
backend is active.

{contract()}

## Patches

Each patch is a declared record in `hf_neuron/patches/<library>.py`: an id named for what it makes true, the
library versions it was written against, and why it exists (the upstream code it works around).

{patches()}

## Groups

The group registry (`hf_neuron/vocabulary/groups.py`), in its order, which decides where a model type two groups
list belongs.

{groups()}

## Scenarios

The built-in scenario set (`hf_neuron/matrix/scenarios/builtin.py`), in run order. *core*: an architecture must pass
it (or it must not apply) to run unmodified; *variant*: reported on its own; *extra*: reported and in the verdict.
*runs on*: the architectures' tiny models, the checkpoints' real-width slices (`hf-neuron check`, `--models
checkpoints`), or both.

{scenarios()}

## Outcomes, gaps, failure classes

The closed sets of `hf_neuron/vocabulary/`.

{closed_sets()}
"""


def _citation(citation: object) -> str:
    """A citation's cells: its sources (linked), the releases it holds for, what no released source confirms."""
    from hf_neuron.vocabulary.trainium_sources import Citation, load

    assert isinstance(citation, Citation)
    sources = load()
    cited = ", ".join(f"[`{name}`](#source-{name.replace('.', '')})" for name in citation.sources)
    status = (f"unconfirmed: {_cell(citation.unconfirmed)}" if citation.unconfirmed
              else "confirmed" if sources.confirmed(citation) else "no released source")
    return f"{cited} | {', '.join(citation.releases)} | {status}"


def trainium_profile() -> str:
    """The trainium profile's page, from trainium_sources.toml, the rules, the operator list and the known failures."""
    from hf_neuron.compat.known_failures import KNOWN_FAILURES_PATH, citation, load_known_failures
    from hf_neuron.device import trainium_ops
    from hf_neuron.device.trainium_rules import checked
    from hf_neuron.matrix.scenarios.registry import load_scenarios
    from hf_neuron.vocabulary.trainium_sources import load

    sources = load()
    rules, checks = checked()
    releases = ["| release | torch-neuronx | Neuron SDK | torch | date | what |", "|---|---|---|---|---|---|"]
    releases += [f"| `{r.id}` | {', '.join(r.torch_neuronx)} | {r.neuron_sdk} | {r.torch} | {r.date} | {r.what} |"
                 for r in sources.releases.values()]
    cited = ["| source | kind | what | date | read from here |", "|---|---|---|---|---|"]
    for source in sources.sources.values():
        title = f"[{_cell(source.title)}]({source.url})" if source.url else _cell(source.title)
        cited.append(f"| <a id=\"source-{source.id.replace('.', '')}\"></a>`{source.id}` | {source.kind} | {title} | "
                     f"{source.date} ({source.dated}) | {_cell(source.read)} |")
    rule_rows = ["| rule | what the device does | sources | holds for | released sources | default in | switch "
                 "(off) |", "|---|---|---|---|---|---|---|"]
    for rule in rules:
        behaviour = _cell(rule.behaviour + (f" (sources disagree: {rule.disagreement})" if rule.disagreement else ""))
        tree = f" Pre-release tree: {', '.join(f'`{path}`' for path in rule.tree_paths)}." if rule.tree_paths else ""
        rule_rows.append(f"| `{rule.name}` | {behaviour}{tree} | {_citation(rule.citation)} | "
                         f"{', '.join(rule.default_releases)} | `{rule.switch}={rule.value}` (`{rule.off}`) |")
    check_rows = ["| check | what the backend does | sources | holds for | released sources |", "|---|---|---|---|---|"]
    check_rows += [f"| `{c.name}` | {_cell(c.behaviour)} | {_citation(c.citation)} |" for c in checks]
    ops = trainium_ops.load()
    op_rows = ["| list | entries | sources | holds for | released sources |", "|---|---|---|---|---|"]
    op_rows += [f"| `{key}` | {len(getattr(ops, key))} | {_citation(ops.citation)} |"
                for key in trainium_ops.OPERATOR_LISTS]
    known = load_known_failures(KNOWN_FAILURES_PATH, load_scenarios().names, required=True)
    known_rows = ["| architectures | scenarios | expected failure | sources | holds for | released sources |",
                  "|---|---|---|---|---|---|"]
    for entry in known.entries:
        names = {key: ", ".join(f"`{v}`" for v in values) for key, values in entry.names.items()}
        message = f"`{_cell(entry.message.pattern)}`" if entry.message else "any"
        known_rows.append(f"| {names['model_type']} | {names['scenario']} | {message} | {_citation(citation(entry))} |")
    return f"""# The Trainium profile: what it predicts, and where each fact comes from

Generated by `python scripts/update_docs.py` from `hf_neuron/device/trainium_sources.toml`, the rules of
`hf_neuron/device/trainium_rules.py`, `hf_neuron/device/trainium_ops.toml` and `compat/known_failures.toml` (a test
fails when it is out of date): do not edit.

The `trainium` matrix profile predicts **{sources.predicted.label}**: it turns on the rules that release follows by
default and off hf-neuron's switches of the others (`hf-neuron doctor` and the report say so; each record's
`env.predicts` names it). Every fact cites its sources and the releases it holds for; *released sources* says whether
a released page or note states it, and what is unconfirmed where none does. How the predictions are made:
[predicting Trainium](trainium-prediction.md).

## Releases

{chr(10).join(releases)}

## Sources

*Kind*: `released-page`, `release-note` and `compiler-page` speak for a released backend; `pre-release-tree` is the
April 2026 tree, `study-notes` the project's digest of pages it does not name, `upstream-code` a library's own code.
*Date*: the page's date-modified (`modified`), the release's date (`released`), or the day it was read here when the
page carries none (`read`).

{chr(10).join(cited)}

## Rules

Each rule's switch turns it on for the reference device; *default in* lists the releases that behave so by default
(elsewhere it holds only under the real backend's non-default setting named by its switch, or not at all).

{chr(10).join(rule_rows)}

## Compile contract

The checks of `torch.compile(backend="neuron")` that no switch turns off (`hf_neuron/device/dynamo_backend.py`).

{chr(10).join(check_rows)}

## Operator list

Every list of `hf_neuron/device/trainium_ops.toml` carries its file's citation.

{chr(10).join(op_rows)}

## Known failures

Every entry of `compat/known_failures.toml`. An entry that holds for the pre-release tree only is a gap of the
prediction for the later releases: the reference device cannot yet do what they do, and still fails the case.

{chr(10).join(known_rows)}
"""


def sample_run() -> str:
    """The sample run's page, from its records, the history and compat/."""
    from hf_neuron.compat.baselines import load_baseline
    from hf_neuron.compat.catalog import load_catalog
    from hf_neuron.compat.ranking import load_ranking, ranking
    from hf_neuron.report.figures import run_page
    from hf_neuron.report.history import previous_run, read_history
    from hf_neuron.report.load import load_records
    from hf_neuron.report.site import run_tables

    tables = run_tables(load_records([SAMPLE]), baseline=load_baseline(), catalog=load_catalog(),
                        ranking=ranking(load_ranking()))
    previous = previous_run(read_history(HISTORY), tables.run)
    return run_page(tables, title="The sample run", previous=previous,
                    source="the records of `reports/sample/records.jsonl.gz`, the history of `reports/history/` and "
                           "the catalog, ranking and baseline of `compat/`")


def _number(value: float | None, style: str = "{:g}") -> str:
    return "—" if value is None else style.format(value)


def price_performance() -> str:
    """The estimate's page: its formulas, the utilisation defaults and the calibration they come from, and every value
    of compat/hardware.toml with its source."""
    from hf_neuron.checkpoint.cost import calibration
    from hf_neuron.compat.hardware import CHIP_VALUES, load_hardware

    hardware, found = load_hardware(), calibration()
    chosen = found.utilisation
    calibrated = ["| model (as published) | planned from | family | devices | weights | input / output tokens | "
                  "TTFT measured | TTFT estimated | error | TPOT measured | TPOT estimated | error | implied compute "
                  "| implied bandwidth | source |", "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in found.rows:
        m = row.measurement
        calibrated.append(
            f"| {m.model} | `{m.checkpoint}` | {m.family} | {m.devices} | {m.weights_dtype} | "
            f"{m.input_tokens:,} / {m.output_tokens:,} | {m.ttft_ms:g} ms | {row.ttft_ms:.1f} ms | "
            f"{row.ttft_error:+.0%} | {m.tpot_ms:g} ms | {row.tpot_ms:.1f} ms | {row.tpot_error:+.0%} | "
            f"{row.implied_compute:.3f} | {row.implied_memory:.3f} | [{m.source}](#sources) |")
    notes = [f"- {m.measurement.model} on {m.measurement.family}: {m.measurement.note}" for m in found.rows
             if m.measurement.note]
    chips = [f"| chip | kind | {' | '.join(CHIP_VALUES)} | not sourced |",
             "|---|---|" + "---|" * len(CHIP_VALUES) + "---|"]
    for chip in hardware.chips.values():
        values = [f"{_number(getattr(chip, key))} ({chip.sources[key]})" if key in chip.sources else "—"
                  for key in CHIP_VALUES]
        missing = "; ".join(f"{key}: {why}" for key, why in chip.unsourced.items()) or "—"
        chips.append(f"| {chip.name} | {chip.kind} | {' | '.join(values)} | {_cell(missing)} |")
    families = ["| family | chip | devices a chip | instance | chips an instance | on-demand USD an hour | region | "
                "not sourced |", "|---|---|---|---|---|---|---|---|"]
    for family in hardware.families.values():
        cited = family.sources
        price = (f"{family.usd_per_hour:g} ({cited['usd_per_hour']})" if family.usd_per_hour is not None else "—")
        chips_per = (f"{family.chips_per_instance} ({cited.get('chips_per_instance', '—')})"
                     if family.chips_per_instance is not None else "—")
        missing = "; ".join(f"{key}: {why}" for key, why in family.unsourced.items()) or "—"
        families.append(f"| {family.name} | {family.chip.name} | {family.devices_per_chip} | "
                        f"{family.instance or '—'} | {chips_per} | {price} | {family.region or '—'} | "
                        f"{_cell(missing)} |")
    sources = ["| source | what | read |", "|---|---|---|"]
    sources += [f"| `{s.name}` | [{_cell(s.what)}]({s.url}) | {s.read.isoformat()} |"
                for s in hardware.sources.values()]
    return f"""# Price-performance before renting: an estimate

Generated from `compat/hardware.toml` and `hf_neuron/checkpoint/cost.py` by `python scripts/update_docs.py` (a test
fails when it is out of date): do not edit.

`hf-neuron check MODEL --cost` estimates, for the checkpoint at full size and per instance family, the devices each
use needs, prefill, decode (one sequence and `--batch` sequences a step), full fine-tuning and LoRA tokens a second,
and US dollars a million tokens of each at on-demand prices; `--json` carries it under `cost`, and the report's
checkpoint table shows the decode rate and dollars a million output tokens on trn2 and H100. **It is an estimate, not
a measurement**: a roofline model at assumed utilisations, calibrated on the few measurements the vendors publish.

## How

- **FLOPs a token** (forward): `2 x P + 2 x W x c`, `P` the parameters a token uses (the active ones of a mixture of
  experts), `W` the plan's attention width (keys and values of every head, summed over the attention layers), `c` the
  tokens attended to. A training step is 3 forwards (full fine-tuning), 2 for LoRA (no gradient of frozen weights).
- **Time** of a piece of work on `d` devices: the slower of `FLOPs / (d x peak x u_c)` and
  `bytes / (d x bandwidth x u_m)` — a device's dense BF16 peak (FP8 for FP8 weights) and bandwidth are its chip's
  shared among the chip's devices (a logical NeuronCore at LNC=2 is a quarter of a Trainium chip). Never faster
  than either roofline (a test holds every catalogued checkpoint to the data file's bound).
- **Prefill** of `--seq` tokens: every token attends to half of them on average; the weights are read once.
  **Decode** at `--seq` tokens of context: a step reads the weights (a mixture of experts: at most `b` tokens' active
  parameters) and each sequence's KV cache; tokens a second are the step's `b` tokens over its time (all sequences
  together). **Training** of `--batch x --seq` tokens a step reads the use's memory once.
- **Devices**: the fewest whose memory holds the use (the plan's rule, for GPUs too: GPUs are not rounded to a
  tensor-parallel degree).
- **Price**: the instance's on-demand price shared among its devices, times the devices used (the rest of the
  instance serves other replicas). A family whose price is not sourced has no dollar figures.

## The utilisation defaults and the calibration

One pair for every model and family: **{chosen.compute:.3f} of the dense peak and {chosen.memory:.3f} of the memory
bandwidth**, the mean of what the published measurements below imply (a measured time to first token against its
prefill's compute roofline; a measured time per output token against its decode step's memory roofline). Not a
factor per model: the errors are shown as they are.

{chr(10).join(calibrated)}

{chr(10).join(notes)}

## Chips and GPUs

Dense peaks in TFLOPS, memory in GiB, bandwidth in TB/s; the source of each value in brackets ([sources](#sources)).

{chr(10).join(chips)}

## Instance families and prices

{chr(10).join(families)}

## Sources

{chr(10).join(sources)}
"""


PAGES = {"reference.md": reference, "price-performance.md": price_performance,
         "trainium-profile.md": trainium_profile, "sample-run.md": sample_run}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 if a page is out of date")
    parser.add_argument("--docs", type=Path, default=DOCS, help="the pages' directory (default: the checkout's docs/)")
    args = parser.parse_args()
    stale = []
    for name, render in PAGES.items():
        path = args.docs / name
        updated = render()
        if args.check:
            if not path.is_file() or path.read_text() != updated:
                stale.append(name)
            continue
        path.parent.mkdir(exist_ok=True)
        path.write_text(updated)
    for name in stale:
        print(f"docs/{name} is out of date: run python scripts/update_docs.py", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
