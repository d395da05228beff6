#!/usr/bin/env bash
# Set up (the toolchain, and edgesdk with the [reference] extra in .venv), then build MLPerf Tiny's
# keyword-spotting model (shipped in examples/models) for the riscv-npu board and run it on the built-in
# emulator with a seeded random input, checked byte for byte against LiteRT's reference kernels.
#   ./scripts/demo.sh [MODEL.tflite [OUT]]
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --extras reference
. scripts/venv.sh
MODEL="${1:-examples/models/kws_ref_model.tflite}"
OUT="${2:-out/kws}"
"$EDGESDK_VENV/bin/edgesdk" build "$MODEL" --board riscv-npu --target "npu,c" -o "$OUT"
echo
"$EDGESDK_VENV/bin/edgesdk" run "$OUT" --random-input 0 --check
