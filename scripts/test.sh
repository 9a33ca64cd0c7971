#!/usr/bin/env bash
# The tests and every static check, after setting up what is missing (./scripts/setup.sh: seconds when set up).
#
#   ./scripts/test.sh                   lint, types, workflow checks, then the whole suite with 2 workers
#   ./scripts/test.sh -m "not slow"     arguments go to pytest (the static checks always run, first: they are fast)
#
# The static checks: ruff (lint, import order), mypy (types of hf_neuron/), zizmor (the GitHub workflows' security,
# offline, high severity), and actionlint (the workflows' syntax and expressions) when it is on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/mypy
.venv/bin/zizmor --offline --min-severity high --quiet .github/workflows/
if command -v actionlint >/dev/null 2>&1; then
    actionlint
fi
exec .venv/bin/python -m pytest -n 2 "$@"
