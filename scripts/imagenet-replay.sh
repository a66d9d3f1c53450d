#!/usr/bin/env bash
# The units at the Spartan paper's scale: replays synthetic activations of 13 ImageNet conv layers (AlexNet,
# VGG-16, ResNet-18 at 224x224: real layer sizes, ReLU-like random values at density 0.3) through the V100 model,
# for batch 1, 4 and 16, tiles 32x32 (the default), 64x64 and 128x128, the engine with 4 (default) and
# 16 tile buffers, and 16 engines (--units engine.count). Writes OUT/imagenet.md (one table row per layer and
# setting) and each run's stats.json.
#   scripts/imagenet-replay.sh [BUILD_DIR] [OUT_DIR]      (defaults: build, run/imagenet; about 5 minutes)
# Results and their reading: docs/reproduce-paper.md, "The units at ImageNet scale".
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
OUT=${2:-run/imagenet}
SAMPLE="$BUILD/tests/sptrace_sample"
SIM="$BUILD/bin/spartan-sim"
for f in "$SAMPLE" "$SIM"; do
  [ -x "$f" ] || { echo "imagenet-replay: error: $f not built (run make build first)" >&2; exit 2; }
done
mkdir -p "$OUT"
DENSITY=0.3
# Counter memory for the largest layer (VGG-16 conv1_2 at batch 16: 50176 tiles of 32x32) and a read buffer
# for one 128x128 F32 tile (64 KiB); every other unit setting is the default (docs/hw-units.md).
units() {  # units FILE TILE_BUFFERS ENGINES
  printf 'monitor:\n  counter_entries: 65536\nengine:\n  read_buffer_bytes: 65536\n  tile_buffers: %s\n  count: %s\n' "$2" "$3" >"$1"
}
units "$OUT/units-tb4.yaml" 4 1
units "$OUT/units-tb16.yaml" 16 1
units "$OUT/units-e16.yaml" 4 16
runs=()
for batch in 1 4 16; do
  trace="$OUT/imagenet-b$batch.sptrace"
  "$SAMPLE" --imagenet "$batch" "$DENSITY" "$trace"  # always rewritten (seconds): no stale trace is replayed
done
run() {  # run NAME BATCH TILE UNITS
  local dir="$OUT/$1"
  echo "imagenet-replay: $1 (batch $2, tile $3, $(basename "$4"))" >&2
  "$SIM" run -q --trace "$OUT/imagenet-b$2.sptrace" --out "$dir" --tile "$3" --units "$4"
  runs+=("$1:$2:$3:$(basename "$4" .yaml)")
}
run b1-t32 1 32x32 "$OUT/units-tb4.yaml"
run b4-t32 4 32x32 "$OUT/units-tb4.yaml"
run b16-t32 16 32x32 "$OUT/units-tb4.yaml"
run b16-t64 16 64x64 "$OUT/units-tb4.yaml"
run b16-t128 16 128x128 "$OUT/units-tb4.yaml"
run b16-t32-tb16 16 32x32 "$OUT/units-tb16.yaml"
run b16-t32-e16 16 32x32 "$OUT/units-e16.yaml"
/usr/bin/python3 - "$OUT" "${runs[@]}" <<'EOF'
import json, os, sys
out = sys.argv[1]
lines = ["# The units at ImageNet scale (scripts/imagenet-replay.sh)", "",
         "Synthetic activations (ReLU-like random values, density 0.3; conv1_1's input, the image, all non-zero) of real "
         "ImageNet conv layer sizes, replayed on the v100 preset. Times in us (simulated). Ratios are software / hardware.", ""]
for spec in sys.argv[2:]:
    name, batch, tile, units = spec.split(":")
    d = json.load(open(os.path.join(out, name, "stats.json")))
    ov = d["overall"]
    lines += [f"## {name}: batch {batch}, tile {tile}, {units}", "",
              "| layer | name | MB | tiles | profile SW | profile HW | ratio | convert SW | convert HW | ratio |",
              "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for L in d["layers"]:
        sw, hw = L["software"], L["hardware"]
        lines.append("| %d | %s%s | %.1f | %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.3f |" % (
            L["layer"], L["name"], "" if L["relu_input"] else " (image)", L["dense_bytes"] / 1e6, L["tiles"],
            sw["profile"]["time_ns"] / 1e3, hw["profile"]["time_ns"] / 1e3, L["profile_ratio"],
            sw["convert"]["time_ns"] / 1e3, hw["convert"]["time_ns"] / 1e3, L["convert_ratio"]))
    p, c = ov["profile"], ov["convert"]
    lines += ["", "total: profiling %.1f / %.1f us (%.2fx), conversion %.1f / %.1f us (%.3fx); checks passed: %s" % (
        p["sw_ns"] / 1e3, p["hw_ns"] / 1e3, p["ratio"], c["sw_ns"] / 1e3, c["hw_ns"] / 1e3,
        c["ratio"], d["checks"]["passed"]), ""]
tmp = os.path.join(out, "imagenet.md.tmp")
with open(tmp, "w") as f:
    f.write("\n".join(lines))
os.replace(tmp, os.path.join(out, "imagenet.md"))
print(os.path.join(out, "imagenet.md"))
EOF
