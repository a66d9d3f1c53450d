#!/usr/bin/python3
"""Read .sptrace trace files (safetensors layout) with only the standard library and numpy.

Format: docs/trace-format.md.  Use as a module:

    from read_sptrace import SpTrace
    t = SpTrace("run.sptrace")
    t.metadata["model"]                 # __metadata__ (str -> str)
    t.layers()                          # json.loads(t.metadata["layers"]) or []
    a = t.array("it0/L3/act")           # numpy array, NCHW; F16 -> float16, BF16 -> float32 (exact)
    m = t.unpack_mask("it0/L3/dz_mask", n)   # uint8 0/1, n elements
    for it, layer, kind in t.keys(): ...

or from the shell:  read_sptrace.py FILE [--compare EXPECTED.json]
Malformed files raise SpTraceError (exit code 2 from the command line); the checks are the same as
the C++ reader's (traces/src/reader.cpp).
"""
import json
import math
import mmap
import os
import re
import stat
import sys

import numpy as np

# safetensors dtype name -> (numpy storage dtype, element size in bytes)
DTYPES = {
    "F32": ("<f4", 4), "F16": ("<f2", 2), "BF16": ("<u2", 2), "F64": ("<f8", 8),
    "U8": ("u1", 1), "I8": ("i1", 1), "I32": ("<i4", 4), "U32": ("<u4", 4),
    "I64": ("<i8", 8), "U64": ("<u8", 8), "BOOL": ("?", 1),
}
FORMAT_VERSION = "1"  # docs/trace-format.md; traces/include/spartan/trace/keys.h kFormatVersion
MAX_HEADER_BYTES = 100_000_000  # as reader.cpp kMaxHeaderBytes (the safetensors library's MAX_HEADER_SIZE)
KEY_RE = re.compile(r"^it(0|[1-9][0-9]{0,17})/L(0|[1-9][0-9]{0,17})/([^/]+)$")


class CheckFailed(Exception):
    """--compare / --check-sparsity found a difference (one line; exit code 2 from the command line)."""


