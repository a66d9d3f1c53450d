#!/bin/bash
# bench-gemm's rows, on small shapes (vgg-s b2c2, a few ms in all):
# - the header names the input distribution and the check; every row prints its measured zeros (within 2 points
#   of the nominal sparsity here), its repetitions and, in the Markdown, the check's verdict and the ratio's quartiles;
# - at 0 % the whole call runs one sgemm: its tiles column says so, its target column says "= sgemm", and the
#   summary counts it apart from the rows that ran the tile-sparse kernels;
# - the run ends with "check: every row's tile-sparse results ... agree" and exit 0; a 100 % row has no target;
# - with WRONG_SGEMM_SHIM preloaded (cblas_sgemm adds 1 to C[0]) the 97 % row prints WRONG, is left out of the
#   means and the target count, the 0 % row (one sgemm on both sides) stays ok, and the run exits 1;
# - --cache cold names the flush (--flush-mib) in the header and times one call per interval; --cache foo,
#   --flush-mib 0, --flush-mib without --cache cold and --calibrate --cache cold exit 2 with one line;
# - --payload-prefetch on marks a row whose wide gather prefetched its payload (ResNet-18 conv3_x forward) +pf in
#   the tiles column (AVX-512 hosts), off does not, and the header names the setting; --payload-prefetch foo exits 2;
# - --trace (the committed lenet5 sample) measures the trace's layers in the layout's forward op, with the
#   activation's own zeros, the first layer marked as the input image, and "= sgemm" rows counted.
# Usage: test_bench_rows.sh BENCH_GEMM WORKDIR WRONG_SGEMM_SHIM   (the sample trace is found beside this script)
set -euo pipefail
bench=$1 work=$2 shim=$3
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
grep -Eq '^\| vgg-s\.b2c2 \| fwd \| 49 \| 64 \| 576 \| 90 \| [0-9.]+ \| [0-9]+/[0-9]+/[0-9]+([+]pf)? \|( [0-9.]+ \|){3} [0-9.]+-[0-9.]+ \|' "$md" ||
  fail "Markdown: the 90 % forward row lacks its tiles or the ratio's quartiles"

run --filter vgg-s.b2c2 --pass fwd --sparsity 0.97,1 > "$out" || fail "97/100 %: exit $?"
# (An exit in a rule runs END, whose own exit status replaces it: the verdict is kept in a variable.)
awk '$1 == "vgg-s.b2c2" && $6 == 100 { found = 1; if ($NF != "-") bad = 1 } END { exit bad || !found }' "$out" ||
  fail "a 100 % row should have no target"

set +e
LD_PRELOAD=$shim run --filter vgg-s.b2c2 --pass fwd --sparsity 0,0.97 --md "$md" > "$out" 2> "$err"
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "wrong sgemm shim: exit $rc, expected 1"
grep -Eq '^vgg-s\.b2c2 +fwd .* 97 .*WRONG: kernel [0-9]+ (outside the bound|inexact)' "$out" || fail "shim: 97 % row not WRONG"
grep -Eq '^vgg-s\.b2c2 +fwd .* 0 .*= sgemm' "$out" || fail "shim: the 0 % row (sgemm on both sides) should stay ok"
grep -q 'targets met: 0 of 0 measurements' "$out" || fail "shim: the WRONG row was counted for the targets"
grep -q "^check: 1 rows' tile-sparse results differ from OpenBLAS" "$out" || fail "shim: no failing check line"
grep -Eq '97%: ' "$out" && fail "shim: the WRONG row entered the geometric means"
grep -q '| WRONG: kernel' "$md" || fail "shim: the Markdown does not show the WRONG row"

