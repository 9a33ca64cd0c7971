"""``hf-neuron matrix run | list | merge | catalog``: the compatibility matrix from the command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from hf_neuron import settings
from hf_neuron.compat.catalog import CATALOG_PATH
from hf_neuron.compat.ranking import RANKING_PATH
from hf_neuron.errors import InputError
from hf_neuron.matrix.options import MatrixConfig, add_options
from hf_neuron.vocabulary.exits import EXIT_FAILURES, EXIT_INCOMPLETE, EXIT_OK, EXIT_USAGE
from hf_neuron.vocabulary.groups import GROUPS, declaration
from hf_neuron.vocabulary.records import CONFLICT_POLICIES

if TYPE_CHECKING:
    from hf_neuron.matrix.catalog.hub_ranking import ListModels

__all__ = ["catalog_generate", "ranking_refresh", "register"]

_RUN_EPILOG = """\
exit status: 0 every case recorded, none failing on the device; 1 some fail on the device;
2 bad input; 3 the run did not finish (continue it with --resume).
examples:
  hf-neuron matrix run --slice ci -n 2
  hf-neuron matrix run --group diffusion --scenario forward generate
  hf-neuron matrix run --device cpu --results results/cpu-baseline     (no neuron backend needed)
  hf-neuron matrix run --arch llama gpt2 --scenario forward generate --timeout 120
  hf-neuron matrix run --shard 2/4 --run-id nightly-42 --results results/shard-2
  hf-neuron matrix run --resume --results results/shard-2 --shard 2/4 --run-id nightly-42
