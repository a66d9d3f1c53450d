#!/usr/bin/env bash
# Runs every libFuzzer target listed in BUILD/fuzz_targets.txt for SECONDS each (`make fuzz`; issue 12).
# Usage: scripts/run-fuzz.sh BUILD_DIR SECONDS   (env FUZZ_MAX_LEN: largest generated input, default 4096 bytes;
#        seeds above it are truncated when loaded, so the trace reader fuzzes from its ~2 KB micro seed;
#        env FUZZ_RUNS: stop a target after this many executions, whichever of the two limits comes first)
# Each target starts from a copy of its seed corpus (the committed corpus is not modified); crashes are
# written to BUILD_DIR/fuzz-out/<target>/ and the run fails. Summary: BUILD_DIR/fuzz-out/summary.txt.
set -uo pipefail
build=${1:?build dir}; seconds=${2:-60}
out="$build/fuzz-out"; mkdir -p "$out"; : > "$out/summary.txt"
status=0
while read -r name corpus; do
  [ -n "$name" ] || continue
  exe="$build/bin/$name"
  [ -x "$exe" ] || { echo "$name: not built" | tee -a "$out/summary.txt"; status=1; continue; }
  work="$out/$name"; rm -rf "$work"; mkdir -p "$work/corpus" "$work/artifacts"
  [ -d "$corpus" ] && cp -r "$corpus"/. "$work/corpus/"
  # Per-target extra libFuzzer flags: <module>/fuzz/<target>.options (one flag per line, # comments).
  extra=()
  opts="$(dirname "$(dirname "$corpus")")/$name.options"
  [ -f "$opts" ] && mapfile -t extra < <(grep -v '^[[:space:]]*\(#\|$\)' "$opts")
  echo "== $name: ${seconds}s${FUZZ_RUNS:+ or $FUZZ_RUNS executions}${extra[*]:+ (${extra[*]})}"
  asan="detect_stack_use_after_return=0"  # -detect_leaks=0 must also silence LSan's report at exit
  [[ " ${extra[*]} " == *" -detect_leaks=0 "* ]] && asan="$asan:detect_leaks=0"
  SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 ASAN_OPTIONS="$asan" UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1" \
    "$exe" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len="${FUZZ_MAX_LEN:-4096}" ${FUZZ_RUNS:+-runs="$FUZZ_RUNS"} -print_final_stats=1 "${extra[@]}" \
    -artifact_prefix="$work/artifacts/" "$work/corpus" > "$work/log.txt" 2>&1
  rc=$?
  execs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$work/log.txt" | grep -Eo '[0-9]+$' | tail -1)
  crashes=$(ls "$work/artifacts" | wc -l)
  line="$name: rc=$rc executions=${execs:-?} artifacts=$crashes"
  echo "$line" | tee -a "$out/summary.txt"
  if [ "$rc" != 0 ] || [ "$crashes" != 0 ]; then status=1; tail -30 "$work/log.txt"; fi
done < "$build/fuzz_targets.txt"
exit $status
