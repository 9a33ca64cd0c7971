"""Every reviewed data file of ``compat/``, read and checked at once: what ``hf-neuron matrix run`` does before its
first case, so that a malformed file stops the run (exit 2, naming the file and the line) instead of going unnoticed by
a run in which nothing happens to read it."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

from hf_neuron.compat.baselines import load_baseline
from hf_neuron.compat.catalog import load_catalog
from hf_neuron.compat.checkpoints import CHECKPOINTS_PATH, load_checkpoints
from hf_neuron.compat.hardware import load_hardware
from hf_neuron.compat.known_failures import KnownFailures, load_known_failures
from hf_neuron.compat.library_bugs import LIBRARY_BUGS_PATH, load_library_bugs
from hf_neuron.compat.ranking import load_ranking
from hf_neuron.compat.slices import SLICES_PATH, load_slices
from hf_neuron.compat.tiny_diffusion import load_recipes
from hf_neuron.compat.tiny_image_text import load_image_text
from hf_neuron.compat.tiny_overrides import load_overrides
from hf_neuron.compat.upstream_not_applicable import load_not_applicable

__all__ = ["check_reviewed_data"]


def check_reviewed_data(*, catalog: Path | None, known_failures: Path, known_failures_required: bool,
                        scenario_names: Collection[str]) -> KnownFailures:
    """Read and check every file of ``compat/`` (the ``catalog`` and ``known_failures`` the run was given, whose
    scenarios must be among ``scenario_names``); the first malformed one raises its
    :class:`~hf_neuron.vocabulary.datafiles.DataFileError`. Returns the known failures. The architectures of the
    checkpoint catalog and of the library bugs are checked against the checkout's catalog (``compat/catalog.json``),
    whatever catalog the run reads."""
    run_catalog = load_catalog(catalog)
    project = run_catalog if catalog is None else load_catalog()
    load_checkpoints(CHECKPOINTS_PATH, architectures=project.by_type())
    known = load_known_failures(known_failures, scenario_names, required=known_failures_required)
    load_library_bugs(LIBRARY_BUGS_PATH, scenario_names=scenario_names, model_types=project.by_type())
    load_overrides()
    load_image_text()
    load_recipes()
    load_slices(SLICES_PATH)
    load_baseline()
    load_ranking()
    load_not_applicable()
    load_hardware()
    return known
