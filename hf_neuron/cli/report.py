"""``hf-neuron report build | summary | screenshot``: the static compatibility site of one matrix run, its Markdown
summary, a screenshot of a built site.

Bad record lines are skipped: each is printed as ``file:line: what is wrong`` and the site counts them. The exit
status is 0 when the site (summary, screenshot) was made, 2 when an input made it impossible (the message says which
and why), as for every command (:mod:`hf_neuron.vocabulary.exits`).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from hf_neuron.compat.baselines import BASELINE_PATH as DEFAULT_BASELINE
from hf_neuron.compat.catalog import CATALOG_PATH as DEFAULT_CATALOG
from hf_neuron.compat.library_bugs import LIBRARY_BUGS_PATH as DEFAULT_LIBRARY_BUGS
from hf_neuron.compat.ranking import RANKING_PATH as DEFAULT_RANKING
from hf_neuron.errors import InputError
from hf_neuron.vocabulary.exits import EXIT_OK
from hf_neuron.vocabulary.records import CONFLICT_POLICIES

if TYPE_CHECKING:
    from hf_neuron.vocabulary.jsonl import LineProblem

__all__ = ["register"]
_SHOWN_PROBLEMS = 20


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``report`` and its ``build`` sub-command."""
    report = subparsers.add_parser("report", help="the compatibility report site", description=__doc__)
    commands = report.add_subparsers(dest="report_command", metavar="SUBCOMMAND", required=True)
    build = commands.add_parser(
        "build",
        help="build the static site of one run from its records",
        description="Build the static site (index, one page per architecture, downloads) of one matrix run.",
    )
    build.add_argument(
        "--results", type=Path, nargs="+", required=True, metavar="DIR",
        help="directories of *.jsonl or *.jsonl.gz records (the shards of one run), or record files",
    )
    build.add_argument("--out", type=Path, required=True, metavar="DIR", help="site directory to write")
    build.add_argument(
        "--history", type=Path, metavar="DIR",
        help="run summaries: read for the trend and the diff; this run's summary is added",
    )
    build.add_argument(
        "--baseline", type=Path, default=DEFAULT_BASELINE, metavar="FILE",
        help=f"baseline file (default: {DEFAULT_BASELINE})",
    )
    build.add_argument(
        "--catalog", type=Path, metavar="FILE",
        help=f"architecture catalog: groups, rows not run (default: {DEFAULT_CATALOG} if present)",
    )
    build.add_argument(
        "--ranking", type=Path, metavar="FILE",
        help=f"ranking CSV with columns model_type,rank,source (default: {DEFAULT_RANKING} if present)",
    )
    build.add_argument(
        "--library-bugs", type=Path, metavar="FILE",
        help="the libraries' bugs that fail cases on every device, shown on their architectures' pages (default: "
        f"{DEFAULT_LIBRARY_BUGS} if present)",
    )
    build.add_argument("--top", type=int, default=100, metavar="N", help="size of the top-N view (default: 100)")
    build.add_argument(
        "--on-conflict", choices=CONFLICT_POLICIES, default="error",
        help="when records of one case disagree: 'error' (default) refuses to splice runs; 'latest' keeps each "
             "case's latest record and the page counts the replaced ones",
    )
    build.add_argument(
        "--upstream", type=Path, nargs="+", action="extend", default=[], metavar="DIR",
        help="records of `hf-neuron upstream` (the libraries' own tests on neuron; repeatable): a column and a section "
        "per library on the index, a section per library on an architecture's page",
    )
    build.set_defaults(func=_build)

    summary = commands.add_parser(
        "summary",
        help="print a run's matrix as Markdown (for GitHub's job summary)",
        description="Print the counts, the architectures x scenarios table and the failing cases of the records as "
        "Markdown, e.g. `hf-neuron report summary --results merged >> \"$GITHUB_STEP_SUMMARY\"`.",
    )
    summary.add_argument("--results", type=Path, nargs="+", required=True, metavar="DIR",
                         help="directories of *.jsonl or *.jsonl.gz records, or record files")
    summary.add_argument("--title", default="Compatibility matrix", help="the heading (default: %(default)s)")
    summary.set_defaults(func=_summary)

    shot = commands.add_parser(
        "screenshot",
        help="save a PNG of the top of a built site's index (Debian's Chromium, through Playwright)",
        description="Save a PNG of the top of SITE/index.html, as the README shows the sample report.",
    )
    shot.add_argument("--site", type=Path, required=True, metavar="DIR", help="a site built by `report build`")
    shot.add_argument("--out", type=Path, required=True, metavar="PNG", help="the PNG file to write")
    shot.set_defaults(func=_screenshot)


