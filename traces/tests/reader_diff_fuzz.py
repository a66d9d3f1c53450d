#!/usr/bin/python3
"""Differential fuzz test of the two .sptrace readers (docs/trace-format.md, section 1).

Seed traces are written by the repository's writers (`sptrace_sample --micro`, `sptrace_golden`) and mutated
deterministically from a fixed seed: byte flips in the length prefix, the header and the data; truncations;
appended bytes; and edits of the header's JSON (duplicate keys, dtypes, shapes that overflow, data offsets out of
order / overlapping / out of range, unicode and raw bytes in names, metadata values, whitespace and padding,
trailing garbage, nesting depth, huge / negative / non-integer numbers), alone and two or three together.

Each file is opened by read_sptrace.py (its command-line `main`, in this process) and by the C++ TraceReader
alone (`sptrace_container_check`): TraceReader does the container checks and the format_version check of
section 6, which is exactly what the Python reader checks; `spartan-trace check` / `info` add the metadata
schemas of section 4, which the Python reader leaves out, so they are not the fair comparison. The test fails
when
  - one reader accepts a file the other refuses;
  - a refusal is not exactly one line with exit status 2 (or the Python reader raises);
  - only one reader calls the header invalid JSON. Both parse the whole header before they check an entry, so a
    JSON error anywhere is what both report; the one exception is a duplicate key, which the Python reader meets
    as its object closes and the C++ reader's SAX pass reports only when no syntax error follows it;
  - both refuse naming the same tensor, key or `header` at different byte offsets, unless both call the header
    invalid JSON (the position of a JSON error is each parser's own). The spec requires the same offset for a
    header with one bad entry; when the two name different fields (several defects, each reader meeting a
    different one first: the C++ reader walks the names sorted, the Python one in file order) the offsets are
    not compared.
A sample of the files (every 25th) is also run through the real processes: `sptrace_container_check FILE` must
print the batch's line, `spartan-trace check FILE` the same line for a file the container check refuses (and
"ok" or one line with exit 2 for one it accepts: the metadata checks), and every 250th `read_sptrace.py FILE` as
its own process must give the same verdict.

Run by CTest (trace.reader_differential_fuzz); by hand:
  /usr/bin/python3 traces/tests/reader_diff_fuzz.py --reader traces/tools/read_sptrace.py \
      --container-check build/tests/sptrace_container_check --cli build/bin/spartan-trace \
      --sample build/tests/sptrace_sample --golden build/tests/sptrace_golden --work /tmp/diff [--count N] [--seed S]
Failing files are kept under WORK/failures/ with a line each in WORK/failures/README.
"""
import argparse
import contextlib
import copy
import importlib.util
import io
import json
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import time
import traceback

MAX_HEADER = 100_000_000
DTYPE_SIZE = {"F32": 4, "F16": 2, "BF16": 2, "F64": 8, "U8": 1, "I8": 1, "I32": 4, "U32": 4, "I64": 8,
              "U64": 8, "BOOL": 1}


# ---- a JSON model that can hold what json.dumps cannot write: duplicate keys, raw tokens, raw bytes ----

class Raw:
    """Bytes written verbatim (a number token, an escaped or invalid string, any fragment)."""

    def __init__(self, b):
        self.b = b if isinstance(b, bytes) else b.encode("utf-8")


class Obj(list):
    """A JSON object as a list of (key, value) pairs, in file order; keys may repeat; a key may be Raw."""

    def get(self, key, default=None):
        for k, v in self:
            if k == key:
                return v
        return default

    def set(self, key, value):
        for i, (k, _) in enumerate(self):
            if k == key:
                self[i] = (k, value)
                return
        self.append((key, value))

    def remove(self, key):
        self[:] = [(k, v) for k, v in self if k != key]


class Style:
    """How a header is written: separators, escaping, padding, the length prefix."""

    def __init__(self):
        self.comma, self.colon = b",", b":"
        self.ascii = False          # json.dumps ensure_ascii for strings
        self.lead = b""             # before the opening brace
        self.tail = b""             # after the closing brace, before the padding
        self.pad = b" "             # padding unit (to a multiple of 8 bytes, as the writer does)
        self.pad_extra = 0          # extra padding units past the multiple of 8
        self.len_delta = 0          # added to the true header length in the prefix


def enc(v, st):
    if isinstance(v, Raw):
        return v.b
    if isinstance(v, Obj):
        return b"{" + st.comma.join(enc(k, st) + st.colon + enc(x, st) for k, x in v) + b"}"
    if isinstance(v, list):
        return b"[" + st.comma.join(enc(x, st) for x in v) + b"]"
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=st.ascii).encode("utf-8")
    return json.dumps(v).encode("ascii")


def serialize(h, data, st):
    text = st.lead + enc(h, st) + st.tail
    k = 0
    if st.pad:  # whole padding units up to a multiple of 8 bytes (where one fits), then the extra ones
        while (len(text) + k * len(st.pad)) % 8 and k < 8:
            k += 1
        k += 8 * st.pad_extra
    text += st.pad * k
    return struct.pack("<Q", max(0, len(text) + st.len_delta)) + text + data


class Seed:
    def __init__(self, name, raw):
        self.name, self.raw = name, raw
        n = struct.unpack("<Q", raw[:8])[0]
        self.n = n
        self.h = json.loads(raw[8:8 + n], object_pairs_hook=Obj)
        self.data = raw[8 + n:]


