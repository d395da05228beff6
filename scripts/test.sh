#!/usr/bin/env bash
# Set up (the toolchain, and edgesdk with the [test,tvm] extras in .venv), then run the whole test suite
# (unit tests + bit-exact end-to-end runs on every shared model) in that virtualenv, on every core
# (pytest-xdist; EDGESDK_TEST_WORKERS=N picks another number, 0 runs in this process). Arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --extras test,tvm
. scripts/venv.sh
exec "$VENV_PYTHON" -m pytest -q -ra -n "${EDGESDK_TEST_WORKERS:-auto}" "$@"