def _name_offset(raw, name):
    """Byte offset in the file of the first occurrence of `name` as a JSON string in the header `raw` (which
    starts at byte 8), as the C++ reader reports it (reader.cpp, name_offset); 8 if it is not found."""
    pos = raw.find(json.dumps(name, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    return 8 + (pos if pos >= 0 else 0)


class SpTraceError(ValueError):
    """A malformed trace: the message names the file, the tensor and the byte offset."""

    def __init__(self, path, field, offset, what):
        super().__init__(f"{path}: {field + ': ' if field else ''}{what} (byte offset {offset})")
        self.field, self.offset = field, offset  # as the C++ FormatError's field() and offset()


class _DuplicateKey(ValueError):
    def __init__(self, key):
        super().__init__(f"duplicate JSON key {key!r}")
        self.key = key


def _no_duplicates(pairs):
    seen = {}
    for k, v in pairs:
        if k in seen:
            raise _DuplicateKey(k)
        seen[k] = v
    return seen


def _no_constant(name):
    """json.loads takes NaN, Infinity and -Infinity, which are not JSON (RFC 8259); reader.cpp refuses them."""
    raise ValueError(f"{name} is not a JSON value")


def _finite_float(text):
    """A JSON number with a fraction or exponent; one beyond the range of a double (1e400) is refused, as
    reader.cpp's parser does ("number overflow")."""
    v = float(text)
    if math.isinf(v):
        raise ValueError(f"number overflow parsing '{text[:40]}'")
    return v


def _double_range_int(text):
    """A JSON integer; one beyond the range of a double (above about 1.8e308) is refused, as reader.cpp's parser
    does: it reads an integer that fits in neither 64-bit type as a double."""
    v = int(text)
    if len(text) > 300:
        try:
            float(v)
        except OverflowError:
            raise ValueError(f"number overflow parsing '{text[:40]}...'") from None
    return v


_JSON_WS = re.compile(r"[ \t\n\r]*")
_KEPT_LEVELS = 4  # the header, an entry, a field, an element of a field: no check looks deeper


def _has_surrogate(x):
    return any(0xD800 <= ord(ch) <= 0xDFFF for ch in x)


def _loads_deep(s):
    """json.loads(s) with the hooks of SpTrace, without recursion, for a header nested deeper than the json
    module's recursion limit: it is still valid JSON, which reader.cpp parses (and then refuses the entry that
    holds it). Refuses what json.loads refuses, meets duplicate keys in the same order (an object's keys are
    checked as it closes) and returns the same value down to _KEPT_LEVELS levels; a container nested deeper is
    returned empty (of its type) and costs a byte or two per level, not a Python object. Its strings are checked
    for lone surrogates here (a ValueError after the parse, as _lone_surrogate after json.loads)."""
    from json.decoder import JSONDecodeError, scanstring
    from json.scanner import NUMBER_RE
    ws = _JSON_WS.match
    kinds = bytearray()  # every open container, outermost first: 1 object, 0 array
    kept = []            # the first _KEPT_LEVELS of them: [pairs or items, pending key]
    deep_keys = []       # each open object below those: its only key so far, or [its keys, first repeated]
    memo, lone = {}, None

    def read_key(i):  # `"key" :` at i, then the whitespace after it
        if s[i:i + 1] != '"':
            raise JSONDecodeError("Expecting property name enclosed in double quotes", s, i)
        key, i = scanstring(s, i + 1, True)
        i = ws(s, i).end()
        if s[i:i + 1] != ":":
            raise JSONDecodeError("Expecting ':' delimiter", s, i)
        return key, ws(s, i + 1).end()

    def add_key(key, first):  # a key of the innermost open object
        nonlocal lone
        if len(kinds) <= _KEPT_LEVELS:
            kept[-1][1] = key
            return
        if lone is None and _has_surrogate(key):
            lone = key
        key = memo.setdefault(key, key)
        if first:
            deep_keys.append(key)
            return
        rec = deep_keys[-1]
        if isinstance(rec, str):
            deep_keys[-1] = rec = [{rec}, None]
        if key in rec[0] and rec[1] is None:
            rec[1] = key
        rec[0].add(key)

    i = ws(s, 0).end()
    while True:
        c = s[i:i + 1]
        if c == "{" or c == "[":
            is_obj = c == "{"
            i = ws(s, i + 1).end()
            if s[i:i + 1] == ("}" if is_obj else "]"):
                val, i = ({} if is_obj else []), i + 1
            else:
                kinds.append(is_obj)
                if len(kinds) <= _KEPT_LEVELS:
                    kept.append([[], None])
                if is_obj:
                    key, i = read_key(i)
                    add_key(key, True)
                continue
        elif c == '"':
            val, i = scanstring(s, i + 1, True)
            if len(kinds) > _KEPT_LEVELS and lone is None and _has_surrogate(val):
                lone = val
        elif s.startswith("null", i):
            val, i = None, i + 4
        elif s.startswith("true", i):
            val, i = True, i + 4
        elif s.startswith("false", i):
            val, i = False, i + 5
        else:
            m = NUMBER_RE.match(s, i)
            if not m:
                for name in ("NaN", "Infinity", "-Infinity"):
                    if s.startswith(name, i):
                        _no_constant(name)
                raise JSONDecodeError("Expecting value", s, i)
            integer, frac, exp = m.groups()
            val = _finite_float(integer + (frac or "") + (exp or "")) if frac or exp else _double_range_int(integer)
            i = m.end()
        while True:  # `val` is complete: it goes into the innermost open container, which may close here
            if not kinds:
                i = ws(s, i).end()
                if i != len(s):
                    raise JSONDecodeError("Extra data", s, i)
                if lone is not None:
                    raise ValueError(f"lone surrogate escape in string {ascii(lone[:40])}")
                return val
            is_obj = kinds[-1]
            if len(kinds) <= _KEPT_LEVELS:
                top = kept[-1]
                top[0].append((top[1], val) if is_obj else val)
            i = ws(s, i).end()
            c = s[i:i + 1]
            if c == ",":
                i = ws(s, i + 1).end()
                if is_obj:
                    key, i = read_key(i)
                    add_key(key, False)
                break
            if c != ("}" if is_obj else "]"):
                raise JSONDecodeError("Expecting ',' delimiter", s, i)
            i += 1
            if len(kinds) <= _KEPT_LEVELS:
                items = kept.pop()[0]
                val = _no_duplicates(items) if is_obj else items
            else:
                if is_obj:
                    rec = deep_keys.pop()
                    if not isinstance(rec, str) and rec[1] is not None:
                        raise _DuplicateKey(rec[1])
                val = {} if is_obj else []
            kinds.pop()


def _parse_header(text):
    """The header's JSON: json.loads with the duplicate-key check and numbers limited as in reader.cpp."""
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_no_constant,
                          parse_float=_finite_float, parse_int=_double_range_int)
    except RecursionError:
        return _loads_deep(text)


def _lone_surrogate(obj):
    """The first key or string in a parsed JSON value that holds a lone surrogate (a \\ud800-\\udfff escape
    without its pair, which json.loads accepts and UTF-8 cannot encode; the C++ reader refuses it), else None."""
    stack = [obj]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            stack.extend(x.keys())
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
        elif isinstance(x, str) and any(0xD800 <= ord(ch) <= 0xDFFF for ch in x):
            return x
    return None


def _is_uint(x):
    return isinstance(x, int) and not isinstance(x, bool) and x >= 0


def _is_u64(x):
    """A non-negative integer below 2^64, as reader.cpp's json_u64 (its parser reads a larger integer as a double)."""
    return _is_uint(x) and x < 2**64


def parse_key(name):
    """(iteration, layer, kind) for a name `it{i}/L{l}/{kind}`, else None."""
    m = KEY_RE.match(name)
    return (int(m.group(1)), int(m.group(2)), m.group(3)) if m else None


class SpTrace:
    def __init__(self, path):
        self.path = path
        # Anything but a regular file is refused, before the open for a FIFO (its open blocks until a writer
        # appears) and after it for the file actually opened.
        try:
            pre = os.stat(path)
        except OSError:
            pre = None  # the open below reports it
        if pre is not None and not stat.S_ISREG(pre.st_mode):
            raise SpTraceError(path, "", 0, "not a regular file")
        fd = os.open(path, os.O_RDONLY)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise SpTraceError(path, "", 0, "not a regular file")
        except BaseException:
            os.close(fd)
            raise
        with os.fdopen(fd, "rb") as f:
            size = f.seek(0, 2)
            if size < 8:
                raise SpTraceError(path, "", size, f"file is {size} bytes, shorter than the 8-byte header length")
            try:
                self._buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            except ValueError as e:  # truncated to 0 bytes since the size check
                raise SpTraceError(path, "", 0, f"cannot map: {e}") from None
        n = int.from_bytes(self._buf[:8], "little")
        if n > size - 8:
            raise SpTraceError(path, "header", 0, f"header length {n} exceeds the {size - 8} bytes after the length field")
        if n == 0:
            raise SpTraceError(path, "header", 8, "empty JSON header")
        if n > MAX_HEADER_BYTES:
            raise SpTraceError(path, "header", 0, f"header length {n} exceeds the {MAX_HEADER_BYTES}-byte limit")
        raw = bytes(self._buf[8:8 + n])
        if raw[:1] != b"{":
            raise SpTraceError(path, "header", 8, "JSON header does not start with '{'")
        try:
            header = _parse_header(raw.decode("utf-8"))
        except _DuplicateKey as e:  # as reader.cpp: the key as the field, at its first occurrence
            raise SpTraceError(path, e.key, _name_offset(raw, e.key), "duplicate JSON key") from None
        except (UnicodeDecodeError, ValueError, RecursionError) as e:
            raise SpTraceError(path, "header", 8, f"invalid JSON: {e}") from None
        bad = _lone_surrogate(header)
        if bad is not None:
            raise SpTraceError(path, "header", 8,
                               f"invalid JSON: lone surrogate escape in string {ascii(bad[:40])}")
        if not isinstance(header, dict):
            raise SpTraceError(path, "header", 8, "JSON header is not an object")
        self.data_start = 8 + n
        data_size = size - self.data_start
        self.metadata = {}
        self.tensors = {}  # name -> dict(dtype, shape, begin, end)
        for name, e in header.items():
            if name == "__metadata__":
                if not isinstance(e, dict):
                    raise SpTraceError(path, name, _name_offset(raw, name), "__metadata__ must be an object of strings")
                for k, v in e.items():
                    if not isinstance(v, str):
                        raise SpTraceError(path, "__metadata__." + k, _name_offset(raw, k), "metadata value is not a string")
                self.metadata = dict(e)
                continue
            if not name:
                raise SpTraceError(path, "header", _name_offset(raw, name), "empty tensor name")
            if not isinstance(e, dict):
                raise SpTraceError(path, name, _name_offset(raw, name), "tensor entry is not an object")
            extra = set(e) - {"dtype", "shape", "data_offsets"}
            if extra:
                raise SpTraceError(path, name, _name_offset(raw, name), f"unknown field '{sorted(extra)[0]}'")
            dt = e.get("dtype")
            if not isinstance(dt, str):
                raise SpTraceError(path, name, _name_offset(raw, name), "missing or non-string 'dtype'")
            if dt not in DTYPES:
                raise SpTraceError(path, name, _name_offset(raw, name), f"unknown dtype '{dt[:32]}'")
            shape = e.get("shape")
            if not isinstance(shape, list) or not all(_is_uint(d) and d < 2**63 for d in shape):
                raise SpTraceError(path, name, _name_offset(raw, name), "shape entries must be non-negative integers")
            nbytes = DTYPES[dt][1]
            for d in shape:
                nbytes *= d or 1  # overflow is judged on the non-zero dimensions, as in reader.cpp
            if nbytes >= 2**64:
                raise SpTraceError(path, name, _name_offset(raw, name), "shape product x dtype size overflows 64 bits")
            if 0 in shape:
                nbytes = 0
            off = e.get("data_offsets")
            if not isinstance(off, list) or len(off) != 2:
                raise SpTraceError(path, name, _name_offset(raw, name), "'data_offsets' must be [begin, end]")
            if not all(_is_u64(o) for o in off):
                raise SpTraceError(path, name, _name_offset(raw, name), "'data_offsets' must be non-negative integers")
            b, en = off
            if b > en:
                raise SpTraceError(path, name, _name_offset(raw, name), f"data_offsets begin {b} > end {en}")
            if en > data_size:
                raise SpTraceError(path, name, self.data_start + min(b, data_size),
                                   f"data_offsets [{b}, {en}) outside the {data_size}-byte data section")
            if en - b != nbytes:
                raise SpTraceError(path, name, self.data_start + b,
                                   f"byte range of {en - b} does not match shape x {dt} = {nbytes} bytes")
            self.tensors[name] = {"dtype": dt, "shape": tuple(shape), "begin": b, "end": en}
        version = self.metadata.get("format_version")
        if version is not None and version != FORMAT_VERSION:
            raise SpTraceError(path, "__metadata__.format_version", _name_offset(raw, "format_version"),
                               f"unsupported format version '{version[:16]}' (this reader knows {FORMAT_VERSION})")
        cursor, prev = 0, None
        for name, t in sorted(self.tensors.items(), key=lambda kv: (kv[1]["begin"], kv[1]["end"], kv[0])):
            if t["begin"] < cursor:
                raise SpTraceError(path, name, self.data_start + t["begin"], f"byte range overlaps tensor '{prev}'")
            if t["begin"] > cursor:
                raise SpTraceError(path, name, self.data_start + cursor,
                                   f"hole of {t['begin'] - cursor} bytes in the data section before this tensor")
            cursor, prev = t["end"], name
        if cursor != data_size:
            raise SpTraceError(path, prev or "data", self.data_start + cursor,
                               f"{data_size - cursor} trailing bytes after the last tensor")

    def raw(self, name):
        """Zero-copy numpy view with the storage dtype (BF16 -> uint16 bit patterns)."""
        t = self.tensors[name]
        dt = np.dtype(DTYPES[t["dtype"]][0])
        n = (t["end"] - t["begin"]) // dt.itemsize
        a = np.frombuffer(self._buf, dtype=dt, count=n, offset=self.data_start + t["begin"]) if n else np.empty(0, dt)
        return a.reshape(t["shape"])

    def array(self, name):
        """Numpy array with the natural dtype; BF16 is widened to float32 exactly (bits << 16)."""
        a = self.raw(name)
        if self.tensors[name]["dtype"] == "BF16":
            return (a.astype(np.uint32) << 16).view(np.float32)
        return a

    def f32(self, name):
        return self.array(name).astype(np.float32)

    def unpack_mask(self, name, n):
        """Bit-packed U8 mask (little-endian bit order) -> n uint8 values 0/1."""
        a = self.raw(name)
        if a.dtype != np.uint8 or a.size != (n + 7) // 8:
            raise SpTraceError(self.path, name, self.data_start + self.tensors[name]["begin"],
                               f"not a U8 bit-packed mask of {n} elements")
        if n % 8 and int(a.reshape(-1)[-1]) >> (n % 8):  # section 3: the bits past the n-th are 0
            raise SpTraceError(self.path, name, self.data_start + self.tensors[name]["end"] - 1,
                               f"bits past the {n} mask elements are set in its last byte")
        return np.unpackbits(a.reshape(-1), bitorder="little")[:n]

    def keys(self):
        """Sorted (iteration, layer, kind) of every tensor named it{i}/L{l}/{kind}."""
        return sorted(k for k in map(parse_key, self.tensors) if k)

    def layers(self):
        return json.loads(self.metadata.get("layers", "[]"))


def _compare(trace, expected_path):
    """Checks every tensor against the C++ writer's expected bits; returns the number checked."""
    with open(expected_path) as f:
        exp = json.load(f)
    if trace.metadata != exp["metadata"]:
        want = exp["metadata"]
        keys = sorted(k for k in set(trace.metadata) | set(want) if trace.metadata.get(k) != want.get(k))
        raise CheckFailed(f"metadata differs from {expected_path} in key(s) {', '.join(keys)[:200]}")
    if set(trace.tensors) != set(exp["tensors"]):
        raise CheckFailed("tensor names differ")
    for name, e in exp["tensors"].items():
        t = trace.tensors[name]
        if t["dtype"] != e["dtype"] or list(t["shape"]) != e["shape"]:
            raise CheckFailed(f"{name}: dtype/shape {t['dtype']} {t['shape']} != {e['dtype']} {e['shape']}")
        raw = trace.raw(name).reshape(-1)
        if e["dtype"] in ("F32", "F16"):  # compare the storage bits, not the float values
            raw = raw.view("<u4" if e["dtype"] == "F32" else "<u2")
        got = [int(x) for x in raw]
        if got != e["raw"]:
            raise CheckFailed(f"{name}: raw values differ: {got} != {e['raw']}")
        if "f32_bits" in e:
            f = trace.f32(name).reshape(-1)
            bits = f.view("<u4")
            for i, want in enumerate(e["f32_bits"]):
                want_nan = (want & 0x7F800000) == 0x7F800000 and (want & 0x7FFFFF) != 0
                if want_nan:
                    if not np.isnan(f[i]):
                        raise CheckFailed(f"{name}[{i}]: expected NaN, got {f[i]}")
                elif int(bits[i]) != want:
                    raise CheckFailed(f"{name}[{i}]: float32 bits {int(bits[i]):#010x} != {want:#010x}")
    return len(exp["tensors"])


def _check_sparsity(trace):
    """Recomputes act and dz_mask densities from the tensors and compares with the `sparsity` metadata
    (exercises the mask bit order independently of the C++ code); returns the number of values checked."""
    layers = {l["index"]: l for l in trace.layers()}
    checked = 0
    for s in json.loads(trace.metadata.get("sparsity", "[]")):
        n_out = int(np.prod(layers[s["layer"]]["output"]))
        for i, it in enumerate(s["iterations"]):
            name = f"it{it}/L{s['layer']}/"
            if name + "act" in trace.tensors:
                got = float(np.count_nonzero(trace.array(name + "act"))) / trace.array(name + "act").size
                if abs(got - s["act_density"][i]) > 1e-12:
                    raise CheckFailed(f"{name}act density {got} != metadata {s['act_density'][i]}")
                checked += 1
            if name + "dz_mask" in trace.tensors and "dz_mask_density" in s:
                got = float(trace.unpack_mask(name + "dz_mask", n_out).mean())
                if abs(got - s["dz_mask_density"][i]) > 1e-12:
                    raise CheckFailed(f"{name}dz_mask density {got} != metadata {s['dz_mask_density'][i]}")
                checked += 1
    return checked


def _breaks_line(c):
    """A character that ends or reorders a line in a terminal or a str.splitlines(): an ASCII control, a C1
    control (U+0085 NEL, U+009B CSI), U+2028 / U+2029 or a bidi control (the set of error.h's one_line)."""
    o = ord(c)
    return (o < 0x20 or 0x7F <= o <= 0x9F or o in (0x2028, 0x2029) or 0x202A <= o <= 0x202E
            or 0x2066 <= o <= 0x2069)


def _one_line(s):
    """`s` on one line, as error.h's one_line writes it: ASCII controls as C escapes (\\n, \\t, \\x1b), the other
    characters of _breaks_line as the \\xNN of their UTF-8 bytes: a name from the file may hold a newline."""
    esc = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
    return "".join(esc.get(c) or "".join(f"\\x{b:02x}" for b in c.encode("utf-8", "surrogatepass"))
                   if _breaks_line(c) else c for c in s)


def _error(msg):
    print(f"read_sptrace.py: error: {_one_line(msg)}", file=sys.stderr)


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(description="Read and summarise a .sptrace file (docs/trace-format.md).")
    ap.add_argument("file")
    ap.add_argument("--compare", metavar="EXPECTED_JSON", help="check values against a JSON dump (tests)")
    ap.add_argument("--check-sparsity", action="store_true",
                    help="recompute densities from the tensors and compare with the `sparsity` metadata")
    args = ap.parse_args(argv)
    try:
        t = SpTrace(args.file)
    except SpTraceError as e:
        _error(str(e))
        return 2
    except OSError as e:  # named as the C++ reader does: the file first (a seek's EINVAL carries no file name)
        _error(f"{args.file}: {e.strerror or e}")
        return 2
    try:
        if args.compare:
            n = _compare(t, args.compare)
            print(f"ok: {n} tensors bit-exact against {args.compare}")
            return 0
        if args.check_sparsity:
            n = _check_sparsity(t)
            if n == 0:
                _error("no densities to check")
                return 1
            print(f"ok: {n} densities match the sparsity metadata")
            return 0
    except CheckFailed as e:
        _error(f"{args.file}: {e}")
        return 2
    except OSError as e:  # --compare file missing or unreadable
        _error(f"{e.filename or args.compare}: {e.strerror or e}")
        return 2
    except json.JSONDecodeError as e:  # --compare file or a metadata value is not JSON
        where = args.compare if args.compare else f"{args.file}: __metadata__"
        _error(f"{where}: invalid JSON: {e}")
        return 2
    except (KeyError, TypeError, IndexError, ValueError) as e:  # JSON of the wrong shape
        where = args.compare if args.compare else f"{args.file}: __metadata__"
        _error(f"{where}: unexpected structure ({type(e).__name__}: {e})")
        return 2
    print(f"file: {t.path}\ntensors: {len(t.tensors)}")
    for k in sorted(t.metadata):
        print(f"  meta {k}: {t.metadata[k][:60]}")
    for name, info in t.tensors.items():
        print(f"  {name:32s} {info['dtype']:5s} {list(info['shape'])}")
    return 0


if __name__ == "__main__":
    # Piped into a reader that stops early (`| head`): end as cat does, by SIGPIPE, not with a BrokenPipeError
    # traceback. Only when run as a command; an importing program keeps Python's default.
    import signal
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main(sys.argv[1:]))
