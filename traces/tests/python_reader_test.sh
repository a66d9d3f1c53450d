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

# Its output piped into a reader that has already gone (`| head` after its lines): ended by SIGPIPE, as cat is,
# with nothing on stderr (it printed a BrokenPipeError traceback).
"$PYTHON" - "$PYTHON" "$READER" "$WORK/golden.sptrace" <<'PY'
import os, signal, subprocess, sys
r, w = os.pipe()
os.close(r)
p = subprocess.run(sys.argv[1:], stdout=w, stderr=subprocess.PIPE)
if p.returncode != -signal.SIGPIPE or p.stderr:
    sys.exit(f"python reader into a closed pipe: expected SIGPIPE and no stderr, got {p.returncode}: {p.stderr.decode()}")
print("python reader into a closed pipe: ended by SIGPIPE, stderr empty")
PY

# Bad input to --compare / --check-sparsity: one line on stderr, exit 2, no Python traceback.
expect_one_line_exit2() {
  what="$1"; shift
  set +e
  "$@" > "$WORK/out.txt" 2> "$WORK/err.txt"
  rc=$?
  set -e
  lines=$(wc -l < "$WORK/err.txt")
  if [ "$rc" -ne 2 ] || [ "$lines" -ne 1 ] || grep -q Traceback "$WORK/err.txt"; then
    echo "python reader, $what: expected one stderr line and exit 2, got exit $rc and:"; cat "$WORK/err.txt"; exit 1
  fi
  echo "python reader, $what: $(cat "$WORK/err.txt")"
}
expect_one_line_exit2 "--compare missing file" "$PYTHON" "$READER" --compare "$WORK/nonexistent.json" "$WORK/golden.sptrace"
printf '{bad' > "$WORK/bad.json"
expect_one_line_exit2 "--compare invalid JSON" "$PYTHON" "$READER" --compare "$WORK/bad.json" "$WORK/golden.sptrace"
printf '[1, 2]' > "$WORK/list.json"
expect_one_line_exit2 "--compare JSON of the wrong shape" "$PYTHON" "$READER" --compare "$WORK/list.json" "$WORK/golden.sptrace"
printf '{"metadata": {}, "tensors": {}}' > "$WORK/other.json"
expect_one_line_exit2 "--compare mismatch" "$PYTHON" "$READER" --compare "$WORK/other.json" "$WORK/golden.sptrace"
# A sparsity metadata value that disagrees with the tensors (built from the committed sample).
"$PYTHON" - "$SAMPLE" "$WORK/bad_sparsity.sptrace" "$WORK/nul_padded.sptrace" <<'PY'
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8 + n])
sp = json.loads(h["__metadata__"]["sparsity"])
sp[0]["act_density"][0] = 0.9
h["__metadata__"]["sparsity"] = json.dumps(sp)
hb = json.dumps(h).encode()
hb += b" " * ((-len(hb)) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(hb)) + hb + b[8 + n:])
# The same header padded with NUL bytes instead of spaces: both readers must refuse it (trace-format.md 1.2).
hb = b[8:8 + n].rstrip(b" ") + b"\0" * 8
open(sys.argv[3], "wb").write(struct.pack("<Q", len(hb)) + hb + b[8 + n:])
PY
expect_one_line_exit2 "--check-sparsity mismatch" "$PYTHON" "$READER" --check-sparsity "$WORK/bad_sparsity.sptrace"
expect_one_line_exit2 "NUL-padded header" "$PYTHON" "$READER" "$WORK/nul_padded.sptrace"
expect_one_line_exit2 "spartan-trace check, NUL-padded header" "$CLI" check "$WORK/nul_padded.sptrace"
# Names both readers must quote on one line, each in a one-tensor file: a lone surrogate escape (json.loads
# accepts it, UTF-8 cannot hold it; the Python reader crashed with a UnicodeEncodeError traceback printing the
# name) and a newline with an escape sequence (quoted escaped).
"$PYTHON" - "$WORK/surrogate.sptrace" "$WORK/ctrl_name.sptrace" <<'PY'
import struct, sys
for path, name, dtype in [(sys.argv[1], b"a\\ud800b", b"U8"), (sys.argv[2], b"a\\nb\\u001b[2J", b"Q8")]:
    hb = b'{"' + name + b'":{"dtype":"' + dtype + b'","shape":[1],"data_offsets":[0,1]}}'
    hb += b" " * ((-len(hb)) % 8)
    open(path, "wb").write(struct.pack("<Q", len(hb)) + hb + b"\x01")
