"""``hf-neuron upstream SUITE``: a library's own tests on neuron and on the CPU, side by side."""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from hf_neuron.vocabulary.exits import EXIT_FAILURES, EXIT_OK, EXIT_SKIPPED

if TYPE_CHECKING:
    from hf_neuron.upstream.suites import Suite
    from hf_neuron.upstream.summary import ArchSummary

__all__ = ["format_groups", "format_summary", "format_table", "register"]

_EPILOG = """\
exit status: 0 no test fails on neuron that the CPU does not fail the same way (a timeout or a crash never
counts as the same), except those listed as not applicable on neuron (compat/upstream_not_applicable.toml), neuron
ran every test the CPU passed, and every unit ran tests; 1 otherwise; 2 bad input (unknown suite, group,
architecture or file, missing source tree, malformed list, no neuron device), or a run that did not run where it
says (a "neuron" run on the CPU, or the reverse: its records are not reported); 4 with --configured: the settings
give no source (nothing ran).
examples:
  hf-neuron upstream transformers --source ~/src/transformers --arch llama gpt2 -n 2
  hf-neuron upstream transformers --fetch --top 10 --results results/upstream
  hf-neuron upstream peft --fetch -n 2                        # its default groups (--list shows them)
  hf-neuron upstream peft --fetch --tests tests/test_shira.py -k lora
  hf-neuron upstream accelerate --fetch --group nightly -n 2
  hf-neuron upstream diffusers --source ../shared/upstream/diffusers-tests --group flux sd3
  hf-neuron upstream trl --source REPO --revision COMMIT      # a git repository of TRL: the tests of that commit
  hf-neuron upstream trl --source REPO --against 1.9.0        # its tests against the release they were written for
  hf-neuron upstream diffusers --configured --group ci -n 1   # the source the nightly and CI take (settings)
"""
_SHOWN_TESTS = 6
_WIDTH = 116


def _tests(names: tuple[str, ...] | list[str]) -> str:
    shown = ", ".join(names[:_SHOWN_TESTS])
    return shown + (f", ... ({len(names)} tests)" if len(names) > _SHOWN_TESTS else "")


def format_summary(summary: ArchSummary) -> str:
    """One unit's block: counts on each device, neuron-only failures by fingerprint, exclusions."""
    lines = [f"{summary.model_type}", f"  {'':8}{'passed':>8}{'failed':>8}{'skipped':>9}{'not applicable':>16}"]
    for device, counts in summary.counts.items():
        na = str(counts.not_applicable) if device == "neuron" else "-"
        lines.append(f"  {device:8}{counts.passed:>8}{counts.failed:>8}{counts.skipped:>9}{na:>16}")
    if not summary.ran:
        lines.append("  no test passed on the CPU (nor on neuron where the CPU skipped every test): nothing here says "
                     "anything about neuron (see the logs)")
    if summary.same_failure:
        lines.append(f"  failing on the CPU the same way: {summary.same_failure}")
    if summary.on_stand_ins:
        lines.append(f"  ran on stand-ins of Hub models or datasets: {summary.on_stand_ins}")
    lines.append(f"  neuron-only failures: {summary.neuron_only_tests or 'none'}")
    if summary.neuron_gaps:
        lines.append(textwrap.fill(f"  passed on the CPU, not run on neuron (no record, or skipped on neuron only): "
                                   f"{_tests(summary.neuron_gaps)}", _WIDTH, subsequent_indent="      "))
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