class State:
    def __init__(self, seed):
        self.h = copy.deepcopy(seed.h)
        self.data = seed.data
        self.st = Style()

    def tensors(self):
        """Names of the entries that are tensor objects with a valid [begin, end] pair, in file order (of a repeated
        name, the first entry, the one entry() returns)."""
        out = []
        for k, v in self.h:
            if isinstance(k, str) and k != "__metadata__" and isinstance(v, Obj) and self.h.get(k) is v:
                off = v.get("data_offsets")
                if isinstance(off, list) and len(off) == 2 and all(isinstance(o, int) for o in off):
                    out.append(k)
        return out

    def entry(self, name):
        return self.h.get(name)


# ---- interesting values ----

BIG = [2**31, 2**32, 2**62, 2**63 - 1, 2**63, 2**64 - 1, 2**64, 2**64 + 1, 2**65, 10**30]
NUMBER_TOKENS = [
    "0", "-0", "1", "-1", "-0.0", "0.0", "1.0", "1.5", "1e0", "1E1", "1e+1", "10e-1", "2e2", "1e400", "-1e400",
    "0e0", "NaN", "Infinity", "-Infinity", "01", "+1", ".5", "1.", "0x10", "1_0", "true", "false", "null",
    "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
    "18446744073709551615", "18446744073709551616", "36893488147419103232", "1" * 25, "1" * 400,
    "1" * 4300, "1" * 4301, "1" * 12000, "-" + "9" * 30, "4611686018427387904",
    # a double's limit: the largest finite value, and the least integer / decimal that rounds past it
    str(int(sys.float_info.max)), str(int(sys.float_info.max) + 2**970 - 1), str(int(sys.float_info.max) + 2**970),
    "1.7976931348623158e308", "1.7976931348623159e308", "-1.7976931348623159e308",
]
DTYPE_VALUES = list(DTYPE_SIZE) + [
    "f32", "F8", "", "F32 ", " F32", "Q8", "FLOAT", "F16\u0000", "BF16\n", "F3", "U16", "C64", "I16", "bool",
    "F\u00b3\u00b2", "F\u2028", "\u0085", "F16\u202e", "\x1b[2J", 1, 4, None, True, ["F32"], Obj([("F32", 1)])]
NAME_STRINGS = [
    "", "a", "\u00e9t\u00e9", "\u2028", "a\u2029b", "\u0085", "\u009b[2J", "\u202eab", "a\u2066", "\U0001f600",
    "\uffff", "\U0010ffff", "\x7f", "\u0000", "a\u0000b", "a\"b", "a\\b", "a/b", "a\nb", "\t", " ", "__metadata__ ",
    "__METADATA__", "it0/L0/act", "it00/L0/act", "x" * 300, "\u00e9" * 50, "a: b", "(byte offset 3)", "dtype",
    "shape", "data_offsets", "it0/L0/act\u0000",
]
RAW_NAMES = [  # escapes json.dumps would not write, and bytes that are not valid UTF-8
    b'"\\u0069t0/L0/act"', b'"\\/"', b'"a\\/b"', b'"\\ud83d\\ude00"', b'"\\ud800"', b'"\\udc00"', b'"\\ude00\\ud83d"',
    b'"\\ud800\\u0041"', b'"\\uD834\\uDD1E"', b'"\\u00E9"', b'"\\u0000"', b'"\\x41"', b'"\\a"', b'"\\u12"',
    b'"\\u00"', b'"\\U0041"', b'"\xff"', b'"\xc0\x80"', b'"\xed\xa0\x80"', b'"\xf4\x90\x80\x80"', b'"\xe2\x82"',
    b'"\xc3\xa9"', b'"\x80"', b'"\xf0\x9f\x98\x80"', b'"\xef\xbb\xbf"', b'"a\x01b"', b'"a\x1fb"', b'"a\x7fb"',
    b'"a\tb"', b'"a\nb"', b"'a'", b"a", b'"a', b'"\\"', b'"\\\\"', b'"\\u005c"', b'"\xf8\x88\x80\x80\x80"',
]


def pick_tensor(rng, s):
    names = s.tensors()
    return rng.choice(names) if names else None


def tensor_bytes(e):
    off = e.get("data_offsets")
    return off[1] - off[0]


# ---- structural operations on a State; each returns a short label ----

