"""The options of a matrix run, declared once for ``hf-neuron matrix run|list`` and for ``pytest matrix``.

:data:`OPTIONS` is the table; :func:`add_options` puts it on an argparse parser or a pytest option group,
:func:`pytest_args` turns parsed CLI values into the ``pytest matrix`` command line, and :class:`MatrixConfig`
is what both sides work from, validated.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from hf_neuron import backends, settings
from hf_neuron.checkpoint.instances import GIB
from hf_neuron.checkpoint.slice import DEFAULT_LAYERS, default_budget
from hf_neuron.compat.known_failures import KNOWN_FAILURES_PATH, KnownFailures, holding_for, load_known_failures
from hf_neuron.compat.preflight import check_reviewed_data
from hf_neuron.compat.slices import SLICES_PATH
from hf_neuron.errors import InputError
from hf_neuron.matrix.profiles import DEFAULT_PROFILE, PROFILES
from hf_neuron.matrix.scenarios.registry import DEFAULT_SCENARIO_MODULE, load_scenarios
from hf_neuron.matrix.selection import Case, Selection, Shard, Slicing, group_option, read_catalog, select
from hf_neuron.vocabulary.groups import GROUPS
from hf_neuron.vocabulary.scenarios import MODEL_SOURCES

__all__ = ["OPTIONS", "MatrixConfig", "Option", "add_options", "pytest_args"]

OptionKind = Literal["value", "list", "flag"]
#: ``select`` options say which cases; ``run`` options say how to run them (``matrix list`` takes only the former).
Scope = Literal["select", "run"]
Surface = Literal["cli", "pytest"]

_DEVICE = re.compile(r"^[a-z][a-z0-9_]*(?::\d+)?$")


@dataclasses.dataclass(frozen=True)
class Option:
    """One option: its attribute name, its flag on each surface, and how argparse reads it."""

    dest: str
    cli: str
    pytest: str
    scope: Scope
    help: str
    kind: OptionKind = "value"
    metavar: str | None = None
    default: Any = None
    type: Callable[[str], Any] = str

    def flag(self, surface: Surface) -> str:
        return self.cli if surface == "cli" else self.pytest

    def argparse_kwargs(self) -> dict[str, Any]:
        if self.kind == "flag":
            return {"dest": self.dest, "action": "store_true", "help": self.help}
        kwargs: dict[str, Any] = {"dest": self.dest, "metavar": self.metavar, "type": self.type, "help": self.help}
        if self.kind == "list":
            return {**kwargs, "action": "extend", "nargs": "+", "default": []}
        return {**kwargs, "default": self.default}


OPTIONS: tuple[Option, ...] = (
    Option("matrix_arch", "--arch", "--arch", "select",
           "architecture to run (transformers model_type, or diffusers class name); repeatable",
           kind="list", metavar="ARCH"),
    Option("matrix_group", "--group", "--group", "select",
           f"only this catalog group ({', '.join(GROUPS)})", metavar="GROUP"),
    Option("matrix_scenario", "--scenario", "--scenario", "select", "scenario to run (e.g. forward); repeatable",
           kind="list", metavar="SCENARIO"),
    Option("matrix_slice", "--slice", "--slice", "select",
           "a named slice of compat/slices.toml (e.g. ci, the fixed CI selection)", metavar="NAME"),
    Option("matrix_shard", "--shard", "--shard", "select",
           "run only shard i of N (deterministic; shards 1/N..N/N partition the selection)", metavar="i/N"),
    Option("matrix_catalog", "--catalog", "--catalog", "select",
           "catalog JSON to walk instead of compat/catalog.json", metavar="FILE", type=Path),
    Option("matrix_models", "--models", "--models", "select",
           f"what the cases are built from: {' and/or '.join(MODEL_SOURCES)} (the architectures' tiny models, the "
           "catalogued checkpoints' real-width slices; default tiny)", kind="list", metavar="MODELS"),
    Option("matrix_checkpoint", "--checkpoint", "--checkpoint", "select",
           "checkpoint to run (a Hub id of compat/checkpoints.toml; with --models checkpoints); repeatable",
           kind="list", metavar="ID"),
    Option("matrix_checkpoint_catalog", "--checkpoint-catalog", "--checkpoint-catalog", "select",
           "checkpoint catalog TOML instead of compat/checkpoints.toml", metavar="FILE", type=Path),
    Option("matrix_scenario_module", "--scenario-module", "--scenario-module", "select",
           "scenario set: a module defining SCENARIOS (dotted name or .py path)", metavar="MODULE",
           default=DEFAULT_SCENARIO_MODULE),
    Option("matrix_results", "--results", "--results", "run",
           "directory of the run's records, one JSON line per case (default ./results)", metavar="DIR",
           default=Path("results"), type=Path),
    Option("matrix_resume", "--resume", "--resume", "run",
           "continue the run already in --results: cases with a record are not run again", kind="flag"),
    Option("matrix_run_id", "--run-id", "--run-id", "run",
           "id of the run (give every shard of one run the same id); default $HF_NEURON_MATRIX_RUN_ID, else new",
           metavar="ID"),
    Option("matrix_timeout", "--timeout", "--case-timeout", "run",
           "seconds one case may take before it is recorded as timeout (default $HF_NEURON_MATRIX_TIMEOUT, 300)",
           metavar="SECONDS", type=float),
    Option("matrix_device", "--device", "--device", "run", "the device under test (default neuron)",
           metavar="DEVICE", default="neuron"),
    Option("matrix_profile", "--profile", "--profile", "run",
           f"what the device is asked to be: {', '.join(PROFILES)} (default {DEFAULT_PROFILE}: the real backend's "
           "documented behaviours on the reference device)", metavar="PROFILE", default=DEFAULT_PROFILE),
    Option("matrix_known_failures", "--known-failures", "--known-failures", "run",
           "known-failures file instead of compat/known_failures.toml", metavar="FILE", type=Path),
    Option("matrix_layers", "--layers", "--layers", "run",
           f"layers a checkpoint's slice keeps (default {DEFAULT_LAYERS}; one of every kind its config declares)",
           metavar="N", default=DEFAULT_LAYERS, type=int),
    Option("matrix_max_gb", "--max-gb", "--max-gb", "run",
           "memory budget of a checkpoint's slice, GiB (default $HF_NEURON_MATRIX_MAX_GB, else 3/4 of the memory "
           "available when the run starts, shared by the workers)", metavar="GIB", type=float),
)


def add_options(add_argument: Callable[..., Any], surface: Surface, scopes: tuple[Scope, ...]) -> None:
    """Declare the options of ``scopes`` with ``add_argument`` (argparse's, or a pytest group's ``addoption``)."""
    for option in OPTIONS:
        if option.scope in scopes:
            add_argument(option.flag(surface), **option.argparse_kwargs())


def pytest_args(values: Mapping[str, Any]) -> list[str]:
    """The ``pytest matrix`` flags for parsed CLI ``values`` (options left at their default are omitted).

    Values are attached with ``=``: pytest reads the command line before it knows these options, takes a separate
    value for a path to collect, and would load the ``conftest.py`` files above it (``tests/conftest.py`` for a
    fixture catalog, say).
    """
    args: list[str] = []
    for option in OPTIONS:
        value = values.get(option.dest)
        if value is None or value is False or value == [] or value == option.default:
            continue
        if option.kind == "flag":
            args.append(option.pytest)
        else:
            args += [f"{option.pytest}={item}" for item in (value if option.kind == "list" else [value])]
    return args


@dataclasses.dataclass(frozen=True)
class MatrixConfig:
    """A validated matrix run configuration."""

    selection: Selection
    catalog: Path | None
    scenario_module: str
    results: Path
    resume: bool
    run_id: str | None
    timeout_s: float
    device: str
    profile: str
    known_failures: Path
    known_failures_required: bool
    layers: int = DEFAULT_LAYERS
    max_gb: float | None = None
    checkpoint_catalog: Path | None = None

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> MatrixConfig:
        """Build from parsed options (argparse namespace or pytest ``config.option`` as a mapping)."""

        def get(dest: str) -> Any:
            option = next(o for o in OPTIONS if o.dest == dest)
            value = values.get(dest)
            return option.default if value is None else value

        timeout = get("matrix_timeout")
        timeout = settings.read("HF_NEURON_MATRIX_TIMEOUT") if timeout is None else timeout
        if not timeout > 0:
            raise InputError(f"--timeout {timeout:g}: give a positive number of seconds per case")
        profile = get("matrix_profile")
        if profile not in PROFILES:
            raise InputError(f"--profile {profile!r} is not a profile: use one of {', '.join(PROFILES)}")
        device = get("matrix_device")
        if not _DEVICE.match(device):
            raise InputError(f"--device {device!r} is not a device: write e.g. neuron, neuron:1 or cpu")
        shard = get("matrix_shard")
        known = get("matrix_known_failures")
        layers, max_gb = get("matrix_layers"), get("matrix_max_gb")
        max_gb = settings.read("HF_NEURON_MATRIX_MAX_GB") if max_gb is None else max_gb
        if layers < 1:
            raise InputError(f"--layers {layers}: a slice keeps at least one layer")
        if max_gb is not None and not max_gb > 0:
            raise InputError(f"--max-gb {max_gb:g}: give a positive number of GiB")
        return cls(
            selection=Selection(
                archs=tuple(get("matrix_arch") or ()),
                group=group_option(get("matrix_group")),
                scenarios=tuple(get("matrix_scenario") or ()),
                slice=get("matrix_slice"),
                shard=None if shard is None else Shard.parse(shard),
                models=tuple(dict.fromkeys(get("matrix_models") or ("tiny",))),
                checkpoints=tuple(get("matrix_checkpoint") or ()),
            ),
            catalog=get("matrix_catalog"),
            scenario_module=get("matrix_scenario_module"),
            results=get("matrix_results"),
            resume=bool(get("matrix_resume")),
            run_id=get("matrix_run_id") or settings.read("HF_NEURON_MATRIX_RUN_ID") or None,
            timeout_s=float(timeout),
            device=device,
            profile=profile,
            known_failures=KNOWN_FAILURES_PATH if known is None else known,
            known_failures_required=known is not None,
            layers=layers,
            max_gb=max_gb,
            checkpoint_catalog=get("matrix_checkpoint_catalog"),
        )

    def scenario_names(self) -> set[str]:
        """The scenario names a reviewed list may use: the built-in set's and the run's."""
        return {*load_scenarios().names, *load_scenarios(self.scenario_module).names}

    def known(self) -> KnownFailures:
        """The known failures of the run: those that hold for the release its verdicts predict (the profile's, on the
        reference device; every entry on the real backend)."""
        release = None if backends.real_backend_installed() else PROFILES[self.profile].predicts
        return holding_for(load_known_failures(self.known_failures, self.scenario_names(),
                                               required=self.known_failures_required), release)

    def read_data_files(self) -> KnownFailures:
        """Read and check every reviewed data file (before the first case runs: a malformed one stops the run);
        return the run's known failures."""
        return check_reviewed_data(catalog=self.catalog, known_failures=self.known_failures,
                                   known_failures_required=self.known_failures_required,
                                   scenario_names=self.scenario_names())

    @property
    def budget(self) -> int:
        """The memory budget of a checkpoint's slice, in bytes: ``--max-gb``, else the default for the run's workers
        (``hf-neuron matrix run`` gives every process of a run the same explicit value)."""
        if self.max_gb is not None:
            return int(self.max_gb * GIB)
        return default_budget(settings.read("HF_NEURON_MATRIX_WORKERS"))

    def cases(self) -> list[Case]:
        """The selected cases, in run order (reads the catalog and imports the scenario set)."""
        slicing = Slicing(self.layers, self.budget, self.checkpoint_catalog)
        return select(read_catalog(self.catalog), load_scenarios(self.scenario_module), self.selection, SLICES_PATH,
                      slicing)
