#!/bin/bash
# bench-gemm's rows, on small shapes (vgg-s b2c2, a few ms in all):
# - the header names the input distribution and the check; every row prints its measured zeros (within 2 points
#   of the nominal sparsity here), its repetitions and, in the Markdown, the check's verdict and the ratio's quartiles;
# - at 0 % the whole call runs one sgemm: its tiles column says so, its target column says "= sgemm", and the
#   summary counts it apart from the rows that ran the tile-sparse kernels;
# - the run ends with "check: every row's tile-sparse results ... agree" and exit 0;
# - --cache cold names the flush in the header and times one call per interval; --cache foo exits 2;
# - --trace (the committed lenet5 sample) measures the trace's layers in the layout's forward op, with the
#   activation's own zeros and the first layer marked as the input image.
# Usage: test_bench_rows.sh BENCH_GEMM WORKDIR   (run from anywhere; the sample trace is found beside this script)
set -euo pipefail
bench=$1 work=$2
here=$(cd "$(dirname "$0")" && pwd)
sample=$here/../../../../traces/samples/tiny-lenet5.sptrace
mkdir -p "$work"
out=$work/rows.txt md=$work/rows.md err=$work/rows.err
fail() { echo "test_bench_rows: $*" >&2; [ -f "$out" ] && cat "$out" >&2; exit 1; }
run() { OPENBLAS_NUM_THREADS=1 "$bench" --min-time 0.001 "$@"; }

rm -f "$out" "$md"
run --filter vgg-s.b2c2 --all-passes --sparsity 0,0.9 --md "$md" > "$out" || fail "exit $? on a plain run"
grep -q 'zero with probability sp% per element, independently' "$out" || fail "header does not name the distribution"
grep -q 'checked against OpenBLAS' "$md" || fail "Markdown does not say the rows are checked"
# Rows: name pass M N K sp% zero% tiles ... reps target
awk '$1 == "vgg-s.b2c2" { n++; sp = $6; z = $7; d = sp - z; if (d < 0) d = -d; if (d > 2) bad = bad " " $2 "@" sp "%: zero% " z;
       if ($6 == 0 && ($8 != "sgemm" || $0 !~ /= sgemm/)) bad = bad " " $2 " at 0%: not marked sgemm";
       if ($6 == 90 && $8 == "sgemm") bad = bad " " $2 " at 90%: ran one sgemm" }
     END { if (n != 6) { print "expected 6 rows, got " n; exit 1 } if (bad != "") { print bad; exit 1 } }' "$out" ||
  fail "rows wrong: $(awk '$1 == "vgg-s.b2c2"' "$out" | head -1)"
grep -Eq 'targets met: [0-9]+ of 3 measurements that ran the tile-sparse kernels; 3 ran one sgemm' "$out" ||
  fail "summary does not count the sgemm rows apart"
grep -q "^check: every row's tile-sparse results (kernel and kernel+pack) agree with OpenBLAS" "$out" ||
  fail "no passing check line"
[ "$(grep -c '| ok (' "$md")" -eq 6 ] || fail "Markdown: expected 6 rows checked ok"
grep -Eq '^\| vgg-s\.b2c2 \| fwd \| 49 \| 64 \| 576 \| 90 \| [0-9.]+ \| [0-9]+/[0-9]+/[0-9]+ \|( [0-9.]+ \|){3} [0-9.]+-[0-9.]+ \|' "$md" ||
  fail "Markdown: the 90 % forward row lacks its tiles or the ratio's quartiles"

run --filter vgg-s.b2c2 --pass fwd --sparsity 0.97 --cache cold > "$out" || fail "--cache cold: exit $?"
grep -Eq 'cold caches: one call per timed interval, each after reading [0-9]+ MiB of other data' "$out" ||
  fail "--cache cold: header does not name the flush"
awk '$1 == "vgg-s.b2c2" && $2 == "fwd" { if ($(NF - 2) + 0 > 31) exit 1; found = 1 } END { exit !found }' "$out" ||
  fail "--cache cold: more than 31 repetitions, or no row"

set +e
run --filter vgg-s.b2c2 --cache foo > "$out" 2> "$err"
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "--cache foo: exit $rc, expected 2"
[ "$(wc -l < "$err")" -eq 1 ] && grep -q -- '--cache' "$err" || fail "--cache foo: $(cat "$err")"

if [ -f "$sample" ] && "$bench" --help | grep -q -- '--trace'; then
  for layout in train caffe; do
    run --trace "$sample" --filter nomatch-only-trace --layout "$layout" > "$out" 2> "$err" || fail "--trace ($layout): exit $?: $(cat "$err")"
    grep -Eq '^trace:conv1 .*\(act [0-9.]+ % zero; the input image, not a ReLU output\)' "$out" ||
      fail "--trace ($layout): conv1 not marked as the input image"
    grep -Eq '^trace:conv2 .*\(act [0-9.]+ % zero\)' "$out" || fail "--trace ($layout): no conv2 row with its act zeros"
    grep -q "^check: every row's tile-sparse results" "$out" || fail "--trace ($layout): check failed"
  done
  # train: forward as op T T, M = output pixels; caffe: M = Cout.
  run --trace "$sample" --filter nomatch-only-trace --layout train > "$out"
  m_train=$(awk '$1 == "trace:conv2" { print $3 }' "$out")
  run --trace "$sample" --filter nomatch-only-trace --layout caffe > "$out"
  n_caffe=$(awk '$1 == "trace:conv2" { print $4 }' "$out")
  [ -n "$m_train" ] && [ "$m_train" = "$n_caffe" ] || fail "--trace: train M ($m_train) should be caffe N ($n_caffe)"
fi
echo "test_bench_rows: ok"
