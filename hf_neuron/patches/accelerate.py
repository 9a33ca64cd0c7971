"""accelerate: detect ``neuron`` by device, ``accelerate launch --device``, an indexed device per rank, fp16, the
grad scaler, ``device_map``."""

from __future__ import annotations

import argparse
import functools
import logging
import types
from collections.abc import Callable
from typing import Any

from hf_neuron.backends import NEURON_DEVICE_HOWTO, neuron_module
from hf_neuron.patches import neuron_device
from hf_neuron.patches.registry import Patch

__all__ = ["DEVICES", "PATCHES", "device_type"]

VERSIONS = ">=1.15,<1.16"

#: The device types ``accelerate launch --device`` accepts.
DEVICES = ("neuron", "cpu", "cuda")

_MISSING = {
    "neuron": NEURON_DEVICE_HOWTO,
    "cuda": "install a CUDA build of torch on a machine with an NVIDIA GPU",
}

_FP16_DEVICES = ("xpu", "cuda", "npu", "xla", "mlu", "musa", "hpu", "sdaa", "mps")


def _device_count(kind: str) -> int:
    import torch

    if kind == neuron_device.DEVICE:
        return int(neuron_module().device_count()) if neuron_device.neuron_registered() else 0
    return int(getattr(torch, kind).device_count())


def device_type(value: str) -> str:
    """The ``type=`` of ``--device``: one of :data:`DEVICES` that this machine has, or an argparse error."""
    kind = value.strip().lower()
    if kind not in DEVICES:
        raise argparse.ArgumentTypeError(f"invalid choice: {value!r} (choose from {', '.join(DEVICES)})")
    if kind in _MISSING and _device_count(kind) == 0:
        raise argparse.ArgumentTypeError(f"no {kind} device: {_MISSING[kind]}")
    return kind


