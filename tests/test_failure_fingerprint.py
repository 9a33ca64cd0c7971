"""Failure fingerprints: what varies between runs is normalised away; type, message and raising frame remain."""

from __future__ import annotations

import pytest

from hf_neuron.matrix.case.fingerprint import describe_exception, fingerprint, normalise


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("No such file: /tmp/hf-neuron-matrix-x81/checkpoints/llama/config.json",
         "No such file: <path>/config.json"),
        ("<torch.Tensor object at 0x7f3a9c0b2d10>", "<torch.Tensor object at 0x<addr>>"),
        ("The size of tensor a (16) must match the size of tensor b (32) at non-singleton dimension 2",
         "The size of tensor a <shape> must match the size of tensor b <shape> at non-singleton dimension <n>"),
        ("mat1 and mat2 shapes cannot be multiplied (2x64 and 32x64)",
         "mat1 and mat2 shapes cannot be multiplied (<shape> and <shape>)"),
        ("expected torch.Size([2, 8, 64]) got torch.Size([2, 8])",
         "expected torch.Size(<shape>) got torch.Size(<shape>)"),
        ("Tried to allocate 2.50 GiB; 1e-05 tolerance", "Tried to allocate <n> GiB; <n> tolerance"),
        ("Expected all tensors to be on the same device, but found cuda:0 and neuron:1",
         "Expected all tensors to be on the same device, but found <device> and <device>"),
        ("'addmm' not implemented for 'BFloat16' (float16, int64 kept)",
         "'addmm' not implemented for 'BFloat16' (float16, int64 kept)"),
        ("see https://github.com/pytorch/pytorch/issues/1234", "see https://github.com/pytorch/pytorch/issues/<n>"),
        ("  two\n lines  ", "two lines"),
    ],
)
def test_normalise(message: str, expected: str) -> None:
    assert normalise(message) == expected


def test_the_same_failure_in_another_run_has_the_same_fingerprint() -> None:
    one = fingerprint("RuntimeError", "shape (2, 8) at 0x7f00 in /tmp/a/b.py", "modeling_llama.py:forward")
    two = fingerprint("RuntimeError", "shape (4, 16) at 0x8e11 in /var/x/b.py", "modeling_llama.py:forward")
    assert one == two and len(one) == 16


@pytest.mark.parametrize(
    "other",
    [("ValueError", "shape (2, 8)", "modeling_llama.py:forward"),
     ("RuntimeError", "size (2, 8)", "modeling_llama.py:forward"),
     ("RuntimeError", "shape (2, 8)", "modeling_gpt2.py:forward")],
)
def test_type_message_and_frame_each_tell_failures_apart(other: tuple[str, str, str]) -> None:
    assert fingerprint("RuntimeError", "shape (2, 8)", "modeling_llama.py:forward") != fingerprint(*other)


def _inner() -> None:
    raise KeyError("missing 'rope_theta'")


def test_describe_exception_names_the_raising_frame() -> None:
    class LibraryError(Exception):
        pass

    try:
        try:
            _inner()
        except KeyError as exc:
            raise LibraryError("wrapped") from exc
    except LibraryError as exc:
        info = describe_exception(exc)
    assert info.type.endswith("LibraryError") and info.message == "wrapped"
    assert info.frame == "test_failure_fingerprint.py:test_describe_exception_names_the_raising_frame"
    assert "_inner" in info.traceback and info.text == f"{info.type}: wrapped"

    try:
        _inner()
    except KeyError as exc:
        info = describe_exception(exc)
    assert (info.type, info.frame) == ("KeyError", "test_failure_fingerprint.py:_inner")
    assert info.fingerprint == fingerprint("KeyError", "\"missing 'rope_theta'\"", "test_failure_fingerprint.py:_inner")
