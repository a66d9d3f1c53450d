#!/bin/sh
# The units at ImageNet scale (docs/reproduce-paper.md, "The units at ImageNet scale"): the synthetic batch-1 trace
# of 13 ImageNet conv layers (sptrace_sample --imagenet 1 0.3) replayed on the v100 preset. Every functional check
# must pass on these sizes (up to 12.8 MB per activation), and the documented figures must hold: the profiling ratio
# grows with the activation (VGG-16 conv1_2, 12.8 MB: 4.46x; ResNet-18 conv5_x, 0.1 MB: about 1x, fixed costs) and
# the one compaction engine is much slower than the software conversion on large layers (conv1_2: 0.060x). A model
# change that moves these figures out of the bands below must update the doc's tables.
#   imagenet_scale_test.sh SPTRACE_SAMPLE SPARTAN_SIM PYTHON3 WORK_DIR
set -eu
sample=$1 sim=$2 py=$3 work=$4
rm -rf "$work"
mkdir -p "$work"
"$sample" --imagenet 1 0.3 "$work/imagenet-b1.sptrace"
"$sim" run -q --trace "$work/imagenet-b1.sptrace" --out "$work/sim"
"$py" - "$work/sim/stats.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["checks"]["passed"], "functional checks failed"
L = {l["name"]: l for l in d["layers"]}
assert len(L) == 13, sorted(L)
big, small = L["vgg16.conv1_2"], L["resnet18.conv5_x"]
assert big["dense_bytes"] == 64 * 224 * 224 * 4, big["dense_bytes"]
assert not L["vgg16.conv1_1"]["relu_input"] and big["relu_input"]
checks = [
    ("conv1_2 profile ratio in [3.5, 6]", 3.5 <= big["profile_ratio"] <= 6.0, big["profile_ratio"]),
    ("conv5_x profile ratio in [0.8, 1.3]", 0.8 <= small["profile_ratio"] <= 1.3, small["profile_ratio"]),
    ("conv1_2 convert ratio in [0.03, 0.12]", 0.03 <= big["convert_ratio"] <= 0.12, big["convert_ratio"]),
    ("conv5_x convert ratio > conv1_2's", small["convert_ratio"] > big["convert_ratio"], small["convert_ratio"]),
]
bad = [f"{what}: got {got:.4g}" for what, ok, got in checks if not ok]
assert not bad, "; ".join(bad)
print("ok: conv1_2 profile %.2fx convert %.3fx; conv5_x profile %.2fx convert %.3fx" % (
    big["profile_ratio"], big["convert_ratio"], small["profile_ratio"], small["convert_ratio"]))
PY
rm -rf "$work"
