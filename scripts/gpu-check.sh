#!/usr/bin/env bash
# The GPU checks in one short run, on a machine with an NVIDIA GPU and the CUDA 13 runtime, from the archive
# scripts/gpu-pack.sh made on the build machine (no build here): the CUDA correctness tests (tile-sparse GEMM vs
# the OpenBLAS reference; CPU vs CUDA training), bench-gemm-cuda (cuBLAS SGEMM vs the CUDA tile-sparse GEMM vs
# cuSPARSE SpMM) and a short device-resident training run. Each step has its own time limit, so the whole run
# ends within ~9 minutes; a failing step does not stop the later ones.
#
# Usage: scripts/gpu-check.sh [PACK_DIR=.devpack]   (results in $OUT, else ./gpu-check-out)
# Writes at most 7 files: summary.txt (one line per step: name, exit status, seconds), env.txt (GPU, driver,
# pack manifest), log.txt (every step's output), test_gemm_cuda.json and test_train_cuda.json (GoogleTest
# reports), bench-gemm-cuda.txt, train-cuda.json. Exit status: 0 when every step passed, 1 when one failed,
# 2 when the pack is missing or cannot run here (a library not found).
set -uo pipefail
PACK=${1:-.devpack}
OUT=${OUT:-$PWD/gpu-check-out}
ARCHIVE="$PACK/spartan-gpu-pack.tar.xz"
[ -f "$ARCHIVE" ] || { echo "gpu-check: error: $ARCHIVE not found (run scripts/gpu-pack.sh on the build machine)" >&2; exit 2; }
mkdir -p "$OUT"
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
tar -xJf "$ARCHIVE" -C "$W" || { echo "gpu-check: error: cannot unpack $ARCHIVE" >&2; exit 2; }

# The pack's libraries first, then the machine's CUDA libraries wherever the toolkit or its wheels put them.
libpath="$W/lib"
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib \
         /usr/local/nvidia/lib64 /usr/lib/x86_64-linux-gnu; do
  [ -d "$d" ] && libpath="$libpath:$d"
done
for d in $(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, s, "lib") for p in nvidia.__path__ for s in os.listdir(p)))' 2>/dev/null); do
  [ -d "$d" ] && libpath="$libpath:$d"
done
libpath="$libpath:$W/lib-fallback"  # libstdc++, libgcc_s, libgomp: the machine's own when it has them
export LD_LIBRARY_PATH="$libpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

{
  echo "date_utc $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>/dev/null ||
    echo "nvidia-smi: not available"
  nproc | sed 's/^/cpus /'
  cat "$W/MANIFEST"
} > "$OUT/env.txt"
missing=$(for b in "$W"/bin/*; do ldd "$b" | awk -v b="$(basename "$b")" '/not found/ {print b ": " $1}'; done)
if [ -n "$missing" ]; then
  echo "$missing" >> "$OUT/env.txt"
  echo "gpu-check: error: libraries not found: $(echo "$missing" | tr '\n' ' ')" >&2
  exit 2
fi
# The tests read Fashion-MNIST from its Debian path (else they use a synthetic set); spartan-train gets --data.
DATA="$W/data/fashion-mnist"
if [ -d "$DATA" ] && [ ! -e /usr/share/datasets/fashion-mnist ] && mkdir -p /usr/share/datasets 2>/dev/null; then
  ln -s "$DATA" /usr/share/datasets/fashion-mnist && echo "dataset linked from the pack" >> "$OUT/env.txt"
fi

: > "$OUT/summary.txt"
failed=0
step() {  # step NAME LIMIT_S COMMAND...
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS rc
  echo "=== $name (limit ${limit}s): $*" >> "$OUT/log.txt"
  timeout "$limit" "$@" >> "$OUT/log.txt" 2>&1
  rc=$?
  echo "$name rc=$rc seconds=$((SECONDS - t0))" | tee -a "$OUT/summary.txt"
  [ "$rc" -eq 0 ] || failed=1
}
B="$W/bin"
step test_gemm_cuda 120 "$B/test_gemm_cuda" --gtest_output=json:"$OUT/test_gemm_cuda.json"
step bench_gemm_cuda 120 sh -c "'$B/bench-gemm-cuda' --reps 5 > '$OUT/bench-gemm-cuda.txt' 2>&1"
step test_train_cuda 240 "$B/test_train_cuda" --gtest_output=json:"$OUT/test_train_cuda.json"
train_data=()
[ -d "$DATA" ] && train_data=(--data "$DATA")
step train_vgg_s_cuda 60 "$B/spartan-train" --model vgg-s --device cuda --iterations 200 --test-limit 2000 \
  "${train_data[@]}" --out-json "$OUT/train-cuda.json"
# A test binary that skipped everything exits 0: say so, since then nothing ran on a GPU.
if grep -qi '"result": *"skipped"' "$OUT"/test_*cuda.json 2>/dev/null || ! nvidia-smi -L > /dev/null 2>&1; then
  echo "note: no usable GPU or skipped tests: see log.txt" | tee -a "$OUT/summary.txt"
fi
exit "$failed"
