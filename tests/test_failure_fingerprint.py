"""Failure fingerprints: what varies between runs is normalised away; type, message and raising frame remain; a
recorded failure carries no absolute path of the machine that ran it."""

from __future__ import annotations

import json
import sys
import sysconfig
from pathlib import Path

import pytest

from hf_neuron.matrix.case.capture import describe_exception, describe_stack, relative_paths
from hf_neuron.vocabulary.failures import failure_text, fingerprint, normalise


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
        ("<path>/save does not appear to have a file named spk_dict.pt. Checkout "
         "'https://huggingface.co//tmp/hf-neuron-matrix-7-ab/cases/save/qwen/cpu/tree/main' for available files.",
         "<path>/save does not appear to have a file named spk_dict.pt. Checkout 'https://huggingface.co/<path>/main' "
         "for available files."),
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
    assert info["type"].endswith("LibraryError") and info["message"] == "wrapped"
    assert info["frame"] == "test_failure_fingerprint.py:test_describe_exception_names_the_raising_frame"
    assert "_inner" in info["traceback"] and failure_text(info) == f"{info['type']}: wrapped"

    try:
        _inner()
    except KeyError as exc:
        info = describe_exception(exc)
    assert (info["type"], info["frame"]) == ("KeyError", "test_failure_fingerprint.py:_inner")
    assert info["fingerprint"] == fingerprint("KeyError", "\"missing 'rope_theta'\"",
                                              "test_failure_fingerprint.py:_inner")


def test_relative_paths_names_files_relative_to_the_checkout_or_site_packages() -> None:
    roots = ["/home/ci/hf-neuron", "/home/ci/hf-neuron/.venv/lib/python3.11/site-packages", "/opt/py/lib/python3.11"]
    text = (
        'File "/home/ci/hf-neuron/.venv/lib/python3.11/site-packages/transformers/modeling_utils.py", line 9\n'
        'File "/home/ci/hf-neuron/hf_neuron/matrix/case/execute.py", line 61\n'
        'File "/opt/py/lib/python3.11/threading.py", line 3\n'
        'File "/tmp/pytest-of-ci/w0/tiny-llama/modeling.py", line 4\n'
        "the cache under /root/.cache/hf-neuron/ext/neuron.so; a url https://x.org/a/b/c and a ratio 3/4"
    )
    assert relative_paths(text, roots).splitlines() == [
        'File "transformers/modeling_utils.py", line 9',
        'File "hf_neuron/matrix/case/execute.py", line 61',
        'File "threading.py", line 3',
        'File "<path>/modeling.py", line 4',
        "the cache under <path>/neuron.so; a url https://x.org/a/b/c and a ratio 3/4",
    ]
    assert relative_paths("/home/ci/hf-neuronx/a.py", roots) == "<path>/a.py"  # a root is a whole directory


def test_a_recorded_failure_has_no_absolute_path_of_this_machine(tmp_path: Path) -> None:
    module = tmp_path / "scenario_module.py"
    module.write_text("import json\n\ndef run(path):\n    return json.loads(open(path).read())\n")
    (tmp_path / "bad.json").write_text("{")
    namespace: dict[str, object] = {}
    exec(compile(module.read_text(), str(module), "exec"), namespace)
    try:
        namespace["run"](str(tmp_path / "bad.json"))  # type: ignore[operator]
    except json.JSONDecodeError as exc:
        info = describe_exception(exc)
    stdlib = sysconfig.get_paths()["stdlib"]
    assert 'File "json/decoder.py"' in info["traceback"]
    assert 'File "<path>/scenario_module.py", line 4' in info["traceback"]
    assert 'File "tests/test_failure_fingerprint.py"' in info["traceback"]  # the checkout's own files
    for machine_path in (str(tmp_path), stdlib, str(Path(__file__).parent)):
        assert machine_path not in info["traceback"] and machine_path not in info["message"]

    try:
        open(tmp_path / "missing.txt")  # noqa: SIM115 - the error names the path
    except FileNotFoundError as exc:
        missing = describe_exception(exc)
    assert missing["message"] == "[Errno 2] No such file or directory: '<path>/missing.txt'"

    stuck = describe_stack("CaseTimeout", f"stuck in {tmp_path}/x.py", sys._getframe(), outcome="timeout")
    assert stuck["message"] == "stuck in <path>/x.py"
    assert 'File "tests/test_failure_fingerprint.py"' in stuck["traceback"] and str(tmp_path) not in stuck["traceback"]
