#!/usr/bin/env bash
# Set up, then build the MLPerf Tiny keyword-spotting model for the riscv-npu board and run it on the
# built-in emulator with a seeded random input, checked byte for byte against LiteRT's reference kernels.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
MODEL="${1:-../shared/models/mlcommons_tiny/kws_ref_model.tflite}"
OUT="${2:-out/kws}"
python3 -m edgesdk build "$MODEL" --board riscv-npu --target "npu,c" -o "$OUT"
echo
python3 -m edgesdk run "$OUT" --random-input 0 --check