# The wide gather's payload prefetch (AVX-512 only): a forward row that runs the wide gather on a payload larger
# than L1d (ResNet-18 conv3_x at 97 %: about 200 KiB) is marked +pf in its tiles column, and not with
# --payload-prefetch off; the header names the setting.
for pf in on off; do
  run --filter resnet18.conv3_x --pass fwd --sparsity 0.97 --payload-prefetch $pf > "$out" ||
    fail "--payload-prefetch $pf: exit $?"
  grep -q "payload prefetch $pf (" "$out" || fail "--payload-prefetch $pf: the header does not name it"
  if grep -q 'isa avx512' "$out"; then
    want='^[0-9]+/[0-9]+/[0-9]+[+]pf$'; [ $pf = off ] && want='^[0-9]+/[0-9]+/[0-9]+$'
    awk -v w="$want" '$1 == "resnet18.conv3_x" && $2 == "fwd" { n++; if ($8 !~ w) bad = 1 } END { exit bad || n != 1 }' "$out" ||
      fail "--payload-prefetch $pf: tiles column $(awk '$1 == "resnet18.conv3_x" { print $8 }' "$out")"
  fi
done

run --filter vgg-s.b2c2 --pass fwd --sparsity 0.97 --cache cold --flush-mib 64 > "$out" || fail "--cache cold: exit $?"
grep -Eq 'cold caches: one call per timed interval, each after reading 64 MiB of other data \(the OS reports an L3 of' "$out" ||
  fail "--cache cold: header does not name the flush"
awk '$1 == "vgg-s.b2c2" && $2 == "fwd" { if ($(NF - 2) + 0 > 31) bad = 1; found = 1 } END { exit bad || !found }' "$out" ||
  fail "--cache cold: more than 31 repetitions, or no row"

bad() {  # bad OPTION-NAME ARGS...: exit 2, one line on stderr naming the option
  local name=$1
  shift
  set +e
  run --filter vgg-s.b2c2 "$@" > "$out" 2> "$err"
  local rc=$?
  set -e
  [ "$rc" -eq 2 ] || fail "$*: exit $rc, expected 2"
  [ "$(wc -l < "$err")" -eq 1 ] && grep -q -- "$name" "$err" || fail "$*: $(cat "$err")"
}
bad --cache --cache foo
bad --flush-mib --cache cold --flush-mib 0
bad --flush-mib --flush-mib 64
bad --cache --calibrate --cache cold
bad --payload-prefetch --payload-prefetch foo

if [ -f "$sample" ] && "$bench" --help | grep -q -- '--trace'; then
  for layout in train caffe; do
    run --trace "$sample" --filter nomatch-only-trace --layout "$layout" > "$out" 2> "$err" || fail "--trace ($layout): exit $?: $(cat "$err")"
    grep -Eq '^trace:conv1 .*\(act [0-9.]+ % zero; the input image, not a ReLU output\)' "$out" ||
      fail "--trace ($layout): conv1 not marked as the input image"
    grep -Eq '^trace:conv2 .*\(act [0-9.]+ % zero\)' "$out" || fail "--trace ($layout): no conv2 row with its act zeros"
    grep -q "^check: every row's tile-sparse results" "$out" || fail "--trace ($layout): check failed"
    grep -Eq '^trace:conv1 .* = sgemm \(act' "$out" || fail "--trace ($layout): conv1's sgemm row not marked"
    grep -Eq 'trace rows \(no target\): [1-9][0-9]* of 5 ran one sgemm' "$out" || fail "--trace ($layout): sgemm trace rows not counted"
  done
  # train: forward as op T T, M = output pixels; caffe: M = Cout.
  run --trace "$sample" --filter nomatch-only-trace --layout train > "$out"
  m_train=$(awk '$1 == "trace:conv2" { print $3 }' "$out")
  run --trace "$sample" --filter nomatch-only-trace --layout caffe > "$out"
  n_caffe=$(awk '$1 == "trace:conv2" { print $4 }' "$out")
  [ -n "$m_train" ] && [ "$m_train" = "$n_caffe" ] || fail "--trace: train M ($m_train) should be caffe N ($n_caffe)"
fi
echo "test_bench_rows: ok"
