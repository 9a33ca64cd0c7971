"""The CPUs this process may run on, defined once: what the run records (``env.cpus``) and what the matrix's and the
upstream suites' workers share (``OMP_NUM_THREADS``).

``os.cpu_count()`` counts the machine's CPUs; a container's CPU set or ``taskset`` gives a process fewer, and threads
sized by the machine's count would then oversubscribe the ones it has.
"""

from __future__ import annotations

import os

__all__ = ["per_worker", "usable"]


def usable() -> int:
    """How many CPUs this process may run on (its affinity; the machine's count where the system has no affinity)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def per_worker(workers: int) -> int:
    """Each of ``workers`` workers' share of :func:`usable` CPUs: at least one."""
    return max(1, usable() // max(1, workers))
