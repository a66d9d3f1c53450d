#!/usr/bin/env bash
# Bundles the CUDA checks of a CUDA-enabled build into one archive that runs on a GPU machine that has the
# CUDA 13 runtime libraries (cudart, cuBLAS, cuSPARSE) but none of this project's build dependencies
# (OpenBLAS, Boost.Program_options, zlib, GoogleTest are linked or copied in): the CUDA tests
# (test_gemm_cuda, test_train_cuda), bench-gemm-cuda and spartan-train, the non-glibc shared libraries they
# load from outside the CUDA toolkit, Fashion-MNIST when installed, and the build's provenance.
# Run `scripts/gpu-check.sh` there (docs/reproduce-paper.md, "On a GPU machine without the build").
#
# Usage: scripts/gpu-pack.sh [BUILD_DIR=build] [PACK_DIR=.devpack]
# Writes PACK_DIR/spartan-gpu-pack.tar.xz (atomically). Exit 2 with one line when the build has no CUDA
# binaries or the archive would exceed 56 MiB (what a 64 MiB transfer leaves beside a ~6 MiB source tree).
set -euo pipefail
BUILD=${1:-build}
PACK=${2:-.devpack}
die() { echo "gpu-pack: error: $*" >&2; exit 2; }

BINS=("$BUILD/tests/test_gemm_cuda" "$BUILD/tests/test_train_cuda" "$BUILD/bin/bench-gemm-cuda"
      "$BUILD/bin/spartan-train")
for b in "${BINS[@]}"; do
  [ -x "$b" ] || die "$b not found: build with CUDA first (make build on a machine where nvcc is found)"
done
# (grep reads all of ldd's output: with `grep -q` under pipefail, ldd could die of SIGPIPE and fail the check)
ldd "$BUILD/bin/bench-gemm-cuda" | grep libcudart > /dev/null || die "$BUILD/bin/bench-gemm-cuda does not load libcudart"

STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/bin" "$STAGE/lib" "$STAGE/lib-fallback" "$STAGE/data"
cp "${BINS[@]}" "$STAGE/bin/"
# Shared libraries from outside the CUDA toolkit, except glibc's own (the dynamic loader, libc, libm, libdl,
# libpthread, librt must be the machine's; the archive needs a glibc at least as new as the build's).
for b in "${BINS[@]}"; do
  ldd "$b" | awk '$2 == "=>" && $3 ~ /^\// {print $3}'
done | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|ld-linux*) continue ;;
  esac
  case "$lib" in
    /usr/local/cuda*|*/cuda/*|*/nvidia/*) continue ;;  # the GPU machine's CUDA runtime is used
  esac
  case "$(basename "$lib")" in
    # The C++ and OpenMP runtimes go last on the search path (gpu-check.sh): a newer one on the GPU machine,
    # which its CUDA libraries may need, serves our binaries too; ours is there for a machine without one.
    libstdc++.so.*|libgcc_s.so.*|libgomp.so.*) cp -L "$lib" "$STAGE/lib-fallback/" ;;
    *) cp -L "$lib" "$STAGE/lib/" ;;
  esac
done
if [ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
  cp -r /usr/share/datasets/fashion-mnist "$STAGE/data/"
fi
{
  echo "packed_utc $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "source_commit $(git -C "$(dirname "$0")/.." rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
  echo "glibc $(ldd --version | head -1)"
  for b in "${BINS[@]}"; do echo "bin $(basename "$b") $(sha256sum "$b" | cut -c1-16)"; done
  echo "cuda_libs_needed $(ldd "${BINS[@]}" | awk '$3 ~ /cuda/ {print $1}' | sort -u | tr '\n' ' ')"
} > "$STAGE/MANIFEST"

mkdir -p "$PACK"
# (mktemp: a new file of a name nobody could plant a link at; the archive is renamed over the target once whole)
tmp=$(mktemp "$PACK/.spartan-gpu-pack.tar.xz.tmp.XXXXXX") || die "cannot create a temporary file in $PACK"
trap 'rm -rf "$STAGE" "$tmp"' EXIT
tar -C "$STAGE" -cf - bin lib lib-fallback data MANIFEST | xz -T0 -3 > "$tmp"
size=$(stat -c %s "$tmp")
if [ "$size" -gt $((56 * 1024 * 1024)) ]; then
  rm -f "$tmp"
  die "archive of $size bytes exceeds 56 MiB"
fi
chmod 644 "$tmp"  # (mktemp made it 0600)
mv -f "$tmp" "$PACK/spartan-gpu-pack.tar.xz"
echo "gpu-pack: $PACK/spartan-gpu-pack.tar.xz ($((size / 1024)) KiB): $(ls "$STAGE/lib" "$STAGE/lib-fallback" | grep -c '\.so') libraries, data: $(ls "$STAGE/data" | tr '\n' ' ')"
