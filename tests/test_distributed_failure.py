"""A rank that dies takes the run down at once: the launcher exits non-zero, naming that rank's error as the root cause.

Without the neuron backend's failure handling, the two torchrun scenarios hang until the process-group timeout
(30 min): the failing rank's exit blocks on its collective in flight, and its peer waits for it in a barrier.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from _helpers_distributed import launch, rank_results, succeeded

#: A rank's exit status and output, and the error file it wrote for the launcher.
RankOutcome = tuple[subprocess.CompletedProcess[str], dict[str, Any]]

BOUND_S = 60  # the launch is killed (and the test errors) past this
PROMPT_S = 30  # a prompt failure takes a few seconds; without the handling it takes the 30-minute timeout

# Rank 1 raises with an all-reduce in flight that rank 0 never joins; rank 0 waits in a barrier.
DIES_WITH_A_COLLECTIVE_IN_FLIGHT = """
import torch, torch.distributed as dist
dist.init_process_group("neuron")
dev = torch.device("neuron", torch.neuron.current_device())
dist.all_reduce(torch.ones(4, device=dev))
if dist.get_rank() == 1:
    dist.all_reduce(torch.ones(8, device=dev), async_op=True)
    raise RuntimeError("rank 1 broke on purpose")
dist.barrier()
"""

# Rank 1 exits (no exception) with an all-reduce in flight that rank 0 never joins; rank 0 waits in a barrier.
EXITS_WITH_A_COLLECTIVE_IN_FLIGHT = """
import sys, torch, torch.distributed as dist
import hf_neuron.device.distributed.failure
hf_neuron.device.distributed.failure.EXIT_GRACE_S = 2.0  # the peers' time to join the collective (30 s by default)
dist.init_process_group("neuron")
dev = torch.device("neuron", torch.neuron.current_device())
if dist.get_rank() == 1:
    pending = dist.all_reduce(torch.ones(8, device=dev), async_op=True)
    sys.exit(3)
dist.barrier()
"""

# Launched without a launcher (nothing stops rank 0): rank 1 fails first, rank 0 fails in its all-reduce after it.
FAILS_FIRST = """\
import atexit, sys, torch, torch.distributed as dist
rank = int(sys.argv[2])
dist.init_process_group("neuron", init_method=f"file://{sys.argv[1]}", rank=rank, world_size=2)
dev = torch.device("neuron", torch.neuron.current_device())
dist.all_reduce(torch.ones(4, device=dev))
atexit.register(print, f"rank {rank}: exit handlers ran")
if rank == 1:
    raise RuntimeError("rank 1 broke on purpose")
dist.all_reduce(torch.ones(4, device=dev))
"""


@pytest.mark.distributed
def test_a_rank_that_dies_with_a_collective_in_flight_ends_the_run_promptly(tmp_path: Path) -> None:
    started = time.monotonic()
    result = launch(tmp_path, DIES_WITH_A_COLLECTIVE_IN_FLIGHT, timeout=BOUND_S)
    assert result.returncode == 1, result.stderr
    assert time.monotonic() - started < PROMPT_S
    root_cause = result.stderr.split("Root Cause (first observed failure):")[1]
    assert "rank      : 1 (local_rank: 1)" in root_cause
    assert "exitcode  : 1" in root_cause
    assert 'raise RuntimeError("rank 1 broke on purpose")' in root_cause
    assert "[rank1]: RuntimeError: rank 1 broke on purpose" in result.stderr  # the rank's own traceback is kept


@pytest.mark.distributed
def test_a_rank_that_exits_with_a_collective_in_flight_ends_the_run_after_the_grace(tmp_path: Path) -> None:
    started = time.monotonic()
    result = launch(tmp_path, EXITS_WITH_A_COLLECTIVE_IN_FLIGHT, timeout=BOUND_S)
    assert result.returncode == 1, result.stderr
    assert time.monotonic() - started < PROMPT_S
    message = "exited with 1 collective(s) in flight that its peers did not join within 2 s"
    assert f"hf-neuron: rank 1 {message}: ending the process" in result.stderr
    root_cause = result.stderr.split("Root Cause (first observed failure):")[1]
    assert "rank      : 1 (local_rank: 1)" in root_cause and f"rank 1 {message}" in root_cause


# Counts this process's threads (gloo's are native: only /proc sees them) before the group, with it, and in an exit
# handler registered first, so that it runs after hf-neuron's.
THREADS_AT_EXIT = """
import atexit, json, os, torch, torch.distributed as dist
threads = lambda: len(os.listdir("/proc/self/task"))
seen = {}
atexit.register(lambda: open(f"rank{dist.get_rank()}.json", "w").write(json.dumps({**seen, "at_exit": threads()})))
seen["before"] = threads()
dist.init_process_group("neuron")
dev = torch.device("neuron", torch.neuron.current_device())
dist.all_reduce(torch.ones(4, device=dev), async_op=True).get_future().wait()  # a Python callback on gloo's thread
seen["with_group"] = threads()
"""


@pytest.mark.distributed
def test_a_normal_exit_joins_gloo_threads_before_the_interpreter_finalizes(tmp_path: Path) -> None:
    # A gloo thread left alive into finalization can take the GIL there and abort the process ("terminate called
    # without an active exception"), a rare crash under load: at exit, no such thread may be left.
    succeeded(launch(tmp_path, THREADS_AT_EXIT, timeout=BOUND_S))
    for seen in rank_results(tmp_path):
        assert seen["with_group"] > seen["before"]  # the group started its threads
        assert seen["at_exit"] == seen["before"], seen


@pytest.fixture(scope="module")
def two_failures(tmp_path_factory: pytest.TempPathFactory) -> list[RankOutcome]:
    """:data:`FAILS_FIRST`'s two ranks, started side by side."""
    directory = tmp_path_factory.mktemp("failures")
    script = directory / "fails.py"
    script.write_text(FAILS_FIRST)
    ranks = [
        subprocess.Popen(
            [sys.executable, str(script), str(directory / "store"), str(rank)], text=True,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={
                **os.environ, "LOCAL_RANK": str(rank), "LOCAL_WORLD_SIZE": "2",
                "TORCHELASTIC_ERROR_FILE": str(directory / f"error{rank}.json"),
            },
        )
        for rank in range(2)
    ]
    try:
        outputs = [process.communicate(timeout=BOUND_S) for process in ranks]
    finally:
        for process in ranks:
            process.kill()
    return [
        (subprocess.CompletedProcess(process.args, process.returncode, *output),
         json.loads((directory / f"error{rank}.json").read_text())["message"])
        for rank, (process, output) in enumerate(zip(ranks, outputs, strict=True))
    ]


