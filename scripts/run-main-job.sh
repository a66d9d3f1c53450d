#!/usr/bin/env bash
# The main job (`make run`): training -> trace -> co-simulation (TLM, and RTL in lockstep on a subset)
# -> area -> report/. Profiles: quick (default; about 20 minutes on a 2-core machine) and full
# (RUN_PROFILE=full: 10 epochs of vgg-s, RTL on every layer). Each step's outputs stay in run/; a failing
# step stops the job with one line naming the step and leaves earlier outputs intact. The previous job's
# outputs are moved aside at the start (run/previous/, report.previous/), so a failed job leaves no report
# and no step output that looks current but is not.
set -uo pipefail
cd "$(dirname "$0")/.."

PROFILE="${1:-quick}"
BIN="${RUN_BIN:-build/bin}"
RUN="${RUN_DIR:-run}"
RUN="${RUN%/}"
REPORT="${RUN_REPORT:-report}"
REPORT="${REPORT%/}"  # report/ would be moved into itself below
GPU="${RUN_GPU:-v100}"
MODEL=vgg-s
AREA_ARGS=()

case "$PROFILE" in
  quick)
    # 300 SGD steps of vgg-s (about a third of an epoch), captured at steps 0, 100, 200;
    # RTL lockstep on three layers of each captured step (first conv, a middle conv, first FC).
    TRAIN_ARGS=(--iterations 300 --capture-every 100)
    RTL_LAYERS="0,6,13"
    # Memories counted as SRAM only: skips the second, flip-flop synthesis of each unit (minutes of ABC).
    AREA_ARGS=(--ff-memory-limit-bits 0)
    ;;
  tiny)
    # For the end-to-end test (scripts/tests/test_main_job.py): lenet5, 20 steps, RTL on one layer, area
    # flow on the small test blocks of sim/area/tests/ instead of the full units (minutes of synthesis).
    MODEL=lenet5
    TRAIN_ARGS=(--iterations 20 --capture-every 10 --batch 32 --test-limit 500 --threads 1)
    RTL_LAYERS="0"
    AREA_ARGS=(--manifest sim/area/tests/data/manifest.yaml)
    ;;
  full)
    TRAIN_ARGS=(--epochs 10 --capture-every 1000)
    RTL_LAYERS=""
    ;;
  *) echo "make run: unknown RUN_PROFILE '$PROFILE' (quick|full|tiny)" >&2; exit 2 ;;
esac

DEVICE=cpu
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && "$BIN/spartan-train" --help | grep cuda > /dev/null; then
  DEVICE=cuda
fi

mkdir -p "$RUN"
# The previous job's outputs, moved aside (replacing the ones kept from the job before it).
prev=()
for p in run.sptrace train.json sim scale area train.log simulate.log scale.log area.log report.log; do
  [ -e "$RUN/$p" ] && prev+=("$p")