def _optional(given: Path | None, default: Path) -> Path | None:
    """The file to read: the one given, else the default when it exists."""
    return given if given is not None else (default if default.is_file() else None)


def _print_problems(problems: list[LineProblem]) -> None:
    for problem in problems[:_SHOWN_PROBLEMS]:
        print(f"warning: skipped {problem}", file=sys.stderr)
    if len(problems) > _SHOWN_PROBLEMS:
        print(f"warning: ... and {len(problems) - _SHOWN_PROBLEMS} more skipped lines", file=sys.stderr)


def _summary(args: argparse.Namespace) -> int:
    from hf_neuron.report.load import load_records
    from hf_neuron.report.markdown import markdown_summary

    loaded = load_records(args.results)
    _print_problems(loaded.problems)
    if not loaded.records:
        raise InputError(f"no valid record in {', '.join(map(str, args.results))}")
    print(markdown_summary(loaded.records, title=args.title, skipped_lines=len(loaded.problems)), end="")
    return EXIT_OK


def _screenshot(args: argparse.Namespace) -> int:
    from hf_neuron.report.screenshot import screenshot

    written = screenshot(args.site, args.out)
    print(f"wrote {written} ({written.stat().st_size // 1024} kB)")
    return EXIT_OK


def _build(args: argparse.Namespace) -> int:
    from hf_neuron.compat.baselines import load_baseline
    from hf_neuron.compat.catalog import load_catalog
    from hf_neuron.compat.library_bugs import load_library_bugs
    from hf_neuron.compat.ranking import load_ranking, ranking
    from hf_neuron.matrix.results.merge import missing_shards
    from hf_neuron.matrix.scenarios.registry import load_scenarios
    from hf_neuron.report.site import build_site

    if args.top < 1:
        raise InputError(f"--top {args.top}: give at least 1")
    started = time.perf_counter()
    catalog_path = _optional(args.catalog, DEFAULT_CATALOG)
    ranking_path = _optional(args.ranking, DEFAULT_RANKING)
    bugs_path = _optional(args.library_bugs, DEFAULT_LIBRARY_BUGS)
    catalog = load_catalog(catalog_path) if catalog_path else None
    result = build_site(
        args.results,
        args.out,
        baseline=load_baseline(args.baseline),
        catalog=catalog,
        ranking=ranking(load_ranking(ranking_path)) if ranking_path else None,
        history_dir=args.history,
        top_n=args.top,
        on_conflict=args.on_conflict,
        upstream=args.upstream,
        missing_shards=missing_shards(args.results),
        library_bugs=load_library_bugs(bugs_path, scenario_names=load_scenarios().names,  # the checkout's names
                                       model_types=load_catalog().by_type() if DEFAULT_CATALOG.is_file() else None,
                                       required=args.library_bugs is not None) if bugs_path else None,
    )
    _print_problems(result.problems)
    if result.replaced:
        print(f"warning: {len(result.replaced)} conflicting records were replaced by a later one (--on-conflict "
              "latest); the page counts them", file=sys.stderr)
    compared = f", compared with run {result.previous_run_id}" if result.previous_run_id else ""
    checkpoints = f", {result.checkpoints} checkpoints" if result.checkpoints else ""
    print(
        f"built {result.index} from {result.records} records ({result.architectures} architectures{checkpoints}) "
        f"of run {result.run_id}{compared} in {time.perf_counter() - started:.1f} s"
    )
    return EXIT_OK
