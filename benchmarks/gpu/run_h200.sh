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
# the others. STEPS picks steps (default "accuracy calibrate bench tests"; "sweep" runs
# benchmarks/gpu/norm_sweep.py, "cache" a cold bench twice with the persistent compile cache,
# "aa" repeated tile-std runs for compare's false alarms, AA_ARGS added to each, e.g.
# "--rounds 4"; "ttr" benchmarks/gpu/time_to_result.py, with .whl/old/ as the code before (TTR_ARGS
# "--pairs 2": each side cold then warm, caches of its own, old new new old);
# "tune" tile tune of the row kernels (TUNE_KERNELS others, e.g. "--kernel std/matmul";
# TUNE_SHIP=1 merges the winners into a copy of tile-std's shipped tuning, returns it as
# shipped-<device>.json, installs it and runs all of tile-std's bench as a fresh user would,
# within BENCH_LIMIT_S as the bench step;
# TUNE_ARGS narrows the tune, e.g. "-k 16384x8192"; TUNE_OLD=1
# first runs the same tune with .whl/old, each with a cold compile cache, for the speed-up;
# TUNE_EXHAUSTIVE=1 then measures every configuration fully, tune.rungs=0, and checks the
# winners against it with benchmarks/tune_vs_exhaustive.py); "from" a
# two-layer model's captured cases tuned and benched; "campaign" the std-warm-cold campaign; "cachereport"
# cold vs warm process; "report" the HTML report of the ttr warm run; "breakdown" the
# per-kernel breakdown against ncu and a planted one-fusion regression; "profile" tile profile
# --ncu on one tile-std case, timed, beside ncu run by hand on the same kernel; "gradtruth"
# benchmarks/gpu/grad_truth.py, tile's bwd/fwd_bwd medians against direct CUPTI; "gradsweep"
# benchmarks/gpu/grad_sweep.py, the Pallas backwards' tilings against XLA's autodiff; "planted"
# benchmarks/gpu/planted_ab.py, tile bench --against on identical code and planted slowdowns;
# "runnerprofile" benchmarks/runner_profile.py, a cProfile of a warm one-case run's runner
# (RUNNERPROFILE_ARGS="all" the whole warm default run's);
# "pyc" benchmarks/gpu/pyc_probe.py, the sources a runner compiles at every import;
# "firstop" benchmarks/gpu/first_op_probe.py, a fresh process's first use of the GPU;
# "clock" benchmarks/gpu/clock_recovery.py, CLOCK_ARGS e.g. "--grid --heater K:N";
# "rows" benchmarks/gpu/row_variants.py, row-kernel schedules beside XLA and tokamax, ROWS_ARGS
# e.g. "--ops layernorm"; "mmsweep" benchmarks/gpu/matmul_sweep.py, matmul tilings beside XLA;
# "warmsplit" a warm bench of this code and of .whl/old, with and without std/matmul;
# "mosaickey" benchmarks/gpu/mosaic_key_probe.py, why a warm run's Hopper matmul misses JAX's
# persistent cache; "alias" benchmarks/gpu/alias_probe.py, whether the cupti timer sees XLA's copy for an aliased
# output; "attn" benchmarks/gpu/attention_anchor.py, tile-std's attention beside jax's own).
# ONLY_ON=H200 (any part of nvidia-smi's name) stops the call on any other card;
# H200_STEPS="rows" names steps that run only on an H200 (the rest run on any card).
set -uo pipefail
OUT=${OUT:-/tmp/tile-gpu-out}
mkdir -p "$OUT"
# ONLY_ON=H200: stop at once (exit 3) on any other card, for steps whose figures are one
# card's (a call for an H200 may be given an H100, and device time is scarce).
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
if [ -n "${ONLY_ON:-}" ]; then
    [[ $card == *"$ONLY_ON"* ]] || {
        echo "this is $card, not $ONLY_ON: stopping"
        echo "hint: call again for another machine, or leave ONLY_ON unset to run on this card"
        exit 3
    }
