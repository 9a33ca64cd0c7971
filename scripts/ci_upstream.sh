#!/usr/bin/env bash
# CI: the CI selection (`hf-neuron upstream <library> --list`) of PEFT's, accelerate's, diffusers' and TRL's own
# tests, CPU beside neuron, on the reference device unless the real TorchNeuron is installed.
#
#   scripts/ci_upstream.sh [RESULTS]     default RESULTS: results/ci-upstream (one folder per library)
#
# A CI selection is a few dozen tests of each suite: its time is the start-up of each test process (torch, the
# library, collecting its test modules), not the tests. So the libraries run side by side, each without xdist
# workers (-n 1: one process per device collects the tests, not one per worker); each library's output is printed
# when it ends (RESULTS/<library>.log).
# Each library takes the source its settings give (`hf-neuron upstream --configured`, as the nightly does): PEFT's and
# accelerate's sdist of the installed version (the package index, once; then the cache), HF_NEURON_DIFFUSERS_SOURCE
# (default ../shared/upstream/diffusers-tests), HF_NEURON_TRL_SOURCE (a checkout, or a git repository with
# HF_NEURON_TRL_REVISION; HF_NEURON_TRL_AGAINST: the TRL release its tests run against), a clone of the tag with
# HF_NEURON_UPSTREAM_FETCH=1; a library without one is skipped, saying so (the command's exit status 4; TRL's sdist
# has no tests). Every variable is declared in hf_neuron/settings.py.
# Exit status: 0 no library has a neuron-only failure, 1 some have, 2 bad input or a run that did not run where it says.
set -euo pipefail

results=${1:-results/ci-upstream}
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
python=${PYTHON:-$repo/.venv/bin/python}
[[ -x $python ]] || python=python3
hfn() { "$python" -m hf_neuron.cli "$@"; }
if ! "$python" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("torch_neuronx") is None)'; then
    export HF_NEURON_EMULATOR=1
fi
export HF_HUB_OFFLINE=1

# `hf-neuron upstream --configured` exits EXIT_SKIPPED when no source is configured: nothing ran (its log says which setting)
skipped=$("$python" -c 'from hf_neuron.vocabulary.exits import EXIT_SKIPPED; print(EXIT_SKIPPED)')
status=0 started=()
mkdir -p "$results"
for library in peft accelerate diffusers trl; do
    rm -rf "${results:?}/$library" "$results/$library.log"
    hfn upstream "$library" --configured --group ci -n 1 --results "$results/$library" \
        > "$results/$library.log" 2>&1 &
    started+=("$library:$!")
done
for entry in "${started[@]}"; do
    library=${entry%%:*} library_status=0
    wait "${entry#*:}" || library_status=$?
    echo "== ci_upstream: $library (status $library_status)"
    cat "$results/$library.log"
    (( library_status == skipped )) && library_status=0
    (( library_status <= status )) || status=$library_status
done
exit "$status"
