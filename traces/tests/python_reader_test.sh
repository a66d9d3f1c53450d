#!/bin/sh
# The C++ writer writes a trace with every dtype (incl. NaN, -0.0, denormals); the stdlib+numpy
# Python reader must read the same bits and the same float32 values; spartan-trace must accept it.
set -eu
rm -rf "$WORK"
mkdir -p "$WORK"
"$GOLDEN" "$WORK/golden.sptrace" "$WORK/expected.json"
"$CLI" check "$WORK/golden.sptrace"
"$PYTHON" "$READER" --compare "$WORK/expected.json" "$WORK/golden.sptrace"
# The Python reader must also reject a corrupt file with exit 2.
head -c 100 "$WORK/golden.sptrace" > "$WORK/truncated.sptrace"
set +e
"$PYTHON" "$READER" "$WORK/truncated.sptrace" > "$WORK/out.txt" 2> "$WORK/err.txt"
rc=$?
set -e
if [ "$rc" -ne 2 ]; then echo "python reader: expected exit 2 on a truncated file, got $rc"; cat "$WORK/err.txt"; exit 1; fi
echo "python reader rejects truncated file: $(cat "$WORK/err.txt")"
