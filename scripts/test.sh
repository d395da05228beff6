#!/usr/bin/env bash
# Set up, then run the whole test suite (unit tests + bit-exact end-to-end runs on every shared model).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
exec python3 -m pytest -q -ra "$@"