fi
# Bytecode compiled at install, as pip does by default: without it every process compiled
# tile's sources again (0.5 s of a runner's start on the H100, 2026-12-05).
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
# .whl/old/: tile's own wheels from an earlier commit, for the time-to-result comparison.
if [ -d .whl/old ]; then
    deps=$(ls .whl/*.whl | grep -v '/tile_')
    python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade \
        --target /tmp/site-old .whl/old/*.whl $deps || exit 1
fi
# .whl/anchors/: outside kernels to measure against (tokamax and the pure-Python packages it
# imports), kept apart from tile's own site; benchmarks/gpu/standin/ fills in the one import
# (qwix, for quantized arrays) the norms never use.
if [ -d .whl/anchors ]; then
    python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade \
        --target /tmp/anchors .whl/anchors/*.whl || echo "anchors not installed"
fi
# No TILE_* names for this script's own knobs: tile reads TILE_<SECTION>_<KEY> as config.
# JAX must not grab 75% of the GPU up front: ncu and torch run beside it in this script.
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 TILE_CACHE_DIR=/tmp/tile-cache NO_COLOR=1
export XLA_PYTHON_CLIENT_PREALLOCATE=false
start=$SECONDS
# A warm machine keeps the last call's /tmp: tile refuses to write a run directory twice.
rm -rf /tmp/ttr-out /tmp/cold-warm /tmp/from-bench /tmp/from-tune /tmp/hand-run /tmp/modes-run \
    /tmp/planted-base /tmp/planted-slow /tmp/profile-run /tmp/std-run /tmp/tune-run \
    /tmp/tune-run-ex /tmp/tune-run-old /tmp/tuned-bench /tmp/cache-run /tmp/grad-truth-run* \
    /tmp/tuning-exhaustive /tmp/tunewd /tmp/tunewd-old /tmp/tile-cache-tune-old \
    /tmp/tile-cache-tune-new /tmp/aa "$OUT/stamps.txt"
# Each stamp also goes to stamps.txt: the reply shows only the tail of what a call printed.
stamp() { echo "== [$((SECONDS - start)) s] $*" | tee -a "$OUT/stamps.txt"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv

STEPS=" ${STEPS:-accuracy calibrate bench tests} "
want() { [[ $STEPS == *" $1 "* ]]; }
# H200_STEPS: steps whose figures are the H200's are dropped on any other card, the rest run.
if [ -n "${H200_STEPS:-}" ]; then
    if [[ $card != *H200* ]]; then
        for s in $H200_STEPS; do
            want "$s" && echo "this is $card: step $s runs only on an H200, skipped"
            STEPS=${STEPS// $s / }
        done
    fi
fi

if want pyc; then
    # Sources a runner compiles at every import, for want of bytecode it can read or write.
    stamp "sources compiled at import"
    timeout 120 python3 benchmarks/gpu/pyc_probe.py 2>&1 | tee "$OUT/pyc.txt"
fi

if want ttr; then
    # Time to result (issue #16): new code cold and warm, one case, the floor loop, old code.
    stamp "time to result"
    old_arg=""
    [ -d /tmp/site-old ] && [ -z "${NO_OLD:-}" ] && old_arg="--old /tmp/site-old"
    # Per-step logs and reports go to logs.tgz: the device returns at most 8 files.
    timeout "${TTR_LIMIT_S:-560}" python3 benchmarks/gpu/time_to_result.py --new /tmp/site \
        $old_arg --out /tmp/ttr-out ${TTR_ARGS:-} 2>&1 | tee "$OUT/ttr.txt"
fi

if want mosaickey; then
    stamp "Hopper matmul and JAX's cache key"
    rm -rf /tmp/mosaic-key
    PYTHONPATH=/tmp/site:/tmp/anchors timeout "${MOSAICKEY_LIMIT_S:-150}" \
        python3 benchmarks/gpu/mosaic_key_probe.py /tmp/mosaic-key 2>&1 | tee "$OUT/mosaic-key.txt"
fi

if want accuracy; then
    stamp "accuracy"
    timeout "${ACCURACY_LIMIT_S:-200}" python3 benchmarks/gpu/accuracy.py ${ACCURACY_ARGS:-} 2>&1 \
        | tee "$OUT/accuracy.txt"
fi

if want calibrate; then
    stamp "tile device --calibrate"
    timeout 120 python3 -m tile_cli device --calibrate 2>&1 | tee "$OUT/device.txt"
fi

if want bench; then
    stamp "tile bench (tile-std)"
    timeout "${BENCH_LIMIT_S:-240}" python3 -m tile_cli bench -o /tmp/std-run ${BENCH_ARGS:-} 2>&1 \
        | tee "$OUT/bench.txt"
    python3 -m tile_cli schema-check /tmp/std-run 2>&1 | tail -3
    cp /tmp/std-run/report.json "$OUT/std-report.json" 2>/dev/null
    # What the per-kernel breakdown added to this run's host work (issue #36: under 1%).
    python3 benchmarks/breakdown_cost.py --hlo /tmp/std-run 2>&1 | tee "$OUT/breakdown-cost.txt"
fi

if want breakdown; then
    # Per-kernel breakdown against ncu, then a regression planted in one fusion of a
    # two-fusion case, which `tile compare` should name (issue #36).
    stamp "per-kernel breakdown vs ncu; planted fusion regression"
    {
        timeout "${BREAKDOWN_LIMIT_S:-300}" python3 benchmarks/gpu/breakdown.py ${BREAKDOWN_ARGS:-}
        cd benchmarks/gpu/planted || exit 1
        timeout 60 python3 -m tile_cli bench --max-time 0.5 -o /tmp/planted-base 2>&1 | tail -3
        PLANT_SLOW=1 timeout 60 python3 -m tile_cli bench -v --max-time 0.5 -o /tmp/planted-slow 2>&1 | tail -8
        python3 -m tile_cli compare /tmp/planted-base /tmp/planted-slow 2>&1 | tail -8
        cd - >/dev/null
    } 2>&1 | tee "$OUT/breakdown.txt"
fi

if want rows; then
    stamp "row-kernel schedules against XLA and tokamax"
    rows_pass() {
        PYTHONPATH=/tmp/site:/tmp/anchors:$PWD/benchmarks/gpu/standin timeout "${ROWS_LIMIT_S:-300}" \
            python3 benchmarks/gpu/row_variants.py "$@" 2>&1 | tee -a "$OUT/rows.txt"
    }
    : > "$OUT/rows.txt"
    rows_pass ${ROWS_ARGS:-}
    # ROWS_ARGS2: a second pass in the same step, e.g. "--anchors --dtypes float32" beside
    # variants of bfloat16 alone.
    [ -n "${ROWS_ARGS2:-}" ] && rows_pass ${ROWS_ARGS2}
fi

if want alias; then
    stamp "aliased outputs: what the cupti timer sees"
    PYTHONPATH=/tmp/site:/tmp/anchors:$PWD/benchmarks/gpu/standin timeout 150 \
        python3 benchmarks/gpu/alias_probe.py 2>&1 | tee "$OUT/alias.txt"
fi

if want attn; then
    stamp "attention against jax's Pallas attention kernels"
    timeout "${ATTN_LIMIT_S:-200}" python3 benchmarks/gpu/attention_anchor.py ${ATTN_ARGS:-} 2>&1 \
        | tee "$OUT/attn.txt"
fi

if want mmsweep; then
    stamp "matmul tilings against XLA"
    timeout "${MMSWEEP_LIMIT_S:-150}" python3 benchmarks/gpu/matmul_sweep.py ${MMSWEEP_ARGS:-} 2>&1 \
        | tee "$OUT/mmsweep.txt"
fi

if want hopper; then
    # /tmp/anchors holds absl-py, which jax's Mosaic GPU module imports.
    stamp "Mosaic GPU matmul tilings against XLA"
    PYTHONPATH=/tmp/site:/tmp/anchors timeout "${HOPPER_LIMIT_S:-200}" \
        python3 benchmarks/gpu/matmul_sweep.py --hopper ${HOPPER_ARGS:-} 2>&1 | tee "$OUT/hopper.txt"
fi

if want warmsplit; then
    # Where a warm tile-std bench's time goes, this code against .whl/old's: each side fills a
    # compile cache of its own with a cold run, then runs warm with every kernel and warm
    # without std/matmul; the warm runs list each cache miss with jax's reason.
    stamp "warm bench split, new and old code"
    no_mm="--kernel std/copy --kernel std/scale --kernel std/add --kernel std/softmax"
    no_mm="$no_mm --kernel std/rmsnorm --kernel std/layernorm --kernel std/layernorm_jnp"
    no_mm="$no_mm --kernel std/attention"
    rm -rf /tmp/ws-cache-site /tmp/ws-cache-site-old  # a warm machine keeps /tmp
    for side in site site-old; do
        [ -d "/tmp/$side" ] || continue
        for run in cold warm warm-no-matmul; do
            args=""; [ "$run" = warm-no-matmul ] && args=$no_mm
            [ "$run" != cold ] && args="$args --cache-report -v"
            name="$side-$run"; rm -rf "/tmp/ws-$name"
            t0=$EPOCHREALTIME
            PYTHONPATH=/tmp/$side TILE_CACHE_DIR=/tmp/ws-cache-$side timeout 120 \
                python3 -m tile_cli bench $args -o "/tmp/ws-$name" > "$OUT/ws-$name.txt" 2>&1
            python3 - "$name" "$t0" "$EPOCHREALTIME" "/tmp/ws-$name/report.json" <<'PY' \
                | tee -a "$OUT/warm-split.txt"
import json, sys
name, t0, t1, path = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
t = json.load(open(path))["timing"]
p = t["parts"]
print(f"{name:<24} wall {t1 - t0:5.1f} s  runner start {t['runner_start_s']:.2f}"
      f"  compile {p['compile_s']:.2f}  inputs {p['inputs_s']:.2f}  check {p['check_s']:.2f}"
      f"  warmup {p['warmup_s']:.2f}  parts total {p['total_s']:.2f}")
PY
            grep -E "^ *miss |misses" "$OUT/ws-$name.txt" | head -8 | tee -a "$OUT/warm-split.txt"
        done
    done
fi

if want sweep; then
    stamp "layernorm tiling sweep"
    timeout "${SWEEP_LIMIT_S:-150}" python3 benchmarks/gpu/norm_sweep.py 2>&1 | tee "$OUT/sweep.txt"
fi

if want cache; then
    # Compile cache and cold mode on the GPU: the same cold bench twice with a persistent JAX
    # cache; the second run's cases should be cache hits.
    stamp "compile cache + --cold, twice"
    for i in 1 2; do
        TILE_RUNNER_JAX_CACHE_DIR=/tmp/jax-cache timeout 90 python3 -m tile_cli bench \
            --kernel std/softmax --kernel std/copy -k '*float32*' --cold --max-time 0.3 \
            -o "/tmp/cache-run$i" >/dev/null 2>&1
        python3 - "/tmp/cache-run$i/report.json" <<'PY' 2>&1 | tee -a "$OUT/cache.txt"
import json, sys
report = json.load(open(sys.argv[1]))
print(sys.argv[1])
for c in report["cases"]:
    p = c["phases"]
    print(f"  {c['case_id']:<45} cold={c['cold']} timer={c['timer']} median={c['stats']['median'] * 1e6:.1f}us"
          f" compiles={p['compile_count']} hits={p['cache_hit_count']} misses={p['cache_miss_count']}"
          f" compile_s={p['compile_s']:.3f}")
PY
    done
fi

if want aa; then
    # Repeated runs of the same code for `tile compare` false alarms on the GPU (judged on the
    # machine that fetches aa-runs.tgz: benchmarks/compare_std_aa.py --judge DIR).
    stamp "A/A runs for compare"
    for i in $(seq -w 0 $((${AA_RUNS:-5} - 1))); do
        timeout 120 python3 -m tile_cli bench --kernel std/copy --kernel std/softmax \
            --kernel std/matmul --max-time 0.5 ${AA_ARGS:-} -o "/tmp/aa/runs/R$i" >/dev/null 2>&1
        stamp "R$i done (exit $?)"
    done
    tar czf "$OUT/aa-runs.tgz" -C /tmp/aa runs
fi

if want tune; then
    # tile tune of the row kernels (issue #18), then the tuned table against XLA.
    stamp "tile tune"
    repo=$PWD
    mkdir -p /tmp/tunewd && cd /tmp/tunewd
    tune_kernels=${TUNE_KERNELS:-"--kernel std/layernorm --kernel std/rmsnorm --kernel std/softmax"}
    if [ -d /tmp/site-old ] && [ -n "${TUNE_OLD:-}" ]; then
        # The same tune with the code before (.whl/old), both with a cold compile cache of
        # their own: issue #34's "2x faster than today's tune" is the wall of the two.
        mkdir -p /tmp/tunewd-old && cd /tmp/tunewd-old
        t0=$SECONDS
        PYTHONPATH=/tmp/site-old TILE_CACHE_DIR=/tmp/tile-cache-tune-old \
            timeout "${TUNE_LIMIT_S:-300}" python3 -m tile_cli tune $tune_kernels \
            --budget "${TUNE_OLD_BUDGET_S:-${TUNE_BUDGET_S:-120}}" ${TUNE_ARGS:-} -o /tmp/tune-run-old \
            > "$OUT/tune-old.txt" 2>&1
        stamp "old code's tune: $((SECONDS - t0)) s wall (exit $?)"
        cd /tmp/tunewd
        export TILE_CACHE_DIR=/tmp/tile-cache-tune-new
    fi
    # TUNE_SHIP=1: the winners go into a copy of tile-std's shipped tuning (the tune's own
    # merge, `tune.dir`), returned as shipped-<device>.json, ready to commit.
    tuned=tuning ship_arg="" prefix=""
    if [ -n "${TUNE_SHIP:-}" ]; then
        tuned=/tmp/shiptune ship_arg="tune.dir=/tmp/shiptune" prefix="shipped-"
        rm -rf "$tuned" && mkdir -p "$tuned" && cp /tmp/site/tile_std/tuning/*.json "$tuned/"
    fi
    t0=$SECONDS
    timeout "${TUNE_LIMIT_S:-300}" python3 -m tile_cli tune $tune_kernels \
        --budget "${TUNE_BUDGET_S:-120}" ${TUNE_ARGS:-} $ship_arg -o /tmp/tune-run 2>&1 | tee "$OUT/tune.txt"
    stamp "tune: $((SECONDS - t0)) s wall"
    # The file the tune wrote (the newest: a shipped copy holds other devices' files too),
    # returned first: a call that runs out of time in the benches below still has it.
    written=$(ls -t "$tuned"/*.json 2>/dev/null | head -1)
    [ -n "$written" ] && cp "$written" "$OUT/$prefix$(basename "$written")"
    if [ -n "${TUNE_EXHAUSTIVE:-}" ]; then
        # Every configuration fully measured (no rung prunes): is the tune's winner as fast
        # as the best of them, within its CI? (issue #34)
        t0=$SECONDS
        timeout "${TUNE_LIMIT_S:-300}" python3 -m tile_cli tune $tune_kernels ${TUNE_ARGS:-} \
            tune.rungs=0 tune.dir=/tmp/tuning-exhaustive -o /tmp/tune-run-ex > /tmp/tune-ex.txt 2>&1
        stamp "exhaustive tune: $((SECONDS - t0)) s wall"
        python3 "$repo/benchmarks/tune_vs_exhaustive.py" "$written" /tmp/tune-run-ex 2>&1 \
            | tee "$OUT/tune-exhaustive.txt"
    fi
    # With TUNE_SHIP the file is installed in tile-std and the tune left no tuning/ here, so
    # the bench is what a fresh user gets from the shipped file: all of tile-std's default
    # bench (its reference column is XLA), issue #37's table in one run.
    if [ -n "${TUNE_SHIP:-}" ] && [ -n "$written" ]; then
        cp "$written" /tmp/site/tile_std/tuning/
        stamp "fresh user's tile bench of tile-std, shipped tuning installed"
        timeout "${BENCH_LIMIT_S:-240}" python3 -m tile_cli bench -o /tmp/tuned-bench -v 2>&1 \
            | tee -a "$OUT/tune.txt"
        cp /tmp/tuned-bench/report.json "$OUT/shipped-bench-report.json" 2>/dev/null \
            || stamp "no shipped-bench-report.json: the bench wrote no report (see tune.txt)"
    else
        timeout 120 python3 -m tile_cli bench $tune_kernels ${TUNE_ARGS:-} -o /tmp/tuned-bench -v \
            2>&1 | tee -a "$OUT/tune.txt"
    fi
    export TILE_CACHE_DIR=/tmp/tile-cache
    cd "$repo"
fi

if want from; then
    # Real shapes (issue #34 item 2): a two-layer tile-std model traced with --from, its four
    # captured cases tuned and benched in one command, then benched again from the saved file.
    stamp "tile tune --from (two-layer model)"
    mkdir -p /tmp/fromwd && cp tests/fixtures/two_layer_model.py /tmp/fromwd/ && cd /tmp/fromwd
    printf '[project]\nmodules = ["tile_std"]\n' > tile.toml
    {
        python3 -m tile_cli list --from two_layer_model:example_gpu
        time timeout "${FROM_LIMIT_S:-360}" python3 -m tile_cli tune --from two_layer_model:example_gpu \
            --save-cases model-cases.json --budget "${FROM_BUDGET_S:-300}" -o /tmp/from-tune
        timeout 120 python3 -m tile_cli bench --cases model-cases.json -o /tmp/from-bench -v
    } 2>&1 | tee "$OUT/from.txt"
    cp model-cases.json tuning/*.json "$OUT/" 2>/dev/null
    cp /tmp/from-bench/report.json "$OUT/from-bench-report.json" 2>/dev/null
    cd - >/dev/null
fi

if want campaign; then
    # A tile-std campaign, warm and --cold (issue #17): history first, then the plan's
    # estimate against the run's actual time, and the case x variant table.
    stamp "campaign"
    {
        timeout 60 python3 -m tile_cli bench >/dev/null 2>&1
        timeout 90 python3 -m tile_cli bench --cold >/dev/null 2>&1
        python3 -m tile_cli campaign plan std-warm-cold 2>&1 | tail -4
        timeout "${CAMPAIGN_LIMIT_S:-150}" python3 -m tile_cli campaign run std-warm-cold 2>&1 | tail -12
        cat .tile/campaigns/std-warm-cold/summary.md
        python3 -m tile_cli schema-check .tile/campaigns/std-warm-cold 2>&1 | tail -2
    } 2>&1 | tee "$OUT/campaign.txt"
fi

if want cachereport; then
    # Cold process vs warm process with the persistent cache (issue #23).
    stamp "cache report, cold vs warm process"
    timeout "${CACHE_LIMIT_S:-200}" python3 -m tile_cli bench --cache-report --cold-process \
        -o /tmp/cold-warm 2>&1 | tail -5 | tee "$OUT/cache-report.txt"
    cp /tmp/cold-warm/diagnostics/jax_cache.json "$OUT/jax_cache.json" 2>/dev/null
fi

if want report; then
    # The HTML report of a real tile-std run (issue #19).
    stamp "tile report"
    run=$(ls -d /tmp/ttr-*/new-warm 2>/dev/null | head -1)
    [ -n "$run" ] && python3 -m tile_cli report "$run" -o "$OUT/h200-report.html" 2>&1 | tail -2