PY
expect_one_line_exit2 "lone surrogate in a name" "$PYTHON" "$READER" "$WORK/surrogate.sptrace"
expect_one_line_exit2 "spartan-trace check, lone surrogate in a name" "$CLI" check "$WORK/surrogate.sptrace"
expect_one_line_exit2 "control characters in a name" "$PYTHON" "$READER" "$WORK/ctrl_name.sptrace"
expect_one_line_exit2 "spartan-trace check, control characters in a name" "$CLI" check "$WORK/ctrl_name.sptrace"
# A FIFO with no writer: refused at once as not a regular file (the open blocked forever before; `timeout`
# turns a hang into exit 124, which fails the check).
rm -f "$WORK/reader.fifo"
mkfifo "$WORK/reader.fifo"
expect_one_line_exit2 "a FIFO" timeout 20 "$PYTHON" "$READER" "$WORK/reader.fifo"
expect_one_line_exit2 "spartan-trace check, a FIFO" timeout 20 "$CLI" check "$WORK/reader.fifo"
# Header errors: both readers name the same byte offset, that of the offending name in the header (the Python
# reader said 8, the header's start, for every entry: review finding 86). An unsupported format version after
# a tensor entry, and a bad dtype of the second tensor.
"$PYTHON" - "$WORK/bad_version.sptrace" "$WORK/bad_dtype.sptrace" <<'PY'
import struct, sys
for path, hb in [(sys.argv[1], b'{"t":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"__metadata__":{"format_version":"99"}}'),
                 (sys.argv[2], b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"bb":{"dtype":"X9","shape":[0],"data_offsets":[1,1]}}')]:
    hb += b" " * ((-len(hb)) % 8)
    open(path, "wb").write(struct.pack("<Q", len(hb)) + hb + b"\x01")
PY
# both_refuse_at_same_offset NAME: $WORK/NAME.sptrace refused by both readers (one line, exit 2), at the same offset.
both_refuse_at_same_offset() {
  f="$1"
  expect_one_line_exit2 "$f" "$PYTHON" "$READER" "$WORK/$f.sptrace"
  py=$(grep -o 'byte offset [0-9]*' "$WORK/err.txt")
  expect_one_line_exit2 "spartan-trace check, $f" "$CLI" check "$WORK/$f.sptrace"
  cpp=$(grep -o 'byte offset [0-9]*' "$WORK/err.txt")
  if [ -z "$py" ] || [ "$py" != "$cpp" ]; then echo "$f: the readers name different offsets: python '$py', C++ '$cpp'"; exit 1; fi
}
for f in bad_version bad_dtype; do both_refuse_at_same_offset "$f"; done
# Review finding 106: a duplicate key named at the same offset by both readers (the Python reader said 8); a
# shape whose product overflows beside a 0 refused by both, wherever the 0 stands (C++ refused only a trailing
# 0, Python neither); a header over the 100,000,000-byte limit refused by both before it is parsed (a sparse
# file: no disk space written).
"$PYTHON" - "$WORK/dup_key.sptrace" "$WORK/ovf_zero_last.sptrace" "$WORK/ovf_zero_first.sptrace" "$WORK/huge_header.sptrace" <<'PY'
import os, struct, sys
big = b"4611686018427387904"
for path, hb in [(sys.argv[1], b'{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}'),
                 (sys.argv[2], b'{"a":{"dtype":"F32","shape":[' + big + b',' + big + b',0],"data_offsets":[0,0]}}'),
                 (sys.argv[3], b'{"a":{"dtype":"F32","shape":[0,' + big + b',' + big + b'],"data_offsets":[0,0]}}')]:
    hb += b" " * ((-len(hb)) % 8)
    open(path, "wb").write(struct.pack("<Q", len(hb)) + hb + (b"\x01" if path == sys.argv[1] else b""))
n = 100000001
with open(sys.argv[4], "wb") as f:
    f.write(struct.pack("<Q", n) + b"{")
    f.truncate(8 + n)
PY
for f in dup_key ovf_zero_last ovf_zero_first huge_header; do both_refuse_at_same_offset "$f"; done
grep -q "byte limit" "$WORK/err.txt" || { echo "huge_header: no 'byte limit' in: $(cat "$WORK/err.txt")"; exit 1; }
rm -f "$WORK/huge_header.sptrace"
# An operating-system error names the file first (a seek's EINVAL on a /proc file carried no name: finding 106).
expect_one_line_exit2 "a /proc file" "$PYTHON" "$READER" /proc/self/status
grep -q "error: /proc/self/status: " "$WORK/err.txt" || { echo "/proc file: the message does not name it: $(cat "$WORK/err.txt")"; exit 1; }
# Found by the differential fuzz of the two readers (trace.reader_differential_fuzz): a data offset of 2^64 or
# more is no 64-bit integer. The C++ reader says so at the tensor's name; the Python reader called it a range
# outside the data section, at a data offset.
"$PYTHON" - "$WORK" <<'PY'
import struct, sys
for name, offsets in [("offset_2pow64", b"[0,18446744073709551616]"),
                      ("offset_2pow70", b"[1180591620717411303424,1180591620717411303425]")]:
    hb = b'{"a":{"dtype":"U8","shape":[1],"data_offsets":' + offsets + b'}}'
    hb += b" " * ((-len(hb)) % 8)
    open(f"{sys.argv[1]}/{name}.sptrace", "wb").write(struct.pack("<Q", len(hb)) + hb + b"\x01")
PY
for f in offset_2pow64 offset_2pow70; do both_refuse_at_same_offset "$f"; done
grep -q "'data_offsets' must be non-negative integers" "$WORK/err.txt" \
  || { echo "offset_2pow70: $(cat "$WORK/err.txt")"; exit 1; }
# Also found by the differential fuzz: NaN / Infinity (not JSON) and numbers beyond the range of a double (1e400,
# a 400-digit integer) are invalid JSON to the C++ reader's parser; the Python reader took them as numbers and
# refused the entry instead.
"$PYTHON" - "$WORK" <<'PY'
import struct, sys
for name, shape, offsets in [("shape_nan", b"[NaN]", b"[0,1]"), ("offset_infinity", b"[1]", b"[0,Infinity]"),
                             ("offset_minus_infinity", b"[1]", b"[-Infinity,1]"), ("shape_1e400", b"[1e400]", b"[0,1]"),
                             ("shape_400_digits", b"[" + b"1" * 400 + b"]", b"[0,1]")]:
    hb = b'{"a":{"dtype":"U8","shape":' + shape + b',"data_offsets":' + offsets + b'}}'
    hb += b" " * ((-len(hb)) % 8)
    open(f"{sys.argv[1]}/{name}.sptrace", "wb").write(struct.pack("<Q", len(hb)) + hb + b"\x01")
PY
# both_refuse_as_invalid_json NAME: $WORK/NAME.sptrace refused by both readers (one line, exit 2) as invalid JSON.
both_refuse_as_invalid_json() {
  expect_one_line_exit2 "$1" "$PYTHON" "$READER" "$WORK/$1.sptrace"
  grep -q ": header: invalid JSON: " "$WORK/err.txt" || { echo "$1: python: not 'header: invalid JSON'"; exit 1; }
  expect_one_line_exit2 "spartan-trace check, $1" "$CLI" check "$WORK/$1.sptrace"
  grep -q ": header: invalid JSON: " "$WORK/err.txt" || { echo "$1: C++: not 'header: invalid JSON'"; exit 1; }
}
for f in shape_nan offset_infinity offset_minus_infinity shape_1e400 shape_400_digits; do
  both_refuse_as_invalid_json "$f"
done
# Also found by the differential fuzz: a header nested deeper than the json module's recursion limit is valid JSON
# (the C++ reader names the entry that holds it, or a duplicate key inside it); the Python reader called it invalid
# JSON at the header's start. A lone surrogate or a syntax error deep inside is invalid JSON to both.
"$PYTHON" - "$WORK" <<'PY'
import struct, sys
d = 5000
deep_meta = lambda inner: b'{"__metadata__":{"k":' + b'{"x":' * d + inner + b"}" * d + b"}}"
entry = lambda shape: b'{"a":{"dtype":"U8","shape":' + shape + b',"data_offsets":[0,1]}}'
for name, hb, data in [("deep_shape", entry(b"[" * d + b"]" * d), b"\x01"), ("deep_object", deep_meta(b"1"), b""),
                       ("deep_duplicate", deep_meta(b'{"dd":1,"dd":2}'), b""),
                       ("deep_surrogate", entry(b"[" * d + b'"\\ud800"' + b"]" * d), b"\x01"),
                       ("deep_syntax_error", entry(b"[" * d + b"1,]" + b"]" * (d - 1)), b"\x01")]:
    hb += b" " * ((-len(hb)) % 8)
    open(f"{sys.argv[1]}/{name}.sptrace", "wb").write(struct.pack("<Q", len(hb)) + hb + data)
PY
for f in deep_shape deep_object deep_duplicate; do both_refuse_at_same_offset "$f"; done
for f in deep_surrogate deep_syntax_error; do both_refuse_as_invalid_json "$f"; done
# The Python reader's parser for deep headers (read_sptrace._loads_deep) against json.loads on random documents
# nested up to 12 levels: the same values (to the depth it keeps), duplicate keys and refusals.
"$PYTHON" - "$READER" <<'PY'
import importlib.util, json, random, sys
spec = importlib.util.spec_from_file_location("read_sptrace", sys.argv[1])
r = importlib.util.module_from_spec(spec)
spec.loader.exec_module(r)

def cut(v, depth=1):  # json.loads's value with the containers deeper than _KEPT_LEVELS emptied
    if depth > r._KEPT_LEVELS and isinstance(v, (dict, list)):
        return type(v)()
    if isinstance(v, dict):
        return {k: cut(x, depth + 1) for k, x in v.items()}
    if isinstance(v, list):
        return [cut(x, depth + 1) for x in v]
    return v

def outcome(parse, s):
    try:
        v = parse(s)
        return ("invalid",) if r._lone_surrogate(v) is not None else ("ok", cut(v))
    except r._DuplicateKey as e:
        return ("duplicate", e.key)
    except ValueError:
        return ("invalid",)

rng = random.Random(7)
def doc(depth):
    x = rng.random()
    if depth > 11 or x < 0.3:
        return rng.choice(['1', '"a"', '"\\ud800"', 'null', '-0', '2.5', '1e400', 'NaN', '3', 'true', '"\\u00e9"'])
    if x < 0.65:
        return "[" + ", ".join(doc(depth + 1) for _ in range(rng.randrange(4))) + "]"
    return "{" + ",".join('"%s" : %s' % (rng.choice("abc"), doc(depth + 1)) for _ in range(rng.randrange(4))) + "}"
ref = lambda s: json.loads(s, object_pairs_hook=r._no_duplicates, parse_constant=r._no_constant,
                           parse_float=r._finite_float, parse_int=r._double_range_int)
kinds = {}
for n in range(20000):
    s = doc(0)
    if n % 5 == 0:  # a syntax error somewhere
        j = rng.randrange(len(s))
        s = s[:j] + rng.choice([",", "]", "}", "x", ""]) + s[j + 1:]
    want, got = outcome(ref, s), outcome(r._loads_deep, s)
    if want != got:
        sys.exit(f"_loads_deep differs from json.loads on {s[:200]!r}: {got} != {want}")
    kinds[want[0]] = kinds.get(want[0], 0) + 1
print(f"_loads_deep agrees with json.loads on 20000 documents: {kinds}")
PY
# Also found by the differential fuzz (counting lines as str.splitlines does): the Python reader printed a name's
# U+2028, U+0085 (NEL) and bidi controls raw, a second line in a terminal or a script; both readers now escape them
# as error.h's one_line does, and the two messages are the same after the tool's name.
"$PYTHON" - "$WORK/line_breaks.sptrace" <<'PY'
import struct, sys
hb = '{"a\u2028b\u0085c\u202ed\u2029":{"dtype":"Q8","shape":[1],"data_offsets":[0,1]}}'.encode()
hb += b" " * ((-len(hb)) % 8)
open(sys.argv[1], "wb").write(struct.pack("<Q", len(hb)) + hb + b"\x01")
PY
one_splitlines_line() {
  "$PYTHON" -c 'import sys; t = open(sys.argv[1], encoding="utf-8").read(); sys.exit(len(t.splitlines()) != 1)' \
    "$WORK/err.txt" || { echo "$1: not one line for str.splitlines: $(cat "$WORK/err.txt")"; exit 1; }
}
expect_one_line_exit2 "line breaks in a name" "$PYTHON" "$READER" "$WORK/line_breaks.sptrace"
one_splitlines_line "python reader, line breaks in a name"
py=$(sed 's/^read_sptrace.py: //' "$WORK/err.txt")
expect_one_line_exit2 "spartan-trace check, line breaks in a name" "$CLI" check "$WORK/line_breaks.sptrace"
one_splitlines_line "spartan-trace check, line breaks in a name"
cpp=$(sed 's/^spartan-trace: //' "$WORK/err.txt")
[ "$py" = "$cpp" ] || { echo "line breaks in a name: python '$py', C++ '$cpp'"; exit 1; }
