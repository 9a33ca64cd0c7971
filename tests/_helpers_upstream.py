"""Small synthetic source trees for the tests of ``hf-neuron upstream``: transformers-like and PEFT-like.

``write_tree`` lays out ``tests/models/<arch>/test_modeling_<arch>.py`` files beside a ``tests/test_modeling_common.py``
that chooses its tolerance by device the way transformers' does, for an architecture hf-neuron has never seen
(``zebra``): a test for each kind of result (passes, fails everywhere, fails on neuron only, needs an accelerator,
asks for Inductor, listed although it passes, subtests failing or skipped, hangs, crashes its worker) and,
optionally, an architecture whose test file cannot be imported (``broken``). The tree is written into a temporary
directory by each test, so the project's own pytest never collects it. ``write_peft_tree`` lays out a PEFT-like
tree (``tests/test_custom_models.py`` importing ``tests/testing_common.py`` relatively, without a package
``__init__.py``, picking its device with ``peft.utils.infer_device()``) with a test that reads a Hub stand-in.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

__all__ = [
    "NOT_APPLICABLE",
    "PEFT_NOT_APPLICABLE",
    "PEFT_STAND_INS",
    "QUAGGA_TESTS",
    "ZEBRA_TESTS",
    "write_list",
    "write_peft_tree",
    "write_tree",
]

_COMMON = '''
import torch
from transformers.testing_utils import torch_device


def _test_eager_matches_sdpa_inference(self, dtype):
    """As transformers' own: tolerances by device type, 1e-7 for a device it does not name."""
    atols = {("cpu", False, torch.float16): 5e-3, ("cuda", False, torch.float16): 5e-3}
    if torch_device in ["cpu", "cuda"]:
        atol = atols[torch_device, False, dtype]
    elif torch_device in ["hpu", "npu", "tpu"]:
        atol = atols["cuda", False, dtype]
    else:
        atol = 1e-7
    eager = torch.ones(8, dtype=dtype, device=torch_device)
    sdpa = eager + 1e-3  # eager and SDPA kernels differ this much in float16, on any device
    if not torch.allclose(eager, sdpa, atol=atol, rtol=0):
        raise ValueError(f"mean relative difference for hidden_states: 1e-3, torch atol = {atol}")


class ModelTesterMixin:
    def test_eager_matches_sdpa_inference_00_fp16(self):
        _test_eager_matches_sdpa_inference(self, torch.float16)
'''

_ZEBRA = '''
import os
import time
import unittest

import torch
from transformers.testing_utils import require_torch_accelerator, torch_device

from ...test_modeling_common import ModelTesterMixin


def on_neuron():
    return torch.device(torch_device).type == "neuron"


class ZebraModelTest(ModelTesterMixin, unittest.TestCase):
    def test_forward(self):
        self.assertEqual(float((torch.arange(4.0, device=torch_device) * 2).sum().cpu()), 12.0)

    def test_fails_everywhere(self):
        self.assertEqual(1, 2)

    def test_neuron_op_missing(self):
        if on_neuron():
            raise NotImplementedError("Could not run 'aten::zebra_stripes' with arguments from the 'neuron' backend")

    @require_torch_accelerator
    def test_accelerator_only(self):
        self.assertEqual(torch.ones(1, device=torch_device).device.type, "neuron")

    def test_compiles_with_inductor(self):
        if on_neuron():
            raise RuntimeError("torch._inductor.exc.InductorError: LoweringException: no lowering for neuron")

    def test_listed_but_passes(self):
        pass

    def test_subtests(self):
        for i in range(2):
            with self.subTest(i=i):
                self.assertLess(i, 1)

    def test_subtest_skipped(self):
        for i in range(2):
            with self.subTest(i=i):
                if i == 0:
                    self.skipTest("not for 0")

    def test_hangs(self):
        time.sleep(600)

    def test_crashes(self):
        if "PYTEST_XDIST_WORKER" not in os.environ:
            self.skipTest("kills its process: only under xdist, which replaces the worker")
        os._exit(3)
'''

#: The zebra tests, each with its outcome on the CPU and on neuron under :data:`NOT_APPLICABLE`.
ZEBRA_TESTS: dict[str, tuple[str, str]] = {
    "test_eager_matches_sdpa_inference_00_fp16": ("passed", "passed"),
    "test_forward": ("passed", "passed"),
    "test_fails_everywhere": ("failed", "failed"),
    "test_neuron_op_missing": ("passed", "known-failure"),
    "test_accelerator_only": ("skipped", "passed"),
    "test_compiles_with_inductor": ("passed", "known-failure"),
    "test_listed_but_passes": ("passed", "passed"),
    "test_subtests": ("failed", "failed"),
    "test_subtest_skipped": ("passed", "passed"),
    "test_hangs": ("timeout", "timeout"),
    "test_crashes": ("crashed", "crashed"),
}

#: A list of tests not applicable on neuron for the zebra tree.
NOT_APPLICABLE = '''
[[not_applicable]]
suite = "transformers"
test = "test_compiles_with_inductor"
reason = "asks for Inductor, which has no neuron lowering"
message = "InductorError"

