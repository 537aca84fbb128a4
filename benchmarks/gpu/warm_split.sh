#!/usr/bin/env bash
# Where a warm tile-std bench's time went between two versions (.whl: new, .whl/old: old):
# each side fills its own compile cache with a cold run, then runs warm with every kernel and
# warm without std/matmul, printing wall seconds and the run's own accounting.
set -uo pipefail
OUT=${OUT:-/tmp/warm-split}; mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --target /tmp/site-new .whl/*.whl || exit 1
deps=$(ls .whl/*.whl | grep -v '/tile_')
python3 -m pip install -q --no-index --no-deps --target /tmp/site-old .whl/old/*.whl $deps || exit 1
export NO_COLOR=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
no_mm="--kernel std/copy --kernel std/scale --kernel std/add --kernel std/softmax --kernel std/rmsnorm --kernel std/layernorm --kernel std/layernorm_jnp --kernel std/attention"
for side in new old; do
    for step in cold warm warm-no-matmul; do
        args=""; [ "$step" = warm-no-matmul ] && args=$no_mm
        # The warm runs say why each compile missed the cache (jax's own explanation).
        [ "$step" != cold ] && args="$args --cache-report -v"
        t0=$EPOCHREALTIME
        PYTHONPATH=/tmp/site-$side TILE_CACHE_DIR=/tmp/cache-$side timeout 120 python3 -m tile_cli \
            bench $args -o "/tmp/ws-$side-$step" > "$OUT/$side-$step.txt" 2>&1
        t1=$EPOCHREALTIME
        python3 - "$side-$step" "$t0" "$t1" "/tmp/ws-$side-$step/report.json" <<'PY' | tee -a "$OUT/warm-split.txt"
import json, sys
name, path = sys.argv[1], sys.argv[4]
wall = float(sys.argv[3]) - float(sys.argv[2])
t = json.load(open(path))["timing"]
p = t["parts"]
print(f"{name:<22} wall {wall:5.1f} s  runner start {t['runner_start_s']:.2f}  compile {p['compile_s']:.2f}"
      f"  inputs {p['inputs_s']:.2f}  check {p['check_s']:.2f}  warmup {p['warmup_s']:.2f}"
      f"  parts total {p['total_s']:.2f}  unaccounted {t['wall_s'] - t['runner_start_s'] - p['total_s']:.2f}")
PY
        grep -E "^ *miss |misses|cache " "$OUT/$side-$step.txt" | head -8 | tee -a "$OUT/warm-split.txt"
    done
done
