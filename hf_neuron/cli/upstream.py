"""``hf-neuron upstream transformers``: transformers' own model tests on neuron and on the CPU, side by side."""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

from hf_neuron.vocabulary.exits import EXIT_FAILURES, EXIT_OK

if TYPE_CHECKING:
    from hf_neuron.upstream.summary import ArchSummary

__all__ = ["format_summary", "register"]

_EPILOG = """\
exit status: 0 no test fails on neuron that does not fail on the CPU, except those listed as not applicable
on neuron (compat/upstream_not_applicable.toml), and every architecture passed tests on the CPU; 1 otherwise;
2 bad input (unknown architecture, missing source tree, malformed list, no neuron device).
examples:
  hf-neuron upstream transformers --source ~/src/transformers --arch llama gpt2 -n 2
  hf-neuron upstream transformers --fetch --top 10 --results results/upstream
  hf-neuron upstream transformers --source DIR --arch llama -k "sdpa_inference"
"""
_SHOWN_TESTS = 6
_WIDTH = 116


def _tests(names: tuple[str, ...] | list[str]) -> str:
    shown = ", ".join(names[:_SHOWN_TESTS])
    return shown + (f", ... ({len(names)} tests)" if len(names) > _SHOWN_TESTS else "")


def format_summary(summary: ArchSummary) -> str:
    """One architecture's table: counts on each device, neuron-only failures by fingerprint, exclusions."""
    lines = [f"{summary.model_type}", f"  {'':8}{'passed':>8}{'failed':>8}{'skipped':>9}{'not applicable':>16}"]
    for device, counts in summary.counts.items():
        na = str(counts.not_applicable) if device == "neuron" else "-"
        lines.append(f"  {device:8}{counts.passed:>8}{counts.failed:>8}{counts.skipped:>9}{na:>16}")
    if not summary.ran:
        lines.append("  no test passed on the CPU: nothing here says anything about neuron (see the logs)")
    lines.append(f"  neuron-only failures: {summary.neuron_only_tests or 'none'}")
    for group in summary.neuron_only:
        message = textwrap.shorten(f"{group.type}: {group.message}", _WIDTH - 24)
        lines.append(f"    [{group.fingerprint}] {message} ({group.frame or 'no frame'})")
        lines.append(textwrap.indent(textwrap.fill(_tests(group.tests), _WIDTH - 6), " " * 6))
    reasons: dict[str, list[str]] = {}
    for test, reason in summary.not_applicable:
        reasons.setdefault(reason, []).append(test)
    for reason, tests in reasons.items():
        lines.append(textwrap.fill(f"not applicable on neuron ({len(tests)}): {reason}", _WIDTH,
                                   initial_indent="  ", subsequent_indent="    "))
        lines.append(textwrap.indent(textwrap.fill(_tests(tests), _WIDTH - 6), " " * 6))
    if summary.removable:
        lines.append(f"  listed as not applicable but passes on neuron (take it off the list): "
                     f"{_tests(summary.removable)}")
    return "\n".join(lines)


def _run(args: argparse.Namespace) -> int:
    from hf_neuron.device.build import cache_root
    from hf_neuron.upstream.records import read_records
    from hf_neuron.upstream.runner import UpstreamOptions, run
    from hf_neuron.upstream.summary import summarize

    options = UpstreamOptions(
        archs=tuple(args.arch or ()), top=args.top, results=args.results, source=args.source,
        cache=(args.cache or cache_root() / "upstream") if args.fetch else None,
        workers=args.workers, timeout_s=args.timeout, keyword=args.keyword, not_applicable=args.not_applicable,
        suite=args.suite,
    )
    records = run(options, progress=lambda line: print(line, file=sys.stderr))
    summaries = summarize(records)
    _, problems = read_records([args.results])
    for problem in problems:
        print(f"warning: skipped {problem}", file=sys.stderr)
    archs = options.archs or tuple(summaries)
    failing = [arch for arch in archs if arch not in summaries or not summaries[arch].ok]
    for arch in archs:
        print(format_summary(summaries[arch]) if arch in summaries else f"{arch}\n  no record: see the logs")
        print()
    backend = records[0]["env"]["backend"] if records else "unknown"
    print(f"upstream {args.suite} tests, neuron ({backend} backend) against the CPU: "
          + (f"neuron-only failures in {', '.join(failing)}" if failing else "no neuron-only failure")
          + f"; records in {args.results}")
    return EXIT_FAILURES if failing else EXIT_OK


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``hf-neuron upstream``."""
    from hf_neuron.compat.upstream_not_applicable import NOT_APPLICABLE_PATH, SUITES

    parser = subparsers.add_parser(
        "upstream", help="run a library's own model tests on neuron and on the CPU",
        description="Run a library's own model tests (tests/models/<arch>/test_modeling_<arch>.py) on neuron and "
        "on the CPU, one JSON record per test and device, and compare.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("suite", choices=SUITES, help="whose tests")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--source", type=Path, metavar="DIR", help="a source tree (checkout) of the library")
    where.add_argument("--fetch", action="store_true",
                       help="clone the tag of the installed version into the cache first (needs network)")
    parser.add_argument("--cache", type=Path, metavar="DIR",
                        help="with --fetch: where source trees are kept (default: $HF_NEURON_CACHE/upstream, "
                        "else ~/.cache/hf-neuron/upstream)")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--arch", nargs="+", metavar="ARCH",
                       help="architectures: folders of tests/models/ (a model type's '-' is '_' there)")
    which.add_argument("--top", type=int, metavar="N",
                       help="the N best-ranked architectures of compat/ranking.csv (those without tests are left out)")
    parser.add_argument("--results", type=Path, default=Path("results/upstream"), metavar="DIR",
                        help="new directory for the records and logs (default: results/upstream)")
    parser.add_argument("-n", "--workers", type=int, default=1, metavar="N",
                        help="pytest-xdist workers per test file (default 1)")
    parser.add_argument("--timeout", type=float, default=600.0, metavar="S", help="per test (default 600 s)")
    parser.add_argument("-k", dest="keyword", metavar="EXPR", help="only tests matching this pytest -k expression")
    parser.add_argument("--not-applicable", type=Path, metavar="FILE",
                        help=f"the list of tests not applicable on neuron (default: {NOT_APPLICABLE_PATH})")
    parser.set_defaults(func=_run)