"""


def _run(args: argparse.Namespace) -> int:
    from hf_neuron.matrix.runner import run

    return run(vars(args), settings.read("HF_NEURON_MATRIX_WORKERS") if args.workers is None else args.workers)


def _list(args: argparse.Namespace) -> int:
    cases = MatrixConfig.from_values(vars(args)).cases()
    if args.architectures:
        names = list(dict.fromkeys(case.model_type for case in cases))
        print("\n".join(names))
        print(f"{len(names)} architectures", file=sys.stderr)
        return EXIT_OK
    for case in cases:
        print(case.case_id)
    print(f"{len(cases)} cases", file=sys.stderr)
    return EXIT_OK


def _merge(args: argparse.Namespace) -> int:
    from hf_neuron.matrix.results.merge import merge, write_merged

    merged = merge(args.dirs, args.on_conflict)
    if merged.missing_shards and not args.partial:
        print(f"error: run {merged.manifest.run_id} is incomplete: shards {', '.join(merged.missing_shards)} are "
              "missing (their cases have no record); merge every shard, or pass --partial to publish the run without "
              "them (its report then says it is incomplete); nothing was written", file=sys.stderr)
        return EXIT_INCOMPLETE
    write_merged(merged, args.out)
    print(f"merged {len(merged.records)} records of run {merged.manifest.run_id} from {len(args.dirs)} "
          f"directories into {args.out} ({merged.duplicates} duplicates dropped)", file=sys.stderr)
    for conflict in merged.conflicts:
        print(f"conflict, kept the latest: {conflict}", file=sys.stderr)
    if merged.missing_shards:
        print(f"warning: a partial run: shards {', '.join(merged.missing_shards)} are missing", file=sys.stderr)
    return EXIT_OK


def catalog_generate(path: Path = CATALOG_PATH, *, check: bool = False, run_models: bool = True,
                     groups: Sequence[str] = ()) -> int:
    """``hf-neuron matrix catalog --generate [--check] [--group G ...]``: regenerate the catalog (only the entries of
    ``groups`` when given, keeping the others as they are, but for the types those groups hold now: a type that moved
    into one of them is regenerated there, not kept in its old group) and print what changed.

    With ``check``, write nothing and return 1 when the committed catalog is out of date (for CI); otherwise write
    it and return 0. A malformed committed catalog raises :class:`InputError` (exit 2).
    """
    import dataclasses

    from hf_neuron.compat.catalog import Catalog, catalog_order, diff_catalogs, load_catalog, write_catalog
    from hf_neuron.matrix.catalog.generate import catalog_types, describe_groups, generate_catalog, unexpected_runs

    wanted = [declaration(group).name for group in groups]
    before = load_catalog(path) if path.exists() else Catalog("none", "none", "", ())
    if wanted:
        types = [model_type for model_type, (group, _) in catalog_types().items() if group in wanted]
        fresh = generate_catalog(types=types, run_models=run_models)
        kept = [entry for entry in before.entries if entry.group not in wanted and entry.model_type not in types]
        catalog = dataclasses.replace(fresh, entries=tuple(sorted([*kept, *fresh.entries], key=catalog_order)))
    else:
        catalog = generate_catalog(run_models=run_models)
    diff = diff_catalogs(before, catalog)
    print(diff.describe())
    print(describe_groups(catalog))
    for model_type in unexpected_runs(catalog):
        print(f"warning: {model_type} runs although the reviewed data says it cannot; remove that entry",
              file=sys.stderr)
    if check:
        return EXIT_FAILURES if diff else EXIT_OK
    write_catalog(catalog, path)
    print(f"wrote {path}")
    return EXIT_OK


def ranking_refresh(path: Path = RANKING_PATH, *, limit: int = 500, list_models: ListModels | None = None) -> int:
    """``hf-neuron matrix catalog --refresh-ranking``: rewrite the ranking from the Hub; 0 on success, 2 when the
    Hub cannot be reached or names no known type (the file is left unchanged then)."""
    from hf_neuron.compat.ranking import write_ranking
    from hf_neuron.matrix.catalog.hub_ranking import HubUnreachableError, refresh_ranking

    try:
        entries = refresh_ranking(limit=limit, list_models=list_models)
    except HubUnreachableError as error:
        print(f"error: {error}; {path} was left unchanged", file=sys.stderr)
        return EXIT_USAGE
    if not entries:
        print(f"error: the Hub listed no model of a known model_type; {path} was left unchanged", file=sys.stderr)
        return EXIT_USAGE
    written = write_ranking(entries, path)
    print(f"wrote {written}: {len(entries)} model types, top: {', '.join(e.model_type for e in entries[:5])}")
    return EXIT_OK


def _catalog(args: argparse.Namespace) -> int:
    if args.refresh_ranking:
        if args.check:
            raise InputError("--check goes with --generate, not with --refresh-ranking")
        if args.catalog_groups:
            raise InputError("--group goes with --generate, not with --refresh-ranking")
        return ranking_refresh()
    return catalog_generate(check=args.check, groups=args.catalog_groups)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``hf-neuron matrix`` and its actions."""
    parser = subparsers.add_parser(
        "matrix", help="the compatibility matrix: run it, list its cases, merge shards",
        description="Every generative architecture x scenario on the neuron device, one JSON record per case.",
    )
    actions = parser.add_subparsers(dest="matrix_action", metavar="ACTION", required=True)

    run = actions.add_parser(
        "run", help="run the selected cases (pytest matrix underneath, isolated workers)",
        description="Run the selected cases in isolated worker processes; records go to --results as they finish.",
        epilog=_RUN_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_options(run.add_argument, "cli", ("select", "run"))
    run.add_argument("-n", "--workers", type=int, metavar="N",
                     help="worker processes running cases in parallel (default $HF_NEURON_MATRIX_WORKERS, 1)")
    run.set_defaults(func=_run)

    listing = actions.add_parser("list", help="print the case ids a selection holds, one per line",
                                 description="Print the cases `matrix run` would run with the same selection.")
    add_options(listing.add_argument, "cli", ("select",))
    listing.add_argument("--architectures", action="store_true",
                         help="print the architectures of the selection, one per line, instead of its cases")
    listing.set_defaults(func=_list)

    merging = actions.add_parser("merge", help="merge the results directories of one run's shards",
                                 description="Merge shard results (same --run-id) into one results directory.")
    merging.add_argument("dirs", nargs="+", type=Path, metavar="DIR", help="results directories of the shards")
    merging.add_argument("--out", required=True, type=Path, metavar="DIR", help="new results directory to write")
    merging.add_argument("--on-conflict", choices=CONFLICT_POLICIES, default="error",
                         help="when two records of a case disagree: fail (default) or keep the latest")
    merging.add_argument("--partial", action="store_true",
                         help="publish a run some of whose shards are missing (without it, the merge exits 3 and "
                         "writes nothing); the merged manifest names them and the report's banner says the run is "
                         "incomplete")
    merging.set_defaults(func=_merge)

    catalog = actions.add_parser("catalog", help="regenerate compat/catalog.json or the ranking",
                                 description="Maintain the reviewed catalog of architectures in compat/.")
    job = catalog.add_mutually_exclusive_group(required=True)
    job.add_argument("--generate", action="store_true",
                     help="regenerate compat/catalog.json from the installed transformers and print what changed")
    job.add_argument("--refresh-ranking", action="store_true",
                     help="rewrite compat/ranking.csv from the Hub's most-downloaded text-generation models")
    catalog.add_argument("--check", action="store_true",
                         help="with --generate: write nothing, exit 1 if the committed catalog is out of date")
    catalog.add_argument("--group", dest="catalog_groups", action="extend", nargs="+", default=[], metavar="GROUP",
                         help=f"with --generate: regenerate only these groups' entries ({', '.join(GROUPS)})")
    catalog.set_defaults(func=_catalog)
