#!/bin/bash
# bench-gemm --vector-cost on one small shape (vgg-s b2c2 forward) at 0 % and 97 % sparsity: the header line
# names both gather costs (or n/a without AVX-512F); the 97 % row ends with a positive ns/vec consistent with its
# kernel time over nnz x ceil(N / 16) vectors (the bench does not print nnz; about 3 % of M x K at 97 %, so the
# nnz implied by kernel time / (ns/vec x 4) must lie between 1 % and 10 % of M x K); the 0 % row (one sgemm:
# DENSE tiles) ends with "-"; the Markdown table carries the same column.
# Usage: test_bench_vector_cost.sh BENCH_GEMM WORKDIR
set -euo pipefail
bench=$1 work=$2
mkdir -p "$work"
out=$work/vector_cost.txt md=$work/vector_cost.md
rm -f "$out" "$md"
OPENBLAS_NUM_THREADS=1 "$bench" --filter vgg-s.b2c2 --pass fwd --sparsity 0,0.97 --min-time 0.001 --vector-cost \
  --md "$md" > "$out"
fail() { echo "test_bench_vector_cost: $*" >&2; cat "$out" >&2; exit 1; }
grep -Eq '^vector cost: ([0-9]+\.[0-9]+ ns \(L1, 32 KiB\) / [0-9]+\.[0-9]+ ns \(L2, 512 KiB\)|n/a)' "$out" ||
  fail "no vector-cost header line"
grep -Eq 'target +ns/vec$' "$out" || fail "no ns/vec column header"
row0=$(grep -E '^vgg-s\.b2c2 +fwd .* 0 ' "$out" | head -1)
row97=$(grep -E '^vgg-s\.b2c2 +fwd .* 97 ' "$out" | head -1)
[ -n "$row0" ] && [ -n "$row97" ] || fail "missing 0 % or 97 % row"
[ "$(awk '{print $NF}' <<< "$row0")" = "-" ] || fail "0 % row (DENSE tiles) should print '-'"
# 97 %: M 49, N 64, K 576; kern_ms is field 10. ns/vec x nnz x 4 vectors = kernel ns, with nnz in [1 %, 10 %] of M x K.
awk -v m=49 -v k=576 '{ nsv = $NF; kern_ns = $10 * 1e6; if (!(nsv > 0)) exit 1;
  nnz = kern_ns / (nsv * 4); if (kern_ns > 0 && (nnz < 0.01 * m * k || nnz > 0.10 * m * k)) exit 1 }' <<< "$row97" ||
  fail "97 % row: ns/vec not positive or inconsistent with the kernel time: $row97"
grep -q '| kernel ns per vector |' "$md" || fail "Markdown table without the ns/vec column"
grep -Eq '^\| vgg-s\.b2c2 \| fwd \|.* \| [0-9]+\.[0-9]+ \|$' "$md" || fail "Markdown 97 % row without an ns/vec value"
echo "test_bench_vector_cost: ok"
