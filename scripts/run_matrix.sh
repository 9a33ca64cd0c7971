#!/usr/bin/env bash
# The main job: a matrix run on the reference neuron device, then its report (after ./scripts/setup.sh, which sets
# up .venv and the reference device when they are missing, and takes seconds when they are there).
#
#   ./scripts/run_matrix.sh                  # the CI slice (a dozen architectures, all scenarios; one checkpoint)
#   ./scripts/run_matrix.sh --group decoder  # any `hf-neuron matrix run` selection instead
#
# Records go to results/ (replaced on each run), the report to site/index.html; the run's summary is added to
# site/history/ so that the next report shows the trend and what changed. Exits with the matrix's status
# (0: nothing fails on neuron beyond compat/known_failures.toml; 1: something does), after writing the report.
set -uo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh || exit $?
export HF_NEURON_EMULATOR=1 HF_HUB_OFFLINE=1

selection=("$@")
[ ${#selection[@]} -gt 0 ] || selection=(--slice ci --models tiny checkpoints)

rm -rf results
.venv/bin/hf-neuron matrix run "${selection[@]}" -n 2 --results results
status=$?
if [ "$status" -ge 2 ]; then
    exit "$status"  # bad input or an unfinished run: there is nothing whole to report
fi
.venv/bin/hf-neuron report build --results results --out site --history site/history || exit $?
echo "report: site/index.html"
exit "$status"
