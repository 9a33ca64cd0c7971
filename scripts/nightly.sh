#!/usr/bin/env bash
# The nightly compatibility matrix on one machine: every architecture's tiny model x every scenario and every
# catalogued checkpoint's real-width slice (compat/checkpoints.toml), then the merged records, the report site and
# its history.
#
#   scripts/nightly.sh [OUT [SELECTION...]]     default OUT: nightly/<UTC date>; SELECTION: `matrix run` options
#
# OUT/results   the run's records (an interrupted nightly started again with the same OUT resumes it)
#               (TRL's scenarios among them: sft, dpo, grpo, and trl_cli, TRL's command line on two devices for
#               the 10 best-ranked decoders)
# OUT/merged    one record per case, deduplicated (`hf-neuron matrix merge`): what the report and archives read
# OUT/site      the static report (`hf-neuron report build`), with the trend read from, and this run added to,
#               HF_NEURON_HISTORY (default nightly/history): keep that directory between nights
# OUT/upstream  transformers' own model tests of the top HF_NEURON_UPSTREAM_TOP (default 10) architectures of
#               compat/ranking.csv on neuron and on the CPU (`hf-neuron upstream`), shown in the report. Needs a
#               transformers source tree: HF_NEURON_TRANSFORMERS_SOURCE (a checkout of the installed version's tag),
#               or HF_NEURON_UPSTREAM_FETCH=1 to clone it (network); without either this step is skipped, saying so.
# OUT/upstream-<library>  the nightly selection (`hf-neuron upstream <library> --list`) of PEFT's, accelerate's,
#               diffusers' and TRL's own tests, CPU beside neuron, each at most 15 minutes at -n 2 on two cores;
#               HF_NEURON_UPSTREAM_LIBRARIES (default "peft accelerate diffusers trl") chooses them.
# Each upstream step takes the source its settings give (`hf-neuron upstream --configured`, which says where it
# looks: PEFT's and accelerate's sdist, HF_NEURON_DIFFUSERS_SOURCE or ../shared/upstream/diffusers-tests,
# HF_NEURON_TRL_SOURCE at HF_NEURON_TRL_REVISION, its tests against HF_NEURON_TRL_AGAINST installed beside the
# project's TRL when set, a clone with HF_NEURON_UPSTREAM_FETCH=1); one without a source
# is skipped, saying so (the command exits EXIT_SKIPPED, 4).
# Environment: HF_NEURON_MATRIX_RUN_ID (the run's id; default nightly-<UTC date>, a second run of a day needs its own),
# HF_NEURON_MATRIX_WORKERS (default: the number of cores), HF_NEURON_MATRIX_TIMEOUT (per case, s),
# HF_NEURON_MATRIX_MAX_GB (a checkpoint slice's memory budget, default 8 GiB: a worker needs that much free).
# Every variable is declared, checked and documented in hf_neuron/settings.py; this script reads each through
# `hf-neuron settings NAME`, which exits 2 with the reason for a bad value.
# The reference device is used unless the real TorchNeuron is installed. Exit status: 0 when the site was built
# (device failures are the report's content, not an error of the nightly), else the failing step's status.
set -euo pipefail

day=$(date -u +%Y%m%d)
out=${1:-nightly/$day}
selection=("${@:2}")
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
python=${PYTHON:-$repo/.venv/bin/python}
[[ -x $python ]] || python=python3
hfn() { "$python" -m hf_neuron.cli "$@"; }
setting() { hfn settings "$1"; }

export HF_NEURON_MATRIX_WORKERS=${HF_NEURON_MATRIX_WORKERS:-$(nproc)}
export HF_NEURON_MATRIX_MAX_GB=${HF_NEURON_MATRIX_MAX_GB:-8}  # every night slices checkpoints alike
history=$(setting HF_NEURON_HISTORY)
workers=$(setting HF_NEURON_MATRIX_WORKERS)

if ! "$python" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("torch_neuronx") is None)'; then
    export HF_NEURON_EMULATOR=1
fi
export HF_HUB_OFFLINE=1
mkdir -p "$out" "$history"

# The run's id: HF_NEURON_MATRIX_RUN_ID, else nightly-<UTC date>; a resumed nightly keeps the one it started with, so
# that sittings on other days make one run.
run_id=$(setting HF_NEURON_MATRIX_RUN_ID)
run=(--run-id "${run_id:-nightly-$day}")
[[ -f $out/results/run.json ]] && run=(--resume)
status=0
hfn matrix run --results "$out/results" --models tiny checkpoints "${run[@]}" \
    "${selection[@]}" || status=$?
if (( status > 1 )); then
    echo "nightly: the matrix run did not finish (status $status); run this script again with the same OUT" >&2
    exit "$status"
fi
rm -rf "$out/merged"
hfn matrix merge "$out/results" --out "$out/merged"

# The libraries' own tests: transformers' top architectures, then the nightly selection of each other library, one
# finished run of each kept (OUT/upstream[-<library>].done); an interrupted one starts again. The exit status 4 of
# `hf-neuron upstream --configured` (no source configured: it says which setting gives one) skips a step.
skipped=$("$python" -c 'from hf_neuron.vocabulary.exits import EXIT_SKIPPED; print(EXIT_SKIPPED)')
upstream=() upstream_status=0
for library in transformers $(setting HF_NEURON_UPSTREAM_LIBRARIES); do
    if [[ $library == transformers ]]; then
        dir=$out/upstream selection=(--top "$(setting HF_NEURON_UPSTREAM_TOP)")
    else
        dir=$out/upstream-$library selection=(--group nightly)
    fi
    if [[ -f $dir.done ]]; then
        upstream+=(--upstream "$dir")
        continue
    fi
    rm -rf "$dir"
    library_status=0
    hfn upstream "$library" --configured "${selection[@]}" -n "$workers" --results "$dir" || library_status=$?
    if (( library_status == skipped )); then
        continue
    elif (( library_status <= 1 )); then
        touch "$dir.done"
        upstream+=(--upstream "$dir")
    else
        echo "nightly: $library's own tests did not run (status $library_status); the site is built without them" >&2
    fi
    (( library_status <= upstream_status )) || upstream_status=$library_status
done
hfn report build --results "$out/merged" --out "$out/site" --history "$history" "${upstream[@]}"
echo "nightly: site in $out/site (matrix status $status: 0 none failing on the device, 1 some;" \
     "upstream status $upstream_status)"
(( upstream_status <= 1 )) || exit "$upstream_status"
