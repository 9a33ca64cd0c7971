#!/usr/bin/env bash
# One shard of the fixed CI slice of the compatibility matrix (compat/slices.toml [ci]: a dozen architectures' tiny
# models x every scenario, and the real-width slice of the checkpoint it names), on the reference device unless the
# real TorchNeuron is installed.
#
#   scripts/ci_matrix_shard.sh [SHARD] [RESULTS]      e.g. scripts/ci_matrix_shard.sh 1/2 results/ci-1
#
# SHARD (default 1/1) is i/N; RESULTS (default results/ci-matrix) receives one JSON record per case. Every shard of
# one CI run must get the same HF_NEURON_MATRIX_RUN_ID (default: ci-$GITHUB_RUN_ID, else ci-<UTC time>) so that
# `hf-neuron matrix merge` accepts them. HF_NEURON_MATRIX_WORKERS sets the worker processes (default: the cores) and
# HF_NEURON_MATRIX_TIMEOUT the seconds per case; `hf-neuron matrix run` reads and checks both (hf_neuron/settings.py).
# Exit status is the runner's: 0 no failure on the device, 1 failures on the device that compat/known_failures.toml
# does not list, 2 bad input, 3 unfinished.
set -euo pipefail

shard=${1:-1/1}
results=${2:-results/ci-matrix}
export HF_NEURON_MATRIX_WORKERS=${HF_NEURON_MATRIX_WORKERS:-$(nproc)}
export HF_NEURON_MATRIX_RUN_ID=${HF_NEURON_MATRIX_RUN_ID:-ci-${GITHUB_RUN_ID:-$(date -u +%Y%m%dT%H%M%SZ)}}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
python=${PYTHON:-$repo/.venv/bin/python}
[[ -x $python ]] || python=python3

if ! "$python" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("torch_neuronx") is None)'; then
    export HF_NEURON_EMULATOR=1  # no real TorchNeuron here: run on the reference device
fi
export HF_HUB_OFFLINE=1

resume=()
[[ -f $results/run.json ]] && resume=(--resume)  # a retried CI job continues its shard
exec "$python" -m hf_neuron.cli matrix run --slice ci --models tiny checkpoints --shard "$shard" --results "$results" \
    "${resume[@]}"