def format_table(suite: str, summaries: Mapping[str, ArchSummary]) -> str:
    """The per-library table: one row per unit, the CPU's and neuron's counts, the verdict."""
    width = max([len("unit"), *map(len, summaries)]) + 2
    head = (f"  {'unit':{width}}{'cpu passed':>11}{'failed':>7}{'skipped':>8}{'neuron passed':>14}{'failed':>7}"
            f"{'skipped':>8}{'n/a':>5}{'same':>6}{'only':>6}{'stand-ins':>10}  verdict")
    lines = [f"{suite}: its own tests on neuron against the CPU", head]
    for unit, summary in summaries.items():
        cpu, neuron = summary.counts["cpu"], summary.counts["neuron"]
        verdict = ("pass" if summary.ok else "ran nothing" if not summary.ran else "neuron-only failures"
                   if summary.neuron_only else "neuron-side gaps")
        lines.append(f"  {unit:{width}}{cpu.passed:>11}{cpu.failed:>7}{cpu.skipped:>8}{neuron.passed:>14}"
                     f"{neuron.failed:>7}{neuron.skipped:>8}{neuron.not_applicable:>5}{summary.same_failure:>6}"
                     f"{summary.neuron_only_tests:>6}{summary.on_stand_ins:>10}  {verdict}")
    return "\n".join(lines)


def format_groups(chosen: Suite) -> str:
    """What ``--list`` prints: the suite's groups and selections."""
    if chosen.by_architecture:
        return (f"{chosen.name}: tests are chosen by architecture (--arch ARCH ..., or --top N of "
                "compat/ranking.csv): tests/models/<arch>/test_modeling_<arch>.py")
    lines = [f"{chosen.name}: groups (--group NAME; or test files with --tests)"]
    for group in chosen.groups:
        devices = f", {group.devices} neuron devices" if group.devices > 1 else ""
        lines.append(textwrap.fill(f"{group.name}: {group.doc}{devices}", _WIDTH, initial_indent="  ",
                                   subsequent_indent="      "))
        lines.append(textwrap.fill(" ".join(group.files) + (f"  -k {group.keyword!r}" if group.keyword else ""),
                                   _WIDTH, initial_indent="      ", subsequent_indent="        "))
    lines.append("selections (--group NAME):")
    for name, members in chosen.selections.items():
        lines.append(f"  {name}: {', '.join(members)}")
    if chosen.deselect:
        lines.append(textwrap.fill(f"always left out: -m {chosen.deselect!r}: {chosen.deselected_why}", _WIDTH))
    return "\n".join(lines)