def _adds_device_option(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def launch_command_parser(subparsers: Any = None) -> argparse.ArgumentParser:
        parser = original(subparsers=subparsers)
        hardware = next((g for g in parser._action_groups if g.title == "Hardware Selection Arguments"), parser)
        hardware.add_argument(
            "--device",
            type=device_type,
            default=None,
            metavar="{" + ",".join(DEVICES) + "}",
            help="Force the device type of the launched processes; the default number of processes becomes the "
            "number of devices of that type (added by hf-neuron).",
        )
        return parser

    return launch_command_parser


def _applies_device(original: Callable[[argparse.Namespace], Any]) -> Callable[[argparse.Namespace], Any]:
    @functools.wraps(original)
    def launch_command(args: argparse.Namespace) -> Any:
        device = getattr(args, "device", None)
        if device is None:
            return original(args)
        if args.cpu and device != "cpu":
            raise ValueError(f"`--cpu` contradicts `--device {device}`: pass only one of them")
        from accelerate.utils import patch_environment

        args.cpu = device == "cpu"
        if args.num_processes is None:
            args.num_processes = _device_count(device)
        with patch_environment(ACCELERATE_TORCH_DEVICE=device):
            return original(args)

    return launch_command


def _indexes_the_neuron_device(original: Callable[[Any], None]) -> Callable[[Any], None]:
    @functools.wraps(original)
    def set_device(self: Any) -> None:
        original(self)
        device = self.device
        if device is not None and device.type == neuron_device.DEVICE and device.index is None:
            import torch

            self.device = torch.device(neuron_device.DEVICE, neuron_module().current_device())

    return set_device


def _fp16_allows_neuron(original: types.FunctionType) -> Callable[..., Any]:
    code = original.__code__
    constants = tuple((*c, neuron_device.DEVICE) if c == _FP16_DEVICES else c for c in code.co_consts)
    if constants == code.co_consts:
        raise LookupError(f"the fp16 device list {_FP16_DEVICES} is no longer in {original.__qualname__}")
    replacement = types.FunctionType(
        code.replace(co_consts=constants), original.__globals__, original.__name__, original.__defaults__,
        original.__closure__,
    )
    replacement.__kwdefaults__ = original.__kwdefaults__
    return functools.update_wrapper(replacement, original)


def _scaler_on_neuron(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def get_grad_scaler(distributed_type: Any = None, **kwargs: Any) -> Any:
        import torch
        from accelerate.utils import DistributedType

        on_neuron = not torch.cuda.is_available() and neuron_device.neuron_available()
        if distributed_type != DistributedType.FSDP and on_neuron:
            return torch.amp.GradScaler(neuron_device.DEVICE, **kwargs)
        return original(distributed_type, **kwargs)

    return get_grad_scaler


def _max_memory_on_neuron(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def get_max_memory(max_memory: dict[Any, Any] | None = None) -> dict[Any, Any]:
        import psutil
        from accelerate.utils.modeling import convert_file_size_to_int

        if not neuron_device.neuron_is_accelerator():
            return original(max_memory)
        count = neuron_module().device_count()
        if max_memory is None:
            free = {index: int(neuron_module().mem_get_info(index)[0]) for index in range(count)}
            return {**free, "cpu": psutil.virtual_memory().available}
        sizes = {
            key if neuron_device.neuron_index(key) is None else neuron_device.neuron_index(key): (
                convert_file_size_to_int(size) if isinstance(size, str) else size
            )
            for key, size in max_memory.items()
        }
        devices = sorted(key for key in sizes if isinstance(key, int))
        for index in (key for key in max_memory if isinstance(key, int) and not 0 <= key < count):
            # an integer index is kept, as accelerate keeps a CUDA index it does not have, with its warning
            logging.getLogger("accelerate.utils.modeling").warning(
                f"Device {index} is not available, available devices are {list(range(count))}")
        unknown = [key for key in sizes if key not in ("mps", "cpu", "disk")
                   and key not in range(count) and key not in max_memory]
        if unknown:
            raise ValueError(
                f"Device {unknown[0]!r} is not recognized, available devices are neuron indices 0..{count - 1} "
                "(or 'neuron:N'), 'cpu' and 'disk'"
            )
        return {key: sizes[key] for key in [*devices, *(k for k in ("mps", "cpu", "disk") if k in sizes)]}

    return get_max_memory


PATCHES: list[Patch] = [
    Patch(
        id="accelerate.detect-neuron-by-device",
        library="accelerate",
        module="accelerate.utils.imports",
        attribute="is_neuron_available",
        versions=VERSIONS,
        reason="accelerate/utils/imports.py `is_neuron_available()` answers False unless a package named "
        "`torch_neuronx` is importable (`importlib.util.find_spec`), and its `lru_cache` keeps a False computed "
        "before a backend registered `neuron`. The replacement asks torch whether `neuron` is registered and "
        "available, and caches only True.",
        replace=neuron_device.detection,
        upstream_fix="Test `torch._C._get_privateuse1_backend_name() == 'neuron'` (or "
        "`torch.accelerator.current_accelerator()`) instead of the package, and do not cache a False.",
    ),
    Patch(
        id="accelerate.launch-device-option",
        library="accelerate",
        module="accelerate.commands.launch",
        attribute="launch_command_parser",
        versions=VERSIONS,
        reason="accelerate/commands/launch.py `launch_command_parser()` has no option to choose the device type: "
        "only `--cpu`, and the device of the launched processes is whatever each one detects. Adds "
        "`--device {neuron,cpu,cuda}` (also for `accelerate-launch` and `trl`), refused with a clear error when "
        "this machine has no such device.",
        replace=_adds_device_option,
        upstream_fix="A `--device` option on `accelerate launch` that sets `ACCELERATE_TORCH_DEVICE`.",
        needs_device=False,
    ),
    Patch(
        id="accelerate.launch-forces-device",
        library="accelerate",
        module="accelerate.commands.launch",
        attribute="launch_command",
        versions=VERSIONS,
        reason="accelerate/commands/launch.py `launch_command()` takes the default number of processes from the "
        "first accelerator it detects. With `--device`, it takes it from that device type's count and exports "
        "`ACCELERATE_TORCH_DEVICE` (read by accelerate's `PartialState`, and by the detection patches) to the "
        "launched processes; `--device cpu` also sets `--cpu`.",
        replace=_applies_device,
        upstream_fix="The same `--device` option in accelerate itself.",
        needs_device=False,
    ),
    Patch(
        id="accelerate.rank-device-has-an-index",
        library="accelerate",
        module="accelerate.state",
        attribute="PartialState.set_device",
        versions=VERSIONS,
        reason="accelerate/state.py `PartialState.__init__` takes `torch.device(ACCELERATE_TORCH_DEVICE)` as it is, "
        "and `PartialState.default_device` returns `torch.device('neuron')` for one process: under `accelerate "
        "launch --device neuron` every rank gets `neuron` without an index, where plain `accelerate launch` or "
        "torchrun gives `neuron:<local rank>` (`set_device()` for MULTI_NEURON). Code that reads `device.index` or "
        "compares devices then breaks. After `set_device()`, an index-less `neuron` becomes "
        "`neuron:<torch.neuron.current_device()>`, which is the local rank under a launcher.",
        replace=_indexes_the_neuron_device,
        upstream_fix="Resolve an index-less accelerator device to the current device in `PartialState.set_device()`, "
        "as it already does for MULTI_NEURON.",
    ),
    Patch(
        id="accelerate.fp16-on-neuron",
        library="accelerate",
        module="accelerate.accelerator",
        attribute="Accelerator.__init__",
        versions=VERSIONS,
        reason="accelerate/accelerator.py `Accelerator.__init__` refuses `mixed_precision='fp16'` on any device "
        "outside a fixed tuple (\"fp16 mixed precision requires a device in (...) (not 'neuron')\"), although "
        "`torch.autocast('neuron', torch.float16)` works. The replacement is the same function with 'neuron' "
        "added to that tuple constant, nothing else.",
        replace=_fp16_allows_neuron,
        upstream_fix="Add 'neuron' to the fp16 device tuple in `Accelerator.__init__`.",
    ),
    Patch(
        id="accelerate.grad-scaler-on-neuron",
        library="accelerate",
        module="accelerate.utils.modeling",
        attribute="get_grad_scaler",
        versions=VERSIONS,
        reason="accelerate/utils/modeling.py `get_grad_scaler()` falls through to `GradScaler('cuda')` for a "
        "device it does not list, which disables itself without CUDA: fp16 on neuron would train without loss "
        "scaling. On neuron the replacement returns `torch.amp.GradScaler('neuron')`.",
        replace=_scaler_on_neuron,
        upstream_fix="A neuron branch in `get_grad_scaler()` (or `GradScaler(device_type)` for any accelerator).",
    ),
    Patch(
        id="accelerate.max-memory-on-neuron",
        library="accelerate",
        module="accelerate.utils.modeling",
        attribute="get_max_memory",
        versions=VERSIONS,
        reason="accelerate/utils/modeling.py `get_max_memory()` has no neuron branch: `device_map='auto'` sees "
        "no device (it counts CUDA devices) and places everything on the CPU, and a `max_memory` key 'neuron:0' "
        "is rejected. On neuron the replacement reads free memory from `torch.neuron.mem_get_info(i)` and accepts "
        "'neuron:N' keys; like the original, it keeps an integer index the machine does not have, with a warning.",
        replace=_max_memory_on_neuron,
        upstream_fix="A neuron branch (or a `torch.accelerator`-generic one) in `get_max_memory()`.",
    ),
]
