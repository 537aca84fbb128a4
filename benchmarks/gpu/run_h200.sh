#!/usr/bin/env bash
# Everything tile needs measured on the H200, in one device call (device time is scarce).
#
# Here, first:   uv build --all-packages --wheel -o .whl   (plus the third-party wheels that
#                the GPU image lacks: msgspec pydantic pydantic-core annotated-types
#                typing-inspection pooch platformdirs, for cp312 manylinux; see docs/gpu.md)
# There:         bash benchmarks/gpu/run_h200.sh        (carry .whl; results land in $OUT)
#
# Order: the accuracy table (issue #6's main figure) first, then calibration, then the tile-std
# table, then the `gpu`-marked tests; each step has its own time limit so one hang cannot eat
# the others.
set -uo pipefail
OUT=${OUT:-/tmp/tile-gpu-out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
# No TILE_* names for this script's own knobs: tile reads TILE_<SECTION>_<KEY> as config.
# JAX must not grab 75% of the GPU up front: ncu and torch run beside it in this script.
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 TILE_CACHE_DIR=/tmp/tile-cache NO_COLOR=1
export XLA_PYTHON_CLIENT_PREALLOCATE=false
start=$SECONDS
stamp() { echo "== [$((SECONDS - start)) s] $*"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv

stamp "accuracy"
timeout "${ACCURACY_LIMIT_S:-200}" python3 benchmarks/gpu/accuracy.py 2>&1 | tee "$OUT/accuracy.txt"

stamp "tile device --calibrate"
timeout 120 python3 -m tile_cli device --calibrate 2>&1 | tee "$OUT/device.txt"

stamp "tile bench (tile-std)"
timeout "${BENCH_LIMIT_S:-240}" python3 -m tile_cli bench -o /tmp/std-run ${BENCH_ARGS:-} 2>&1 \
    | tee "$OUT/bench.txt"
python3 -m tile_cli schema-check /tmp/std-run 2>&1 | tail -3
cp /tmp/std-run/report.json "$OUT/std-report.json" 2>/dev/null

if [ -n "${GPU_TESTS_LIMIT_S:-}" ]; then
    stamp "pytest -m gpu"
    timeout "$GPU_TESTS_LIMIT_S" python3 -m pytest -q -m gpu -p no:cacheprovider \
        packages/tile-runner/tests packages/tile-std/tests 2>&1 | tee "$OUT/gpu-tests.txt" | tail -25
fi
stamp "done"
