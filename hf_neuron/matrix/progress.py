"""Progress of a run on the controller: a tqdm bar with ETA on a terminal, one plain line per case otherwise."""

from __future__ import annotations

import sys
import time
from collections import Counter
from datetime import timedelta
from typing import IO, Any

__all__ = ["Progress"]


def _clock(seconds: float) -> str:
    return str(timedelta(seconds=round(seconds)))


class Progress:
    """Counts finished cases out of ``total`` (``done`` of them finished before this session: a resumed run)."""

    def __init__(self, total: int, done: int = 0, stream: IO[str] | None = None) -> None:
        self._stream = sys.stderr if stream is None else stream
        self._total = total
        self._count = done
        self._start_count = done
        self._start = time.monotonic()
        self._outcomes: Counter[str] = Counter()
        self._bar: Any = None
        if self._stream.isatty():
            from tqdm import tqdm

            self._bar = tqdm(total=total, initial=done, unit="case", file=self._stream, dynamic_ncols=True)

    def update(self, case_id: str, outcome: str, duration_s: float | None) -> None:
        """One more case finished."""
        self._count += 1
        self._outcomes[outcome] += 1
        if self._bar is not None:
            self._bar.set_postfix_str(" ".join(f"{k}={v}" for k, v in sorted(self._outcomes.items())), refresh=False)
            self._bar.update(1)
            return
        elapsed = time.monotonic() - self._start
        ran = self._count - self._start_count
        eta = elapsed / ran * (self._total - self._count) if ran else 0.0
        took = "" if duration_s is None else f" {duration_s:.1f}s"
        width = len(str(self._total))
        self._stream.write(
            f"[{self._count:>{width}}/{self._total}] {case_id} {outcome}{took} "
            f"(elapsed {_clock(elapsed)}, eta {_clock(eta)})\n"
        )
        self._stream.flush()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