fi

if want profile; then
    # `tile profile --ncu` on one tile-std case (issue #36: under 60 s), then ncu by hand on the
    # first kernel it saw, with the same metrics, under a plain `tile bench` that knows nothing
    # of ncu; both are printed side by side (they should agree but for run-to-run noise).
    stamp "tile profile --ncu"
    pcase=${PROFILE_CASE:-$(python3 -m tile_cli list --kernel std/copy --json 2>/dev/null \
        | python3 -c 'import json, sys; print(json.loads(sys.stdin.readline())["case_id"])')}
    t0=$SECONDS
    timeout 300 python3 -m tile_cli profile --ncu --case "$pcase" -o /tmp/profile-run 2>&1 \
        | tee "$OUT/profile.txt"
    echo "tile profile --ncu --case '$pcase': $((SECONDS - t0)) s" | tee -a "$OUT/profile.txt"
    python3 -m tile_cli schema-check /tmp/profile-run 2>&1 | tail -1 | tee -a "$OUT/profile.txt"
    rep=$(ls /tmp/profile-run/outputs/*/profile/ncu.json | head -1)
    kernel=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["kernels"][0]["name"])' "$rep")
    metrics=$(python3 -c 'import tile_harness as th; print(",".join(th.metric_names()))')
    t0=$SECONDS
    timeout 300 ncu --csv --page raw --print-units base --clock-control none \
        --target-processes all --metrics "$metrics" --kernel-name "$kernel" --launch-skip 3 \
        --launch-count 1 --log-file /tmp/hand.csv python3 -m tile_cli bench --case "$pcase" \
        --timer wall --warmup 5 --min-runs 3 --max-runs 5 --max-time 0.1 -o /tmp/hand-run \
        >/dev/null 2>&1
    echo "ncu by hand on \`$kernel\`: $((SECONDS - t0)) s" | tee -a "$OUT/profile.txt"
    python3 - "$rep" /tmp/hand.csv <<'PY' 2>&1 | tee -a "$OUT/profile.txt"
import json, sys
import tile_harness as th
tile = json.load(open(sys.argv[1]))["kernels"][0]
hand = [k for k in th.parse_ncu_csv(open(sys.argv[2]).read()) if k.name == tile["name"]]
if not hand:
    sys.exit(f"the hand run profiled no `{tile['name']}`: see {sys.argv[2]}")
print(f"{'metric':<24}{'tile profile':>16}{'ncu by hand':>16}{'ratio':>9}")
for label, value in tile["metrics"].items():
    other = hand[0].metrics.get(label)
    ratio = f"{value / other:.3f}" if value and other else "-"
    print(f"{label:<24}{value!s:>16}{other!s:>16}{ratio:>9}")
print("top stalls, tile profile:", [(s["reason"], s["ratio"]) for s in tile["top_stalls"]])
print("top stalls, by hand:     ", hand[0].stalls)
PY
fi

if want modes; then
    # Forward and backward modes of every kernel with a Pallas backward (issue #35): each mode
    # timed beside its reference (in `bwd`, the reference's own VJP on its own residuals).
    stamp "tile bench --mode all (row kernels, attention)"
    timeout "${MODES_LIMIT_S:-300}" python3 -m tile_cli bench --mode all ${MODES_ARGS:-} \
        --kernel std/rmsnorm --kernel std/layernorm --kernel std/softmax --kernel std/attention \
        -o /tmp/modes-run \
        2>&1 | tee "$OUT/modes.txt"
    cp /tmp/modes-run/report.json "$OUT/modes-report.json" 2>/dev/null
fi

if want clock; then
    # How slow a case reads right after another kept the GPU busy, by heat and rest (the
    # runner's rests between samplings, tile_runner/_rest.py). CLOCK_ARGS e.g. "--grid
    # --heater std/add:16777216,dtype=float32 --heater std/matmul:8192".
    stamp "clock recovery after a heat"
    timeout "${CLOCK_LIMIT_S:-300}" python3 benchmarks/gpu/clock_recovery.py ${CLOCK_ARGS:-} 2>&1 \
        | tee "$OUT/clock.txt"
fi

if want firstop; then
    # A fresh process's first use of the GPU, serial or overlapped with tile-std's import
    # (issue #38: one case's inputs took ~1 s on the GPU).
    stamp "first device op of a process"
    timeout 240 python3 benchmarks/gpu/first_op_probe.py ${FIRSTOP_ARGS:-} 2>&1 | tee "$OUT/first-op.txt"
fi

if want gradtruth; then
    # Truth of the gradient modes (issue #35): `tile bench --mode bwd,fwd_bwd` of tile-std
    # attention and LayerNorm against a direct CUPTI measurement of each case's jitted program,
    # with XLA's autodiff of the reference beside the Pallas backward. GRADTRUTH_ARGS narrows
    # it (e.g. "-k 4096x128"); the step's last line is the worst tile/CUPTI ratio.
    stamp "gradient modes: tile vs direct CUPTI, Pallas backward vs XLA autodiff"
    timeout "${GRADTRUTH_LIMIT_S:-540}" python3 benchmarks/gpu/grad_truth.py ${GRADTRUTH_ARGS:-} \
        2>&1 | tee "$OUT/grad-truth.txt"
    cp /tmp/grad-truth-run/report.json "$OUT/grad-truth-report.json" 2>/dev/null
fi

if want gradsweep; then
    # Block sizes of the Pallas backwards (issue #35): the attention backward's and the row
    # backwards' tilings, each beside XLA's autodiff of the reference, under CUPTI.
    stamp "Pallas backward tiling sweep"
    # Attention at each bench sequence length (GRADSWEEP_SEQS), then the row kernels once.
    timeout "${GRADSWEEP_LIMIT_S:-540}" bash -c '
        for seq in ${GRADSWEEP_SEQS:-4096}; do
            python3 benchmarks/gpu/grad_sweep.py attention --seq "$seq" ${GRADSWEEP_ARGS:-}
        done
        python3 benchmarks/gpu/grad_sweep.py rows ${GRADSWEEP_ARGS:-}' 2>&1 | tee "$OUT/grad-sweep.txt"
fi

if want runnerprofile; then
    # Where a warm one-case `tile bench` spends its runner's time (issue #38): a cProfile of
    # the runner process (benchmarks/runner_profile.py).
    stamp "runner profile of a warm one-case bench"
    # RUNNERPROFILE_ARGS: e.g. "all --top 60" for the whole warm default run.
    timeout 150 python3 benchmarks/runner_profile.py ${RUNNERPROFILE_ARGS:---top 45} \
        > "$OUT/runner-profile.txt" 2>&1
    head -4 "$OUT/runner-profile.txt"
fi

if want planted; then
    # Issue #33 on the GPU: tile bench --against on identical code and on planted 10% and 3%
    # slowdowns (PLANTED_ARGS, e.g. "--runs 4"; needs git on the machine).
    stamp "planted A/B (tile bench --against)"
    timeout "${PLANTED_LIMIT_S:-540}" python3 benchmarks/gpu/planted_ab.py ${PLANTED_ARGS:-} 2>&1 \
        | tee "$OUT/planted-ab.txt"
fi

if want tests; then
    # 300 s: the gpu tests include every Pallas backward's test cases (32 more compiles).
    stamp "pytest -m gpu"
    # GPU_TESTS_K: a -k expression, spaces allowed ("backward or attention"); GPU_TESTS_ARGS is
    # split on spaces.
    k_args=()
    [ -n "${GPU_TESTS_K:-}" ] && k_args=(-k "$GPU_TESTS_K")
    timeout "${GPU_TESTS_LIMIT_S:-300}" python3 -m pytest -q -m gpu -p no:cacheprovider "${k_args[@]}" \
        ${GPU_TESTS_ARGS:-} packages/tile-runner/tests packages/tile-std/tests tests/test_profile.py \
        2>&1 | tee "$OUT/gpu-tests.txt" | tail -25
fi
[ -d /tmp/ttr-out ] && tar czf "$OUT/logs.tgz" -C /tmp ttr-out
stamp "done"
