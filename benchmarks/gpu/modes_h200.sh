#!/usr/bin/env bash
# Forward and backward modes of tile-std's row kernels and attention on the H200 (issue 35):
# every mode at the default bench shapes, each timed beside its reference (in `bwd`, the
# reference's own VJP on its own residuals), so the speedup column compares like with like.
#
# Here, first:   the wheels of run_h200.sh in .whl (tile's own from this checkout)
# There:         bash benchmarks/gpu/modes_h200.sh        (carry .whl; results land in $OUT)
set -uo pipefail
OUT=${OUT:-/tmp/tile-gpu-out}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 TILE_CACHE_DIR=/tmp/tile-cache NO_COLOR=1
export COLUMNS=200 XLA_PYTHON_CLIENT_PREALLOCATE=false
mkdir -p /tmp/modes && cd /tmp/modes || exit 1
nvidia-smi --query-gpu=name --format=csv,noheader
timeout "${MODES_LIMIT_S:-520}" python3 -m tile_cli bench --mode all ${MODES_ARGS:-} \
    --kernel std/rmsnorm --kernel std/layernorm --kernel std/attention -o /tmp/modes/run 2>&1 \
    | tee "$OUT/modes.txt"
cp /tmp/modes/run/report.json "$OUT/modes-report.json" 2>/dev/null
tar czf "$OUT/modes-logs.tgz" -C /tmp/modes/run logs 2>/dev/null
true