def op_dup_key(rng, s):
    names = s.tensors()
    which = rng.randrange(7)
    if which == 0 and names:
        name = rng.choice(names)
        e = s.entry(name)
        s.h.insert(rng.randrange(len(s.h) + 1), (name, copy.deepcopy(e)))
        return "dup:tensor"
    if which == 1 and s.h.get("__metadata__") is not None:
        s.h.insert(rng.randrange(len(s.h) + 1), ("__metadata__", copy.deepcopy(s.h.get("__metadata__"))))
        return "dup:__metadata__"
    if which == 2 and names:
        e = s.entry(rng.choice(names))
        field = rng.choice(["dtype", "shape", "data_offsets"])
        val = copy.deepcopy(e.get(field)) if rng.random() < 0.5 else rng.choice([1, "F32", [0], [0, 0]])
        e.insert(rng.randrange(len(e) + 1), (field, val))
        return "dup:field"
    meta = s.h.get("__metadata__")
    if which == 3 and isinstance(meta, Obj) and meta:
        k, v = rng.choice(meta)
        meta.insert(rng.randrange(len(meta) + 1), (k, rng.choice([v, "x", "1"])))
        return "dup:metadata_key"
    if which == 4 and names:
        e = s.entry(rng.choice(names))
        e.append((rng.choice(["x", "k", "dtype"]), Obj([("k", 1), ("k", 2)])))
        return "dup:nested"
    if which == 5 and names:  # the same key written two ways: equal once unescaped
        e = s.entry(rng.choice(names))
        field = rng.choice(["dtype", "shape", "data_offsets"])
        esc = Raw(b'"\\u%04x' % ord(field[0]) + field[1:].encode() + b'"')
        e.insert(rng.randrange(len(e) + 1), (esc, copy.deepcopy(e.get(field))))
        return "dup:escaped"
    if names:  # a tensor name repeated with an escaped spelling
        name = rng.choice(names)
        esc = Raw(json.dumps(name, ensure_ascii=True).encode().replace(b"t", b"\\u0074", 1))
        s.h.append((esc, copy.deepcopy(s.entry(name))))
        return "dup:escaped_name"
    return "dup:none"


def op_dtype(rng, s):
    name = pick_tensor(rng, s)
    if name is None:
        return "dtype:none"
    e = s.entry(name)
    cur = e.get("dtype")
    same = [d for d in DTYPE_SIZE if isinstance(cur, str) and DTYPE_SIZE[d] == DTYPE_SIZE.get(cur)]
    v = rng.choice(same) if same and rng.random() < 0.3 else rng.choice(DTYPE_VALUES)
    if rng.random() < 0.1:
        e.remove("dtype")
        return "dtype:missing"
    e.set("dtype", copy.deepcopy(v))
    return "dtype"