def test_each_rank_exits_1_after_its_exit_handlers(two_failures: list[RankOutcome]) -> None:
    for rank, (result, _) in enumerate(two_failures):
        assert result.returncode == 1, result.stderr
        assert f"rank {rank}: exit handlers ran" in result.stdout


def test_the_first_failure_is_recorded_for_the_launcher_as_it_is(two_failures: list[RankOutcome]) -> None:
    result, error = two_failures[1]
    assert error["message"] == "RuntimeError: rank 1 broke on purpose"
    assert 'raise RuntimeError("rank 1 broke on purpose")' in error["extraInfo"]["py_callstack"]
    assert "failed first" not in result.stderr


def test_a_failure_after_another_names_it_and_is_dated_after_it(two_failures: list[RankOutcome]) -> None:
    (result, error), (_, first) = two_failures
    assert "hf-neuron: rank 0 stops: rank 1 failed first: RuntimeError: rank 1 broke on purpose" in result.stderr
    assert error["message"].startswith("RuntimeError: ")
    assert error["message"].endswith("(after rank 1 failed: RuntimeError: rank 1 broke on purpose)")
    assert int(error["extraInfo"]["timestamp"]) > int(first["extraInfo"]["timestamp"])


def test_the_root_cause_is_the_same_whichever_rank_failed_first() -> None:
    from hf_neuron.device.distributed.launch import root_cause

    for rank in (0, 1):
        stderr = f"[rank{rank}]: Traceback (most recent call last):\n[rank{rank}]: ValueError: no input_ids\nW1 ...\n"
        assert root_cause(stderr) == "ValueError: no input_ids"
    assert root_cause("noise\nKeyError: 'input_ids'\n") == "KeyError: 'input_ids'"
    assert root_cause("only noise\n") == "only noise"


def test_a_failed_run_raises_its_root_cause_as_the_error_it_is() -> None:
    """A rank's NotImplementedError is classified as one (op-missing), as the same error met in the process is: a
    RuntimeError wrapping it would be "other", and the CPU re-run of a case whose ranks fail would not be the device's
    failure ("different-failure")."""
    from hf_neuron.device.distributed.launch import failed_run
    from hf_neuron.matrix.case.capture import describe_exception

    stderr = "[rank1]: Traceback (most recent call last):\n[rank1]: NotImplementedError: no backward on CPU\n"
    error = failed_run("the 2-process DDP run", 1, stderr)
    assert type(error) is NotImplementedError
    assert str(error) == "no backward on CPU (in the 2-process DDP run, exit 1)"
    in_process = describe_exception(NotImplementedError("no backward on CPU"))
    assert describe_exception(error)["failure_class"] == in_process["failure_class"] == "op-missing"
    wrapped = failed_run("the 2-process DDP run", 1, "hf_neuron.Mine: broke\n")
    assert type(wrapped) is RuntimeError
    assert str(wrapped) == "the 2-process DDP run failed (exit 1): hf_neuron.Mine: broke"
    assert type(failed_run("`trl sft`", 2, "no exception line\n")) is RuntimeError
