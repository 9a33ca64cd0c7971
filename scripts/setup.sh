#!/usr/bin/env bash
# Set up a development checkout: a virtual environment (.venv) with hf-neuron and everything its tests need, the
# reference device's C++ extension built, and Debian's Chromium for the report's page test.
#
#   ./scripts/setup.sh          the test and main-job scripts (scripts/test.sh, scripts/run_matrix.sh) run it first
#
# Idempotent: when .venv was installed from the same pyproject.toml and scripts/constraints.txt, pip is not run
# again, and a device already in the build cache (~/.cache/hf-neuron) is only found, so a second run takes seconds.
# torch is the CPU build pinned in scripts/constraints.txt (found on this project's machines without a download);
# elsewhere set TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu to take it from PyTorch's CPU index, with the
# torchvision built for it (hf-neuron[vision]: the pipelines of OmniGen and Qwen-Image 2.1 need it; without it the
# matrix leaves them untested and says why).
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-python3}
stamp=.venv/.hf-neuron-setup
wanted=$(cat pyproject.toml scripts/constraints.txt | sha256sum | cut -c1-16)

if [ ! -x .venv/bin/python ]; then
    "$python" -m venv .venv
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
    echo "setup: installing hf-neuron[dev] into .venv" >&2
    .venv/bin/python -m pip install --quiet --upgrade pip
    if [ -n "${TORCH_INDEX_URL:-}" ]; then
        .venv/bin/python -m pip install --quiet --constraint scripts/constraints.txt --index-url "$TORCH_INDEX_URL" \
            torch torchvision
    fi
    .venv/bin/python -m pip install --quiet --constraint scripts/constraints.txt --editable '.[dev]'
    echo "$wanted" >"$stamp"
fi

# Build the reference device now rather than inside the first `import torch` (about a minute, once per torch,
# Python and source version); found in the cache, this takes a few seconds.
HF_NEURON_EMULATOR=1 .venv/bin/hf-neuron device build >/dev/null

# The report's page test drives the OS's Chromium; it is never downloaded by a test tool.
if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get install --yes --quiet chromium >/dev/null
    else
        echo "setup: Chromium is not installed; the page test will be skipped (apt-get install chromium)" >&2
    fi
fi
echo "setup: .venv ready, reference device built" >&2