def op_shape(rng, s):
    name = pick_tensor(rng, s)
    if name is None:
        return "shape:none"
    e = s.entry(name)
    nbytes = tensor_bytes(e)
    dt = e.get("dtype")
    es = DTYPE_SIZE.get(dt, 1) if isinstance(dt, str) else 1
    shape = e.get("shape")
    which = rng.randrange(12)
    if which == 0 and isinstance(shape, list):  # the same element count, valid
        v = list(reversed(shape)) + [1] * rng.randrange(3)
        rng.shuffle(v)
        label = "shape:same_count"
    elif which == 1:
        v = [nbytes // es] if nbytes % es == 0 else [nbytes]
        label = "shape:flat"
    elif which == 2:  # overflowing products, with and without a zero
        big = rng.choice(BIG)
        v = [big, rng.choice(BIG)] + ([0] if rng.random() < 0.5 else [])
        rng.shuffle(v)
        label = "shape:overflow"
    elif which == 3:  # products at the 2^64 boundary for this dtype
        v = rng.choice([[2**64 // es], [2**64 // es - 1], [2**32, 2**32 // es], [2**63 - 1, 2], [2**63 - 1, 3],
                        [2**21, 2**21, 2**22 // es], [3, 6148914691236517205], [3, 6148914691236517206]])
        label = "shape:boundary"
    elif which == 4:
        v = [Raw(rng.choice(NUMBER_TOKENS))] + ([1] if rng.random() < 0.5 else [])
        label = "shape:token"
    elif which == 5:
        v = rng.choice([[], [0], [0, 0], [1], [-1], [2, -2], ["2"], [True], [None], [[2]], [1.0], [{}]])
        label = "shape:value"
    elif which == 6:
        v = rng.choice([None, "[]", 3, Obj([("0", 1)]), True, Obj()])
        label = "shape:not_array"
    elif which == 7:
        e.remove("shape")
        return "shape:missing"
    elif which == 8 and isinstance(shape, list) and shape and all(type(d) is int for d in shape):
        v = list(shape)  # one dimension off by one
        i = rng.randrange(len(v))
        v[i] = max(0, v[i] + rng.choice([-1, 1]))
        label = "shape:off_by_one"
    elif which == 9:  # a zero dimension: the range must then be empty
        v = list(shape) + [0] if isinstance(shape, list) else [0]
        if rng.random() < 0.5:
            off = e.get("data_offsets")
            e.set("data_offsets", [off[0], off[0]])
        label = "shape:zero_dim"
    elif which == 10:
        v = [Raw(t) for t in rng.sample(NUMBER_TOKENS, 2)]
        label = "shape:tokens"
    else:
        v = [rng.choice(BIG) for _ in range(rng.randrange(1, 4))]
        label = "shape:big"
    e.set("shape", v)
    return label


def op_offsets(rng, s):
    name = pick_tensor(rng, s)
    if name is None:
        return "offsets:none"
    e = s.entry(name)
    b, en = e.get("data_offsets")
    size = len(s.data)
    which = rng.randrange(10)
    if which == 0:
        v = [en, b]
    elif which == 1:
        d = rng.choice([-2, -1, 1, 2, 8])
        v = [b + d, en + d]
    elif which == 2:
        v = rng.choice([[b, en + 1], [b - 1, en], [b + 1, en], [b, en - 1], [b, size], [0, en], [0, size],
                        [size, size], [size, size + 1], [size + 1, size + 1], [0, 0]])
    elif which == 3:
        v = [rng.choice([b, -1, 0]), rng.choice(BIG)] if rng.random() < 0.5 else [rng.choice(BIG), rng.choice(BIG)]
    elif which == 4:
        v = [Raw(rng.choice(NUMBER_TOKENS)), en] if rng.random() < 0.5 else [b, Raw(rng.choice(NUMBER_TOKENS))]
    elif which == 5:
        v = rng.choice([[b], [b, en, en], [], [[b, en]], [b, [en]], None, "0,8", Obj([("0", b), ("1", en)]),
                        [str(b), en], [float(b), en], [b, float(en)], [True, en], [None, en]])
    elif which == 6:
        e.remove("data_offsets")
        return "offsets:missing"
    elif which == 7:  # begin negative, end a huge value: near the 64-bit wrap-around
        v = [-(2**64) + b, en] if rng.random() < 0.5 else [b - 2**64, en - 2**64]
    elif which == 8:  # the range of another tensor (overlap), or one that straddles two
        other = rng.choice(s.tensors())
        ob, oe = s.entry(other).get("data_offsets")
        v = rng.choice([[ob, oe], [ob + 1, oe + 1], [max(0, oe - 1), oe - 1 + (en - b)], [ob, ob + (en - b)]])
    else:
        v = [b + 2**64, en + 2**64]
    e.set("data_offsets", v)
    return "offsets"


def op_swap_offsets(rng, s):
    names = s.tensors()
    if len(names) < 2:
        return "swap:none"
    a, c = rng.sample(names, 2)
    ea, ec = s.entry(a), s.entry(c)
    same = [n for n in names if n != a and tensor_bytes(s.entry(n)) == tensor_bytes(ea)]
    if same and rng.random() < 0.6:  # equal sizes: a valid file
        c = rng.choice(same)
        ec = s.entry(c)
    oa, oc = ea.get("data_offsets"), ec.get("data_offsets")
    ea.set("data_offsets", oc)
    ec.set("data_offsets", oa)
    return "swap_offsets"


def op_add_empty(rng, s):
    """A zero-size tensor at a boundary (valid), inside another range, at or past the end."""
    bounds = sorted({0, len(s.data)} | {x for n in s.tensors() for x in s.entry(n).get("data_offsets")})
    k = rng.choice(bounds + [rng.randrange(len(s.data) + 2)])
    dt = rng.choice(list(DTYPE_SIZE))
    shape = rng.choice([[0], [0, 4], [4, 0], [2**62, 0, 2**62], [0, 2**63 - 1], [0, 2**63]])
    name = rng.choice(["zz/empty", "it9/L0/act", "\u00e9", "a"])
    s.h.insert(rng.randrange(len(s.h) + 1), (name, Obj([("dtype", dt), ("shape", shape), ("data_offsets", [k, k])])))
    return "add_empty"


def op_name(rng, s):
    names = s.tensors()
    if not names:
        return "name:none"
    name = rng.choice(names)
    i = [k for k, _ in s.h].index(name)
    new = Raw(rng.choice(RAW_NAMES)) if rng.random() < 0.5 else rng.choice(NAME_STRINGS)
    s.h[i] = (new, s.h[i][1])
    if rng.random() < 0.3:  # and a defect in that entry, so that the error quotes the name
        s.h[i][1].set("dtype", "Q8")
        return "name:quoted"
    return "name:raw" if isinstance(new, Raw) else "name"


def op_metadata(rng, s):
    meta = s.h.get("__metadata__")
    which = rng.randrange(9)
    if which == 0 or not isinstance(meta, Obj):
        s.h.set("__metadata__", rng.choice([[], "x", None, 1, Obj(), ["format_version", "1"], Obj([("a", Obj())])]))
        return "meta:not_object"
    if which == 1:
        meta.set("format_version", rng.choice(["2", "", "1 ", " 1", "01", "1.0", 1, None, "\u0661", "1\u0000"]))
        return "meta:format_version"
    if which == 2:
        meta.remove("format_version")
        return "meta:no_format_version"
    if which == 3:
        k = rng.choice([k for k, _ in meta] + ["x", ""])
        meta.set(k, rng.choice([1, None, True, [], Obj(), 1.5, ["a"], Raw(rng.choice(NUMBER_TOKENS))]))
        return "meta:not_string"
    if which == 4:
        meta.append((rng.choice(NAME_STRINGS), rng.choice(NAME_STRINGS)))
        return "meta:extra_key"
    if which == 5:
        meta.append((Raw(rng.choice(RAW_NAMES)), "v"))
        return "meta:raw_key"
    if which == 6:
        k = rng.choice([k for k, _ in meta] + ["x"])
        meta.set(k, Raw(rng.choice(RAW_NAMES)))
        return "meta:raw_value"
    if which == 7:
        s.h.remove("__metadata__")
        return "meta:removed"
    i = [k for k, _ in s.h].index("__metadata__")  # moved elsewhere in the header (a valid file)
    item = s.h.pop(i)
    s.h.insert(rng.randrange(len(s.h) + 1), item)
    return "meta:moved"


def op_entry(rng, s):
    name = pick_tensor(rng, s)
    if name is None:
        return "entry:none"
    i = [k for k, _ in s.h].index(name)
    which = rng.randrange(5)
    if which == 0:
        s.h[i] = (name, rng.choice([[], "x", 1, None, True, ["dtype", "F32"]]))
        return "entry:not_object"
    if which == 1:
        s.h[i][1].append((rng.choice(["x", "", "Dtype", "dtype ", "__metadata__"]), rng.choice([1, "x", None])))
        return "entry:extra_field"
    if which == 2:
        s.h[i] = (name, Obj())
        return "entry:empty"
    if which == 3:
        e = s.h[i][1]
        e[:] = [e[j] for j in rng.sample(range(len(e)), len(e))]
        return "entry:field_order"  # valid
    s.h.insert(rng.randrange(len(s.h) + 1), (rng.choice(["x", "y/z"]), rng.choice([1, "s", Obj(), []])))
    return "entry:extra_entry"


def nested(depth, kind):
    if kind == "array":
        return Raw(b"[" * depth + b"]" * depth)
    if kind == "array1":
        return Raw(b"[" * depth + b"1" + b"]" * depth)
    return Raw(b'{"a":' * depth + b"{}" + b"}" * depth)


def op_nesting(rng, s):
    depth = rng.choice([2, 50, 990, 997, 998, 999, 1000, 1001, 1500, 5000, 100000])
    kind = rng.choice(["array", "array1", "object"])
    where = rng.randrange(6)
    name = pick_tensor(rng, s)
    if where == 0 and name:
        s.entry(name).set("shape", nested(depth, kind))
    elif where == 1 and name:
        s.entry(name).set("data_offsets", nested(depth, kind))
    elif where == 2 and name:
        s.entry(name).append(("x", nested(depth, kind)))
    elif where == 3 and isinstance(s.h.get("__metadata__"), Obj):
        s.h.get("__metadata__").append(("deep", nested(depth, kind)))
    elif where == 4:
        s.h.append(("deep", nested(depth, kind)))
    elif name:
        s.entry(name).set("shape", Raw(b"[" + b"[" * depth + b"1" + b"]" * depth + b"]"))
    return f"nesting:{kind}"


def op_numbers(rng, s):
    name = pick_tensor(rng, s)
    if name is None:
        return "numbers:none"
    e = s.entry(name)
    tok = Raw(rng.choice(NUMBER_TOKENS))
    if rng.random() < 0.5:
        shape = e.get("shape")
        shape = list(shape) if isinstance(shape, list) else []
        shape.insert(rng.randrange(len(shape) + 1), tok)
        e.set("shape", shape)
        return "numbers:shape"
    off = list(e.get("data_offsets"))
    off[rng.randrange(2)] = tok
    e.set("data_offsets", off)
    return "numbers:offsets"


def op_remove(rng, s):
    name = pick_tensor(rng, s)
    if name is None:
        return "remove:none"
    s.h.remove(name)
    return "remove_tensor"


def op_drop_last(rng, s):
    """Removes the tensor that ends the data section, and its bytes: a valid file."""
    names = s.tensors()
    if not names:
        return "drop_last:none"
    last = max(names, key=lambda n: (s.entry(n).get("data_offsets")[1], s.entry(n).get("data_offsets")[0]))
    b, en = s.entry(last).get("data_offsets")
    if en != len(s.data):
        return "drop_last:none"
    s.h.remove(last)
    s.data = s.data[:b]
    return "drop_last"


def op_reorder(rng, s):
    rng.shuffle(s.h)
    return "reorder"


def op_top(rng, s):
    h = rng.choice([Obj(), Obj([("__metadata__", Obj())]), Obj([("__metadata__", Obj([("format_version", "1")]))]),
                    Obj([("", Obj())]), Obj([("a", Obj([("dtype", "U8"), ("shape", [0]), ("data_offsets", [0, 0])]))])])
    s.h = copy.deepcopy(h)
    if rng.random() < 0.5:
        s.data = b""
    return "top"


def op_data_resize(rng, s):
    """Data bytes added or removed at the end, the header unchanged."""
    if rng.random() < 0.5:
        s.data = s.data + bytes(rng.randrange(256) for _ in range(rng.choice([1, 2, 7, 8, 100])))
        return "data:append"
    s.data = s.data[: max(0, len(s.data) - rng.choice([1, 2, 8, 64]))]
    return "data:shorten"


STRUCTURAL = [op_dup_key, op_dtype, op_shape, op_offsets, op_swap_offsets, op_add_empty, op_name, op_metadata,
              op_entry, op_nesting, op_numbers, op_remove, op_drop_last, op_reorder, op_top, op_data_resize]


def style_op(rng, s):
    """Changes how the header is written (whitespace, escapes, padding, leading / trailing bytes, length)."""
    st = s.st
    which = rng.randrange(9)
    if which == 0:
        st.comma, st.colon = rng.choice([(b", ", b": "), (b",\n  ", b": "), (b"\t,\t", b"\t:\t"), (b"\r\n,", b":\r"),
                                         (b" ,", b" :")])
        return "ws:valid"
    if which == 1:
        st.comma, st.colon = rng.choice([(b",\x0c", b":"), (b",\x0b", b":"), (b",\xc2\xa0", b":"),
                                         (b",\xe3\x80\x80", b":"), (b",\x00", b":"), (b",", b":\x85"),
                                         (b",\xe2\x80\xa8", b":")])
        return "ws:invalid"
    if which == 2:
        st.ascii = True
        return "ws:ascii_escapes"
    if which == 3:
        st.pad = rng.choice([b"", b" ", b"\t", b"\n", b"\r", b" \t\r\n"])
        st.pad_extra = rng.choice([0, 1, 2, 100])
        return "pad:valid"
    if which == 4:
        st.pad = rng.choice([b"\x00", b"\x0c", b"\x0b", b"\xc2\xa0", b"\x1a", b"\xff", b"x", b"}"])
        st.pad_extra = rng.choice([0, 1])
        return "pad:invalid"
    if which == 5:
        st.lead = rng.choice([b" ", b"\n", b"\t", b"\xef\xbb\xbf", b"\x00", b"["])
        return "lead"
    if which == 6:
        st.tail = rng.choice([b"x", b"}", b"},", b"{}", b"\n//", b"null", b"0", b"]", b",", b" \n\t,", b"\x00",
                              b"\xff", b"\xef\xbb\xbf", b" {", b"/* */", b"\x1a"])
        return "trailing_garbage"
    if which == 7:
        st.len_delta = rng.choice([-9, -8, -2, -1, 1, 2, 8, 9])
        return "len_delta"
    return "style:none"


# ---- byte-level mutations of a writer's file ----

def byte_mutation(rng, raw, n):
    b = bytearray(raw)
    size = len(b)
    if size <= 8:
        return "append", raw + bytes([rng.randrange(256)])
    n = max(1, min(n, size - 8))  # the header as far as the file holds it (a mutated prefix may say more)
    which = rng.randrange(8)
    if which == 0:
        i = rng.randrange(8)
        b[i] ^= rng.randrange(1, 256)
        return "len_flip", bytes(b)
    if which == 1:
        v = rng.choice([0, 1, 2, 7, n - 1, n + 1, n - 8, n + 8, size - 8, size - 7, size, 2**63, 2**64 - 1,
                        MAX_HEADER, MAX_HEADER + 1, rng.randrange(2**32), rng.randrange(2**64)])
        return "len_set", struct.pack("<Q", v % 2**64) + bytes(b[8:])
    if which == 2:
        for _ in range(rng.choice([1, 1, 2, 3])):
            i = 8 + rng.randrange(n)
            b[i] = rng.choice([rng.randrange(256), b[i] ^ (1 << rng.randrange(8))] +
                              list(b'"{}[],:\\0-. \x00\xff\x80e'))
        return "header_byte", bytes(b)
    if which == 3 and size > 8 + n:
        for _ in range(rng.choice([1, 4, 16])):
            b[8 + n + rng.randrange(size - 8 - n)] ^= rng.randrange(1, 256)
        return "data_byte", bytes(b)  # no checksum: both must accept
    if which == 4:
        cut = rng.choice([rng.randrange(size), rng.randrange(24), 8 + n + rng.randrange(-3, 4), size - 1,
                          rng.randrange(8, 8 + n)])
        return "truncate", bytes(b[: max(0, min(size, cut))])
    if which == 5:
        extra = rng.choice([b"\x00", b" ", b"\xff" * 7, bytes(rng.randrange(256) for _ in range(rng.randrange(1, 17)))])
        return "append", bytes(b) + extra
    if which == 6:  # bytes inserted into or deleted from the header, the prefix kept or fixed
        i = 8 + rng.randrange(n)
        if rng.random() < 0.5:
            ins = rng.choice([b" ", b",", b"\"", b"{", b"}", b"[]", b"\\", b"\x00", b"\xc3", b"1", b"-"])
            b[i:i] = ins
            d = len(ins)
        else:
            k = rng.randrange(1, 5)
            del b[i:i + k]
            d = -k
        if rng.random() < 0.7:
            b[:8] = struct.pack("<Q", n + d)
        return "header_insdel", bytes(b)
    i = 8 + rng.randrange(n)  # a single header bit
    b[i] ^= 1 << rng.randrange(8)
    return "header_bit", bytes(b)


def exhaustive_truncations(seed):
    """Every cut in the first 40 bytes and around the header's end, and a spread over the data."""
    size, n = len(seed.raw), seed.n
    cuts = set(range(0, min(size, 40))) | set(range(max(0, 8 + n - 12), min(size, 8 + n + 12)))
    cuts |= set(range(8 + n, size, max(1, (size - 8 - n) // 20)))
    return [("truncate_sweep", seed.raw[:c]) for c in sorted(cuts)]


def generate(seeds, rng, count):
    """Deterministic list of (label, bytes)."""
    cases = []
    for seed in seeds:
        cases.append(("seed:" + seed.name, seed.raw))
        cases.extend(exhaustive_truncations(seed))
        for v in [0, 1, seed.n - 1, seed.n + 1, len(seed.raw) - 8, len(seed.raw) - 7, 2**64 - 1, MAX_HEADER]:
            cases.append(("len_sweep", struct.pack("<Q", v % 2**64) + seed.raw[8:]))
    while len(cases) < count:
        seed = rng.choice(seeds)
        r = rng.random()
        if r < 0.30:
            label, raw = byte_mutation(rng, seed.raw, seed.n)
        else:
            s = State(seed)
            k = 0 if r < 0.40 else 1 if r < 0.70 else rng.choice([2, 2, 3])
            labels = [rng.choice(STRUCTURAL)(rng, s) for _ in range(k)]
            if k == 0 or rng.random() < 0.25:
                labels.append(style_op(rng, s))
            label = "+".join(labels)
            raw = serialize(s.h, s.data, s.st)
            if rng.random() < 0.05:
                label2, raw = byte_mutation(rng, raw, struct.unpack("<Q", raw[:8])[0] if len(raw) >= 8 else 0)
                label += "+" + label2
        cases.append((label, raw))
    return cases


# ---- running the readers ----

def load_reader(path):
    spec = importlib.util.spec_from_file_location("read_sptrace", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def lines(text):
    """Lines in `text` as str.splitlines counts them (a NEL, U+2028 or a form feed ends a line too, in a terminal
    or in a script that reads the message); -1 when the text does not end with a newline."""
    if text and not text.endswith("\n"):
        return -1
    return len(text.splitlines())


class Verdict:
    def __init__(self, rc, line, field=None, offset=None, lines=1, crash=None):
        self.rc, self.line, self.field, self.offset, self.lines, self.crash = rc, line, field, offset, lines, crash


def run_python(mod, path):
    """read_sptrace.py's command line on `path`, in this process; the SpTraceError it printed, if any, gives the
    field and offset."""
    out, err = io.StringIO(), io.StringIO()
    raised = []
    opener = mod.SpTrace

    def recording_open(p):
        try:
            return opener(p)
        except mod.SpTraceError as e:
            raised.append(e)
            raise

    mod.SpTrace = recording_open
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = mod.main([path])
    except SystemExit as e:
        rc = e.code
    except BaseException:  # noqa: BLE001 - a crash is a finding
        return Verdict(None, "", crash=traceback.format_exc(limit=3))
    finally:
        mod.SpTrace = opener
    text = err.getvalue()
    field, offset = (raised[0].field, raised[0].offset) if raised and rc == 2 else (None, None)
    return Verdict(rc, text[:-1] if text.endswith("\n") else text, field, offset, lines=lines(text))


def run_cpp_batch(exe, paths):
    out = []
    for i in range(0, len(paths), 400):
        chunk = paths[i:i + 400]
        p = subprocess.run([exe, "--batch"] + chunk, capture_output=True, timeout=600)
        if p.returncode != 0:
            raise SystemExit(f"reader_diff_fuzz: {exe} --batch failed with exit {p.returncode}: {p.stderr[:500]!r}")
        recs = p.stdout.decode("ascii").split("\n")[:-1]
        if len(recs) != len(chunk):
            raise SystemExit(f"reader_diff_fuzz: {exe} --batch gave {len(recs)} records for {len(chunk)} files")
        for rec in recs:
            rc, off, field, line = rec.split("\t")
            v = Verdict(int(rc), "" if line == "-" else bytes.fromhex(line).decode("utf-8", "replace"))
            if off != "-":
                v.offset = int(off)
                v.field = bytes.fromhex(field).decode("utf-8", "surrogateescape") if field else ""
            v.lines = 0 if v.rc == 0 else lines(v.line + "\n")
            out.append(v)
    return out


def json_error(v, path):
    """Whether a refusal is the header's "invalid JSON"."""
    return v.field == "header" and f"{path}: header: invalid JSON" in v.line


def compare(py, cpp, path, one_line):
    """Problems (strings) between the two verdicts on one file; empty when they agree. `one_line` is the Python
    reader's escaping of a message (as error.h's one_line)."""
    if py.crash:
        return ["python reader raised: " + py.crash.strip().splitlines()[-1]]
    probs = []
    for who, v in (("python", py), ("c++", cpp)):
        if v.rc not in (0, 2):
            probs.append(f"{who} exit status {v.rc}")
        if v.rc == 2 and v.lines != 1:
            probs.append(f"{who} printed {v.lines} lines")
    if (py.rc == 0) != (cpp.rc == 0):
        probs.append("python " + ("accepts" if py.rc == 0 else "refuses") + ", c++ " +
                     ("accepts" if cpp.rc == 0 else "refuses"))
        return probs
    if py.rc != 2 or cpp.rc != 2:
        return probs
    if py.field is None or cpp.field is None:
        probs.append("a refusal without a field and offset (not a FormatError / SpTraceError)")
        return probs
    # Both parse the whole header before they check an entry, so a JSON syntax error is what both report, whatever
    # else is wrong; only a duplicate key may come first in one reader (Python meets it as the object closes, the
    # C++ SAX pass reports a syntax error anywhere first). A header one reader calls invalid JSON and the other
    # parses is a disagreement about the JSON itself.
    pj, cj = json_error(py, path), json_error(cpp, path)
    if pj != cj and not re.search(r": duplicate JSON key \(byte offset \d+\)$", (py if cj else cpp).line):
        probs.append("only " + ("python" if pj else "c++") + " calls the header invalid JSON")
    elif py.field == cpp.field and not (pj and cj) and py.offset != cpp.offset:
        probs.append(f"same field {py.field!r} at different offsets: python {py.offset}, c++ {cpp.offset}")
    if py.field and py.field == cpp.field:  # quoted alike: "FILE: FIELD: " with the same escapes
        quoted = one_line(f"{path}: {py.field}: ")
        probs += [f"{who} quotes the field otherwise" for who, v in (("python", py), ("c++", cpp))
                  if quoted not in v.line]
    return probs


def spawn_checks(args, path, cpp, with_python):
    """The real processes print what the in-process / batch runs said."""
    probs = []
    p = subprocess.run([args.container_check, path], capture_output=True, timeout=120)
    err = p.stderr.decode("utf-8", "replace")
    want = "" if cpp.rc == 0 else "sptrace_container_check: " + cpp.line + "\n"
    if p.returncode != cpp.rc or err != want:
        probs.append(f"sptrace_container_check FILE: exit {p.returncode}, stderr {err!r}; batch said {cpp.rc} {want!r}")
    p = subprocess.run([args.cli, "check", path], capture_output=True, timeout=120)
    err = p.stderr.decode("utf-8", "replace")
    if cpp.rc == 2 and (p.returncode != 2 or err != "spartan-trace: " + cpp.line + "\n"):
        probs.append(f"spartan-trace check: exit {p.returncode}, stderr {err!r}; the container check said {cpp.line!r}")
    if cpp.rc == 0 and p.returncode != 0 and (p.returncode != 2 or lines(err) != 1):
        probs.append(f"spartan-trace check on a valid container: exit {p.returncode}, stderr {err!r}")
    if with_python:
        p = subprocess.run([sys.executable, args.reader, path], capture_output=True, timeout=120)
        err = p.stderr.decode("utf-8", "replace")
        if p.returncode not in (0, 2) or (p.returncode == 2 and (lines(err) != 1 or "Traceback" in err)) or \
                (p.returncode == 0) != (cpp.rc == 0):
            probs.append(f"read_sptrace.py FILE: exit {p.returncode}, stderr {err[:300]!r}")
    return probs


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reader", required=True)
    ap.add_argument("--container-check", required=True)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--sample", required=True)
    ap.add_argument("--golden", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--seed", type=int, default=20261207)
    ap.add_argument("--count", type=int, default=6000)
    ap.add_argument("--verbose", action="store_true", help="print every file's verdicts (JSON lines)")
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    shutil.rmtree(args.work, ignore_errors=True)
    cases_dir = os.path.join(args.work, "cases")
    os.makedirs(cases_dir)
    subprocess.run([args.sample, "--micro", os.path.join(args.work, "micro.sptrace")], check=True)
    subprocess.run([args.golden, os.path.join(args.work, "golden.sptrace"), os.path.join(args.work, "golden.json")],
                   check=True)
    seeds = [Seed(n, open(os.path.join(args.work, n + ".sptrace"), "rb").read()) for n in ("micro", "golden")]
    cases = generate(seeds, random.Random(args.seed), args.count)

    paths = []
    for i, (label, raw) in enumerate(cases):
        path = os.path.join(cases_dir, f"{i:05d}.sptrace")
        with open(path, "wb") as f:
            f.write(raw)
        paths.append(path)
    # A header over the 100,000,000-byte limit needs a file that long: one sparse file.
    huge = os.path.join(cases_dir, "huge_header.sptrace")
    with open(huge, "wb") as f:
        f.write(struct.pack("<Q", MAX_HEADER + 1) + b"{")
        f.truncate(8 + MAX_HEADER + 1)
    cases.append(("len_over_limit", None))
    paths.append(huge)

    mod = load_reader(args.reader)
    cpp = run_cpp_batch(args.container_check, paths)
    failures, stats, kinds, field_diff = [], {"both accept": 0, "both refuse": 0, "offsets compared": 0}, {}, 0
    spawned = 0
    for i, (path, (label, _)) in enumerate(zip(paths, cases)):
        py = run_python(mod, path)
        probs = compare(py, cpp[i], path, mod._one_line)
        if not probs and (i % 25 == 0 or label == "len_over_limit"):
            probs = spawn_checks(args, path, cpp[i], i % 250 == 0)
            spawned += 1
        if not py.crash and py.rc == cpp[i].rc:
            stats["both accept" if py.rc == 0 else "both refuse"] += 1
        if py.rc == 2 and cpp[i].rc == 2:
            if py.field != cpp[i].field:
                field_diff += 1
            elif not (json_error(py, path) and json_error(cpp[i], path)):
                stats["offsets compared"] += 1
        base = label.split(":")[0].split("+")[0]
        kinds[base] = kinds.get(base, 0) + 1
        if args.verbose:
            print(json.dumps({"i": i, "label": label, "py": [py.rc, py.field, py.offset, py.line],
                              "cpp": [cpp[i].rc, cpp[i].field, cpp[i].offset, cpp[i].line]}))
        if probs:
            failures.append((i, label, path, probs, py, cpp[i]))
    os.remove(huge)

    print(f"reader_diff_fuzz: seed {args.seed}, {len(paths)} files from {len(seeds)} writer traces "
          f"({', '.join(s.name for s in seeds)}); {stats['both accept']} accepted and {stats['both refuse']} refused "
          f"by both; {stats['offsets compared']} refusals naming the same field with offsets compared, {field_diff} "
          f"naming different fields; {spawned} also run as processes; {time.monotonic() - t0:.1f} s")
    print("  mutation kinds (first of each file): " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    if not failures:
        shutil.rmtree(cases_dir)
        return 0
    fdir = os.path.join(args.work, "failures")
    os.makedirs(fdir, exist_ok=True)
    with open(os.path.join(fdir, "README"), "w") as readme:
        for k, (i, label, path, probs, py, c) in enumerate(failures):
            kept = os.path.join(fdir, os.path.basename(path))
            shutil.copyfile(path, kept)
            line = (f"{kept}: [{label}] {'; '.join(probs)}\n    python: exit {py.rc}: {py.line[:300]!r}\n"
                    f"    c++:    exit {c.rc}: {c.line[:300]!r}")
            readme.write(line + "\n")
            if k < 20:
                print("FAIL " + line)
    print(f"reader_diff_fuzz: {len(failures)} of {len(paths)} files disagree; kept in {fdir}/ (README lists them)")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
