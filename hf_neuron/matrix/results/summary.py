"""What a run came to, from its records: counts, what counts against the device, what is missing."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Sequence

from hf_neuron.compat.known_failures import names_every_type
from hf_neuron.vocabulary.outcomes import OUTCOMES
from hf_neuron.vocabulary.records import Record, case_verdict, latest

__all__ = ["Summary", "summarize"]


@dataclasses.dataclass(frozen=True)
class Summary:
    """The run's selected cases and what their records say."""

    selected: int
    outcomes: Counter[str]
    failure_classes: Counter[str]
    device_failures: tuple[str, ...]
    cpu_also_fails: tuple[str, ...]
    untested: Counter[str]
    known_now_passing: tuple[str, ...]
    missing: tuple[str, ...]

    @property
    def complete(self) -> bool:
        return not self.missing

    def lines(self) -> list[str]:
        counts = ", ".join(f"{self.outcomes[o]} {o}" for o in OUTCOMES if self.outcomes[o])
        lines = [f"{self.selected} cases: {counts or 'none recorded'}"]
        if self.device_failures:
            lines.append(f"failing on the device: {len(self.device_failures)}, by class: "
                         + ", ".join(f"{name} {n}" for name, n in self.failure_classes.most_common()))
        if self.cpu_also_fails:
            lines.append(f"failing the same way on the CPU (not held against the device): {len(self.cpu_also_fails)}")
        if self.untested:
            lines.append(f"untested (harness gaps to close): {sum(self.untested.values())}, by gap: "
                         + ", ".join(f"{gap} {n}" for gap, n in self.untested.most_common()))
        for case_id in self.known_now_passing:
            lines.append(f"known failure now passes, take it off compat/known_failures.toml: {case_id}")
        if self.missing:
            shown = ", ".join(self.missing[:10]) + (" ..." if len(self.missing) > 10 else "")
            lines.append(f"{len(self.missing)} cases have no record (run interrupted?): {shown}")
        return lines


def summarize(records: Iterable[Record], case_ids: Sequence[str]) -> Summary:
    """Summarise the records of the selected ``case_ids`` (records of other cases are ignored). A known failure is
    expected: it does not count among the device's failures."""
    selected = set(case_ids)
    by_case = latest((r for r in records if r["case_id"] in selected), key=lambda r: r["case_id"])
    mine = [by_case[c] for c in case_ids if c in by_case]
    device = [r for r in mine if case_verdict(r) == "fails-on-neuron" and r["outcome"] != "known-failure"]
    return Summary(
        selected=len(case_ids),
        outcomes=Counter(r["outcome"] for r in mine),
        failure_classes=Counter(r["failure"]["failure_class"] for r in device if r["failure"] is not None),
        device_failures=tuple(r["case_id"] for r in device),
        cpu_also_fails=tuple(r["case_id"] for r in mine if case_verdict(r) == "fails-on-cpu-too"),
        untested=Counter(str(r.get("gap")) for r in mine if r["outcome"] == "untested"),
        known_now_passing=tuple(r["case_id"] for r in mine if r["outcome"] == "passed" and r["known_failure"]
                                and not names_every_type(r["known_failure"])),
        missing=tuple(c for c in case_ids if c not in by_case),
    )
