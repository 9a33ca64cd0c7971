"""``hf-neuron doctor``: which backend owns ``neuron``, its devices, where every patch stands, and which torch-neuronx
release the reference device's ``trainium`` profile predicts.

It imports the patched modules of every installed library so that each patch is evaluated (applied, or skipped
with its reason), then prints a report (``--json`` for a machine-readable one). The exit code is 1 when something a
user needs is broken: no ``neuron`` device (or HF_NEURON_EMULATOR=1 asked for one that did not register), a patch
that failed, whose target is missing, or whose library version is outside its range; 2 when an hf-neuron setting is
bad (the report names the variable, the value and what is accepted, however deep ``import torch`` buried it).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
from typing import TYPE_CHECKING, Any

from hf_neuron import settings
from hf_neuron.backends import NO_NEURON_DEVICE, neuron_module
from hf_neuron.vocabulary.exits import EXIT_FAILURES, EXIT_OK, EXIT_USAGE

if TYPE_CHECKING:
    from hf_neuron.patches.registry import Patch

__all__ = ["diagnose", "register", "run"]

_BROKEN = ("failed", "target-missing", "version-out-of-range")
_NO_AUTOLOAD = "the torch backend autoload did not run (TORCH_DEVICE_BACKEND_AUTOLOAD=0?)"


def _backend(problems: list[str]) -> dict[str, Any]:

    from hf_neuron.backends import autoload_status, backend

    info = backend()
    devices = []
    if info.kind != "none":
        devices = [{"device": neuron_module().get_device_name(index),
                    "name": neuron_module().get_device_properties(index).name} for index in range(info.device_count)]
    elif settings.read("HF_NEURON_EMULATOR"):
        why = _NO_AUTOLOAD if os.environ.get("TORCH_DEVICE_BACKEND_AUTOLOAD") == "0" else autoload_status()
        problems.append(f"HF_NEURON_EMULATOR=1 but no neuron device is registered: {why}")
    else:
        problems.append(NO_NEURON_DEVICE)
    return {"kind": info.kind, "version": info.version, "summary": str(info), "devices": devices}


def _predicts() -> dict[str, str]:
    """The release the ``trainium`` profile's verdicts predict (``hf_neuron/device/trainium_sources.toml``)."""
    from hf_neuron.vocabulary.trainium_sources import predicted_release

    release = predicted_release()
    return {"release": release.id, "label": release.label}


def _row(patch: Patch, status: str, text: str, detail: str) -> dict[str, Any]:
    return {"id": patch.id, "library": patch.library, "target": patch.target, "versions": patch.versions,
            "status": status, "text": text, "detail": detail, "reason": patch.reason}


def _patches(problems: list[str]) -> tuple[bool, bool, list[dict[str, Any]]]:
    from hf_neuron import patches
    from hf_neuron.patches.registry import installed_version

    installation = patches.installation()
    if installation is None:
        if settings.read("HF_NEURON_PATCHES"):
            problems.append(f"HF_NEURON_PATCHES=1 but the patches are not installed: {_NO_AUTOLOAD}")
        return False, False, [_row(patch, "off", "not installed", "") for patch in patches.default_registry().patches()]
    rows = []
    for registry in installation.registries:
        for patch in registry.patches():
            if installed_version(patch.library) is not None:
                try:
                    importlib.import_module(patch.module)
                except Exception as error:  # noqa: BLE001 - report it; the other patches still deserve a verdict
                    problems.append(f"importing {patch.module} failed: {type(error).__name__}: {error}")
        for state in registry.states():
            rows.append(_row(state.patch, state.status, state.text, state.detail))
            if state.status in _BROKEN:
                problems.append(f"patch {state.patch.id} {state.text}: {state.detail}")
    return True, bool(installation.extra), rows


def _cause(error: BaseException) -> BaseException:
    """The first hf-neuron setting error among ``error``'s causes (``import torch`` wraps what the autoload raised in
    "Failed to load the backend extension"), else ``error`` itself."""
    link: BaseException | None = error
    while link is not None:
        if isinstance(link, settings.SettingError):
            return link
        link = link.__cause__ or link.__context__
    return error


def diagnose() -> dict[str, Any]:
    """The doctor's findings as one JSON-ready dict; ``problems`` lists what is broken, ``bad_setting`` the
    environment variable's error that stopped the autoload (or a read here), if any."""
    problems: list[str] = []
    report: dict[str, Any] = {"bad_setting": None, "predicts": _predicts()}
    try:
        report["backend"] = _backend(problems)
        report["patches_installed"], report["cuda_redirect"], report["patches"] = _patches(problems)
    except (settings.SettingError, ImportError, RuntimeError) as error:
        cause = _cause(error)
        if isinstance(cause, settings.SettingError):
            report["bad_setting"] = str(cause)
            problems.append(f"a bad setting stopped hf-neuron's autoload in `import torch`: {cause}")
        else:
            problems.append(f"{type(error).__name__}: {error}")
    report["problems"] = problems
    return report


def _text(report: dict[str, Any]) -> str:
    lines = ["hf-neuron doctor"]
    backend = report.get("backend")
    if backend:
        lines.append(f"  backend: {backend['summary']}")
        lines += [f"  {device['device']}: {device['name']}" for device in backend["devices"]]
    lines.append(f"  the trainium profile's verdicts predict: {report['predicts']['label']}")
    if "patches" in report:
        lines.append(f"  cuda redirect: {'on' if report['cuda_redirect'] else 'off'}")
        lines.append(f"  patches: {'installed' if report['patches_installed'] else 'not installed'}")
        width = max((len(row["id"]) for row in report["patches"]), default=0)
        for row in report["patches"]:
            detail = f" ({row['detail']})" if row["detail"] else ""
            lines.append(f"    {row['id']:<{width}}  {row['text']}{detail}")
    lines.append("problems:" if report["problems"] else "no problems found")
    lines += [f"  - {problem}" for problem in report["problems"]]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Print the report; 2 when a setting is bad (bad input, as for every command), 1 for other problems."""
    report = diagnose()
    print(json.dumps(report, indent=2, default=str) if args.json else _text(report))
    if report["bad_setting"]:
        return EXIT_USAGE
    return EXIT_FAILURES if report["problems"] else EXIT_OK


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``doctor`` command."""
    parser = subparsers.add_parser("doctor", help="Check the neuron backend, its devices and the patches.",
                                   description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="Print the report as JSON.")
    parser.set_defaults(func=run)
