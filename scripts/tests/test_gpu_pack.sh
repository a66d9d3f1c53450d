#!/usr/bin/env bash
# scripts/gpu-pack.sh + scripts/gpu-check.sh on the build machine (CTest gpu_pack.dry_run, CUDA builds only):
# the archive holds the four binaries, resolves every non-CUDA, non-glibc library from its own lib/, and the
# check runs all four steps and reports them; without a GPU it exits 1 with the "no usable GPU" note (the tests
# skip, bench-gemm-cuda and spartan-train --device cuda refuse with exit 2); a missing pack is exit 2, one line.
# Usage: test_gpu_pack.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
SRC=$1
BUILD=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

bash "$SRC/scripts/gpu-pack.sh" "$BUILD" "$T/pack" > "$T/pack.log"
A="$T/pack/spartan-gpu-pack.tar.xz"
[ -f "$A" ] || fail "no archive"
[ -z "$(ls -A "$T/pack" | grep tmp)" ] || fail "temporary file left in the pack directory"
mkdir "$T/x" && tar -xJf "$A" -C "$T/x"
for b in test_gemm_cuda test_train_cuda bench-gemm-cuda spartan-train; do
  [ -x "$T/x/bin/$b" ] || fail "bin/$b missing from the archive"
  # Every library the binary loads from outside the CUDA toolkit and glibc comes from the pack's lib/.
  LD_LIBRARY_PATH="$T/x/lib:$T/x/lib-fallback" ldd "$T/x/bin/$b" | awk '$2 == "=>" {print $1, $3}' | while read -r name path; do
    case "$name" in libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|libcu*|libnvJitLink*) continue ;; esac
    case "$path" in "$T/x/lib/"*|"$T/x/lib-fallback/"*) ;; *) fail "$b: $name resolved to $path, not the pack" ;; esac
  done
done
grep -q '^source_commit ' "$T/x/MANIFEST" || fail "MANIFEST without the source commit"

rc=0
OUT="$T/out" bash "$SRC/scripts/gpu-check.sh" "$T/pack" > "$T/check.log" 2>&1 || rc=$?
for s in test_gemm_cuda bench_gemm_cuda test_train_cuda train_vgg_s_cuda; do
  grep -q "^$s rc=[0-9]* seconds=" "$T/out/summary.txt" || fail "step $s not in summary.txt"
done
[ "$(ls "$T/out" | wc -l)" -le 8 ] || fail "more than 8 result files"
if nvidia-smi -L > /dev/null 2>&1; then
  [ "$rc" -eq 0 ] || fail "gpu-check exit $rc on a machine with a GPU: $(cat "$T/out/summary.txt")"
else
  [ "$rc" -eq 1 ] || fail "gpu-check exit $rc without a GPU (expected 1)"
  grep -q "no usable GPU" "$T/out/summary.txt" || fail "no 'no usable GPU' note"
  grep -q '"result": "SKIPPED"' "$T/out/test_train_cuda.json" || fail "train tests did not report skips"
  grep -q "^train_vgg_s_cuda rc=2 " "$T/out/summary.txt" || fail "spartan-train --device cuda without a GPU: not exit 2"
fi
rc=0
bash "$SRC/scripts/gpu-check.sh" "$T/none" > /dev/null 2> "$T/err" || rc=$?
[ "$rc" -eq 2 ] && [ "$(wc -l < "$T/err")" -eq 1 ] || fail "missing pack: exit $rc, $(wc -l < "$T/err") lines"
echo "ok: $(cat "$T/pack.log")"
