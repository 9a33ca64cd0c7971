"""``trainium_fallback_ops.txt``: the operators the real backend runs on the CPU — its one reader (no torch needed).

The reference device warns about them (``HF_NEURON_EMULATOR_WARN_FALLBACK=1``) and reports them from
``torch.neuron.get_fallback_ops()``; the file's comment says where the list comes from (inferred from documentation
until ``scripts/fallback_ops_from_run.py`` writes it from a Trainium run).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["TRAINIUM_FALLBACK_OPS_FILE", "trainium_fallback_ops"]

TRAINIUM_FALLBACK_OPS_FILE = Path(__file__).with_name("trainium_fallback_ops.txt")


def trainium_fallback_ops() -> list[str]:
    """The operator names of :data:`TRAINIUM_FALLBACK_OPS_FILE` (``aten::name`` per line, ``#`` comments)."""
    lines = TRAINIUM_FALLBACK_OPS_FILE.read_text().splitlines()
    return [line.split("#")[0].strip() for line in lines if line.split("#")[0].strip()]
