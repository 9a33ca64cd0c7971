"""A forked child of a process that used the device gets the real backend's 'spawn' guidance."""

from __future__ import annotations

from _helpers import run


def test_forked_child_touching_the_device_is_told_to_use_spawn() -> None:
    result = run(
        """
        import multiprocessing as mp, torch

        def child(queue):
            queue.put(torch.neuron._is_in_bad_fork())
            try:
                torch.ones(1, device="neuron")
                queue.put("no error")
            except RuntimeError as error:
                queue.put(str(error))
            torch.manual_seed(0)  # seeding in a DataLoader worker must not fail
            queue.put(torch.ones(2).sum().item())

        torch.ones(1, device="neuron")
        queue = mp.get_context("fork").Queue()
        process = mp.get_context("fork").Process(target=child, args=(queue,))
        process.start()
        process.join(60)
        print(queue.get(), queue.get(), queue.get(), sep="\\n")
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "True",
        "Cannot re-initialize neuron in forked subprocess. To use neuron with multiprocessing, you must use the "
        "'spawn' start method",
        "2.0",
    ]


def test_fork_before_using_the_device_is_fine() -> None:
    result = run(
        """
        import multiprocessing as mp, torch
        def child(queue):
            queue.put(torch.ones(2, device="neuron").sum().item())
        queue = mp.get_context("fork").Queue()
        process = mp.get_context("fork").Process(target=child, args=(queue,))
        process.start(); process.join(60)
        print(queue.get())
        """
    )
    assert result.stdout.strip() == "2.0", result.stderr
