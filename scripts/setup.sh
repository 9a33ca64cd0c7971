#!/usr/bin/env bash
# Set up a development checkout: a virtual environment with hf-neuron and everything its tests need,
# the reference device's C++ extension built, and Debian's Chromium for the report's page test.
# Safe to run again. Usage: ./scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$python" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
# torch is pinned in pyproject.toml to the CPU wheel on this machine's disk; nothing multi-GB is downloaded.
.venv/bin/python -m pip install --quiet --editable '.[dev]'

# Build the reference device now rather than inside the first `import torch` (about a minute, once).
HF_NEURON_EMULATOR=1 .venv/bin/hf-neuron device build

# The report's page test drives the OS's Chromium; it is never downloaded by a test tool.
if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get install --yes --quiet chromium >/dev/null
    else
        echo "setup: Chromium is not installed; the page test will be skipped (apt-get install chromium)" >&2
    fi
fi
echo "setup: done. Run the tests with: .venv/bin/python -m pytest -n 2"