def _run(args: argparse.Namespace) -> int:
    from hf_neuron.device.build import cache_root
    from hf_neuron.upstream.records import read_records
    from hf_neuron.upstream.runner import NoSourceError, UpstreamOptions, run
    from hf_neuron.upstream.suites import suite
    from hf_neuron.upstream.summary import summarize

    chosen = suite(args.suite)
    if args.list:
        print(format_groups(chosen))
        return 0
    options = UpstreamOptions(
        suite=args.suite, archs=tuple(args.arch or ()), top=args.top, groups=tuple(args.group or ()),
        tests=tuple(args.tests), results=args.results, source=args.source, revision=args.revision,
        cache=args.cache or cache_root() / "upstream", fetch=args.fetch, configured=args.configured,
        against=args.against,
        workers=args.workers,
        timeout_s=args.timeout, keyword=args.keyword,
        not_applicable=args.not_applicable, stand_ins=args.stand_ins,
    )
    try:
        records = run(options, progress=lambda line: print(line, file=sys.stderr))
    except NoSourceError as exc:
        print(f"hf-neuron upstream: {exc}", file=sys.stderr)
        return EXIT_SKIPPED
    summaries = summarize(records)
    _, problems = read_records([args.results])
    for problem in problems:
        print(f"warning: skipped {problem}", file=sys.stderr)
    units = tuple(dict.fromkeys((*options.archs, *summaries)))
    failing = [unit for unit in units if unit not in summaries or not summaries[unit].ok]
    for unit in units:
        print(format_summary(summaries[unit]) if unit in summaries else f"{unit}\n  no record: see the logs")
        print()
    print(format_table(args.suite, summaries))
    print()
    backend = records[0]["env"]["backend"] if records else "unknown"
    print(f"upstream {args.suite} tests, neuron ({backend} backend) against the CPU: "
          + (f"neuron-only failures (or tests the CPU passed that neuron did not run) in {', '.join(failing)}"
             if failing else "no neuron-only failure, every test the CPU passed run on neuron")
          + f"; records in {args.results}")
    return EXIT_FAILURES if failing else EXIT_OK


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``hf-neuron upstream``."""
    from hf_neuron.compat.upstream_not_applicable import NOT_APPLICABLE_PATH, SUITES
    from hf_neuron.compat.upstream_stand_ins import STAND_INS_PATH

    parser = subparsers.add_parser(
        "upstream", help="run a library's own tests on neuron and on the CPU",
        description="Run a library's own tests (transformers' model tests by architecture; PEFT's, accelerate's, "
        "diffusers' and TRL's by group or file) on neuron and on the CPU, one JSON record per test and device, "
        "and compare.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("suite", choices=SUITES, help="whose tests")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--source", type=Path, metavar="DIR",
                       help="a source tree of the library's tests (a checkout, an unpacked sdist, a kept copy), or "
                       "a git repository whose tests are exported (see --revision)")
    where.add_argument("--fetch", action="store_true",
                       help="take the tests of the installed version: its sdist (PEFT, accelerate) or a clone of its "
                       "tag (transformers, diffusers, TRL); kept in the cache (needs network the first time)")
    where.add_argument("--configured", action="store_true",
                       help="take the source the settings give (what scripts/nightly.sh and scripts/ci_upstream.sh "
                       "run): the tree HF_NEURON_<LIBRARY>_SOURCE names (TRL: at HF_NEURON_TRL_REVISION), else "
                       "diffusers' copy in ../shared/upstream beside the checkout, else the sdist (PEFT, "
                       "accelerate), else a clone of the tag with HF_NEURON_UPSTREAM_FETCH=1; exit 4 when none")
    parser.add_argument("--revision", metavar="REV",
                        help="with --source REPO: export the tests of this commit, tag or branch (default HEAD)")
    parser.add_argument("--against", metavar="VERSION",
                        help="run the tests against this release of the library, installed beside the installed one "
                        "(pip install --no-deps --target, in the cache, once) and first on the tests' PYTHONPATH: for "
                        "a tree written for another release (default: the installed library)")
    parser.add_argument("--cache", type=Path, metavar="DIR",
                        help="where fetched and exported trees and built stand-ins are kept (default: "
                        "$HF_NEURON_CACHE/upstream, else ~/.cache/hf-neuron/upstream)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--arch", nargs="+", metavar="ARCH",
                       help="transformers: architectures, folders of tests/models/ (a model type's '-' is '_' there)")
    which.add_argument("--top", type=int, metavar="N",
                       help="transformers: the N best-ranked architectures of compat/ranking.csv (those without tests "
                       "are left out)")
    parser.add_argument("--group", nargs="+", metavar="NAME",
                        help="the others: documented groups or selections (default, nightly, ci); --list shows them")
    parser.add_argument("--tests", nargs="+", metavar="TEST", default=[],
                        help="the others: test files or node ids, relative to the source tree (with --group: both)")
    parser.add_argument("--list", action="store_true", help="describe the suite's groups and selections, and exit")
    parser.add_argument("--results", type=Path, default=Path("results/upstream"), metavar="DIR",
                        help="new directory for the records and logs (default: results/upstream)")
    parser.add_argument("-n", "--workers", type=int, default=1, metavar="N",
                        help="pytest-xdist workers per process (default 1)")
    parser.add_argument("--timeout", type=float, default=600.0, metavar="S", help="per test (default 600 s)")
    parser.add_argument("-k", dest="keyword", metavar="EXPR", help="only tests matching this pytest -k expression")
    parser.add_argument("--not-applicable", type=Path, metavar="FILE",
                        help=f"the list of tests not applicable on neuron (default: {NOT_APPLICABLE_PATH})")
    parser.add_argument("--stand-ins", type=Path, metavar="FILE",
                        help=f"the Hub stand-ins to build and place (default: {STAND_INS_PATH})")
    parser.set_defaults(func=_run)