done
if [ ${#prev[@]} -gt 0 ]; then
  rm -rf "$RUN/previous" && mkdir -p "$RUN/previous"
  for p in "${prev[@]}"; do mv "$RUN/$p" "$RUN/previous/"; done
  echo "make run: the previous job's outputs moved to $RUN/previous/"
fi
if [ -e "$REPORT" ]; then
  rm -rf "$REPORT.previous" && mv "$REPORT" "$REPORT.previous"
  echo "make run: the previous report moved to $REPORT.previous/ (a new $REPORT/ is written only if every step succeeds)"
fi
step_no=0
NSTEPS=5
step() {  # step NAME CMD...: runs one step, logs to run/NAME.log, stops the job on failure
  local name="$1"; shift
  step_no=$((step_no + 1))
  echo "== [$step_no/$NSTEPS] $name: $*"
  local t0=$SECONDS
  if ! "$@" 2>&1 | tee "$RUN/$name.log"; then
    echo "make run: step '$name' failed (see $RUN/$name.log); outputs of earlier steps in $RUN/ are intact; no report written (the previous job's outputs are in $RUN/previous/ and $REPORT.previous/)" >&2
    exit 1
  fi
  echo "== [$step_no/$NSTEPS] $name done in $((SECONDS - t0)) s"
}

step train "$BIN/spartan-train" --model "$MODEL" --device "$DEVICE" --seed 1 "${TRAIN_ARGS[@]}" \
  --trace "$RUN/run.sptrace" --out-json "$RUN/train.json"

# TLM on every captured (iteration, layer); the Verilated RTL of both units in lockstep on RTL_LAYERS
# (all layers when empty) of every captured iteration.
step simulate "$BIN/spartan-sim" run --trace "$RUN/run.sptrace" --gpu "$GPU" --out "$RUN/sim" \
  --rtl ${RTL_LAYERS:+--rtl-layers "$RTL_LAYERS"}
# The units at ImageNet scale (docs/reproduce-paper.md): synthetic ReLU-like activations of 13 ImageNet conv
# layers at batch 1 (real sizes, up to 12.8 MB), replayed with the default 32x32 tiles and with 128x128 tiles
# (whose 64 KiB must fit the engine's read buffer), and with 32x32 tiles and 16 compaction engines
# (--units engine.count), the host writing their descriptors and, again, the engines fetching them from memory
# and writing completion records (host.engine_fetch, host.engine_record), and with one engine and the monitors'
# flush completion counter (host.monitor_completion), for the report's section on how the ratios scale.
scale_step() {
  mkdir -p "$RUN/scale" &&
    printf 'engine:\n  read_buffer_bytes: 65536\n' > "$RUN/scale/units-128.yaml" &&
    "${RUN_SAMPLE:-$(dirname "$BIN")/tests/sptrace_sample}" --imagenet 1 0.3 "$RUN/scale/imagenet-b1.sptrace" &&
    "$BIN/spartan-sim" run -q --trace "$RUN/scale/imagenet-b1.sptrace" --gpu "$GPU" --out "$RUN/scale/t32" &&
    "$BIN/spartan-sim" run -q --trace "$RUN/scale/imagenet-b1.sptrace" --gpu "$GPU" --out "$RUN/scale/t128" \
      --tile 128x128 --units "$RUN/scale/units-128.yaml" &&
    printf 'engine:\n  count: 16\n' > "$RUN/scale/units-e16.yaml" &&
    "$BIN/spartan-sim" run -q --trace "$RUN/scale/imagenet-b1.sptrace" --gpu "$GPU" --out "$RUN/scale/t32e16" \
      --units "$RUN/scale/units-e16.yaml" &&
    printf 'engine:\n  count: 16\nhost:\n  engine_fetch: true\n  engine_record: true\n' > "$RUN/scale/units-e16mem.yaml" &&
    "$BIN/spartan-sim" run -q --trace "$RUN/scale/imagenet-b1.sptrace" --gpu "$GPU" --out "$RUN/scale/t32e16mem" \
      --units "$RUN/scale/units-e16mem.yaml" &&
    printf 'host:\n  monitor_completion: true\n' > "$RUN/scale/units-mc.yaml" &&
    "$BIN/spartan-sim" run -q --trace "$RUN/scale/imagenet-b1.sptrace" --gpu "$GPU" --out "$RUN/scale/t32mc" \
      --units "$RUN/scale/units-mc.yaml" &&
    echo "scale: $RUN/scale/t32/stats.json, $RUN/scale/t128/stats.json, $RUN/scale/t32e16/stats.json," \
      "$RUN/scale/t32e16mem/stats.json, $RUN/scale/t32mc/stats.json"
}
step scale scale_step
# Latency/throughput in area.json from the RTL co-simulation's cycle counts (written by run --rtl).
step area "$BIN/spartan-area" --gpu "$GPU" --out "$RUN/area" --cycles "$RUN/sim/rtl_cycles.json" "${AREA_ARGS[@]}"
step report /usr/bin/python3 scripts/make_report.py --run "$RUN" --out "$REPORT" --profile "$PROFILE"
echo "make run: report written to $REPORT/report.md (also report.html, report.json, PNG plots)"
