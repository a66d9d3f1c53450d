#!/bin/bash
# bench-gemm --min-interval-us: calls shorter than the interval are repeated back to back within one timed
# interval. On one small shape (vgg-s b2c2 forward at 97 %, calls of a few to a few tens of us):
# - the header line and the Markdown name the interval (default 50 us) or "one call per timed interval" (0);
# - with 20 ms intervals the run must take at least 7 repetitions x 4 timed functions x 20 ms of CPU time
#   (so >= 0.5 s of wall time), which one call per interval (about 1 ms in all) cannot;
# - a negative or non-numeric value exits 2 with a one-line error naming the option.
# Usage: test_bench_min_interval.sh BENCH_GEMM WORKDIR
set -euo pipefail
bench=$1 work=$2
mkdir -p "$work"
out=$work/min_interval.txt md=$work/min_interval.md err=$work/min_interval.err
fail() { echo "test_bench_min_interval: $*" >&2; [ -f "$out" ] && cat "$out" >&2; exit 1; }
run() { OPENBLAS_NUM_THREADS=1 "$bench" --filter vgg-s.b2c2 --pass fwd --sparsity 0.97 --min-time 0.001 "$@"; }

rm -f "$out" "$md"
run --md "$md" > "$out"
grep -q 'timed intervals >= 50 us (shorter calls repeated within one)' "$out" || fail "default: no 50 us in the header"
grep -q 'timed intervals >= 50 us' "$md" || fail "default: Markdown does not name the interval"
grep -Eq '^vgg-s\.b2c2 +fwd .* 97 ' "$out" || fail "default: no 97 % row"

run --min-interval-us 0 > "$out"
grep -q 'one call per timed interval' "$out" || fail "--min-interval-us 0: header should say one call per interval"
grep -Eq '^vgg-s\.b2c2 +fwd .* 97 ' "$out" || fail "--min-interval-us 0: no 97 % row"

t0=$(date +%s.%N)
run --min-interval-us 20000 > "$out"
t1=$(date +%s.%N)
grep -q 'timed intervals >= 20000 us' "$out" || fail "20000: header does not name the interval"
awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b - a >= 0.5) }' ||
  fail "20 ms intervals took $(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }') s: calls were not repeated"

for bad in -1 abc 2e6; do
  set +e
  run --min-interval-us "$bad" > "$out" 2> "$err"
  rc=$?
  set -e
  [ "$rc" -eq 2 ] || fail "--min-interval-us $bad: exit $rc, expected 2"
  [ "$(wc -l < "$err")" -eq 1 ] || fail "--min-interval-us $bad: expected a one-line error, got: $(cat "$err")"
  grep -q 'min-interval-us' "$err" || fail "--min-interval-us $bad: error does not name the option: $(cat "$err")"
done
echo "test_bench_min_interval: ok"