[[not_applicable]]
suite = "transformers"
test = "test_neuron_op_missing"
model_type = "zebra"
reason = "zebra stripes have no neuron kernel"
message = "Could not run 'aten::zebra_stripes'"

[[not_applicable]]
suite = "transformers"
test = ["test_listed_*"]
reason = "listed once, passes now"
message = "."
'''


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())


_OKAPI = '''
import os
import unittest

import torch
from transformers.testing_utils import torch_device


class OkapiModelTest(unittest.TestCase):
    def test_a_forward(self):
        self.assertEqual(float(torch.ones(2, device=torch_device).sum().cpu()), 2.0)

    def test_b_crashes_on_neuron(self):
        if torch.device(torch_device).type == "neuron":
            os._exit(3)  # a native crash: without xdist workers nothing replaces the process

    def test_c_after_the_crash(self):
        pass
'''


def write_tree(root: Path, *, broken: bool = False, crashing: bool = False) -> Path:
    """Write the tree under ``root``; with ``broken``, add an architecture whose test file does not import; with
    ``crashing``, one (``okapi``) whose second test ends its process on neuron."""
    _write(root / "conftest.py", '"""The root conftest of a transformers-like tree."""\n')
    for package in ("tests", "tests/models", "tests/models/zebra"):
        _write(root / package / "__init__.py", "")
    _write(root / "tests" / "test_modeling_common.py", _COMMON)
    _write(root / "tests" / "models" / "zebra" / "test_modeling_zebra.py", _ZEBRA)
    if crashing:
        _write(root / "tests" / "models" / "okapi" / "__init__.py", "")
        _write(root / "tests" / "models" / "okapi" / "test_modeling_okapi.py", _OKAPI)
    if broken:
        _write(root / "tests" / "models" / "broken" / "__init__.py", "")
        _write(root / "tests" / "models" / "broken" / "test_modeling_broken.py",
               "from transformers import BrokenModelThatDoesNotExist\n")
    return root


def write_list(path: Path, text: str = NOT_APPLICABLE) -> Path:
    """Write a list of tests not applicable on neuron."""
    _write(path, text)
    return path


_PEFT_COMMON = '''
def double(x):
    return x * 2
'''

_PEFT_TESTS = '''
import os

import torch
from peft.utils import infer_device

from .testing_common import double  # a relative import: the tree has no tests/__init__.py, as PEFT's sdist


class TestQuagga:
    torch_device = infer_device()

    def test_forward(self):
        assert float(double(torch.ones(3, device=self.torch_device)).sum().cpu()) == 6.0

    def test_stand_in(self):
        from transformers import AutoConfig

        assert AutoConfig.from_pretrained("peft-internal-testing/tiny-random-OPTForCausalLM").model_type == "opt"

    def test_not_on_the_hub(self):
        from transformers import AutoConfig

        AutoConfig.from_pretrained("hf-internal-testing/no-stand-in-for-this")

    def test_sparse_on_neuron(self):
        if self.torch_device == "neuron":
            raise RuntimeError("The neuron device supports dense strided tensors only")

    def test_trains(self):
        layer = torch.nn.Linear(4, 4).to(self.torch_device)
        layer(torch.ones(2, 4, device=self.torch_device)).sum().backward()
        assert layer.weight.grad is not None
'''

_PEFT_CONFTEST = '''
import os

if os.environ.get("QUAGGA_DEVICE_LIES") == "1":  # the suite's own device selection answers "cpu" on neuron
    import peft.utils.other

    peft.utils.other.infer_device = lambda: "cpu"
    import peft.utils

    peft.utils.infer_device = peft.utils.other.infer_device
'''

#: The quagga tests of :func:`write_peft_tree`, each with its outcome on the CPU and on neuron under
#: :data:`PEFT_NOT_APPLICABLE`.
QUAGGA_TESTS: dict[str, tuple[str, str]] = {
    "test_forward": ("passed", "passed"),
    "test_stand_in": ("passed", "passed"),
    "test_not_on_the_hub": ("failed", "failed"),
    "test_sparse_on_neuron": ("passed", "known-failure"),
    "test_trains": ("passed", "passed"),
}

PEFT_NOT_APPLICABLE = '''
[[not_applicable]]
suite = "peft"
test = "test_sparse_on_neuron"
model_type = "custom_models"
reason = "sparse tensors have no neuron kernels"
message = "dense strided tensors only"
'''

#: One stand-in, for the quagga tree.
PEFT_STAND_INS = '''
[[model]]
id = "peft-internal-testing/tiny-random-OPTForCausalLM"
model_type = "opt"
suites = ["peft"]
'''


def write_peft_tree(root: Path) -> Path:
    """A PEFT-like tree (as PEFT's source distribution lays it out: no ``tests/__init__.py``) under ``root``."""
    _write(root / "conftest.py", _PEFT_CONFTEST)
    _write(root / "tests" / "testing_common.py", _PEFT_COMMON)
    _write(root / "tests" / "test_custom_models.py", _PEFT_TESTS)
    return root
