#!/usr/bin/python3
"""Builds report/ (report.md, report.html, report.json, PNG plots) from the outputs of the main job.

Inputs (all in --run DIR): train.json (spartan-train --out-json), sim/stats.json (spartan-sim run),
area/area.json (spartan-area). Every number in the report is read from those files; nothing is computed
here except means and ratios of those numbers, each labelled with its source. The report directory is
written to a temporary directory and renamed at the end, so a failure leaves no half-written report.
The inputs are checked before anything is written: required keys and types, finite numbers, the same model,
device and activation densities in train.json and stats.json, the same GPU in stats.json and area.json, and
the simulation's own checks (checks.passed overall and per layer, RTL mismatches); the figures printed beside
each other must agree (each layer's and the overall ratios with their times, the sums and means with the
layers', RTL deviations with their cycles and the cycle tolerance), times must be positive and fractions in
[0, 1]; the ImageNet-scale replays (DIR/scale/t32, t128, and when present t32e16 with several engines,
t32e16mem with them fetching descriptors and writing completion records, and t32mc with the monitors' flush
completion counter) are
checked the same way and against the main replay's GPU. The GEMM times of the three passes, how each call ran (tiles or one sgemm) and the compaction times are
read from the trace's header (DIR/run.sptrace) when it is there.
Exit status: 0, or 2 with one line (and no report written) if an input is missing, malformed or inconsistent,
or records failed checks or RTL mismatches.
"""
import argparse
import datetime
import html
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile

# Spartan paper (Dong et al., IEEE TPDS 32(10), 2021), abstract: profiling overhead reduction and
# conv-layer speedups on ImageNet.
PAPER_PROFILE_RATIO = 52.5
PAPER_CONV_SPEEDUPS = {"AlexNet": 3.4, "VGG-16": 2.14, "ResNet-18": 2.02}


class ReportError(Exception):
    pass


# Section 2 shows at most this many recorded steps (columns of the table, lines of the plot).
MAX_SPARSITY_STEPS = 8


def spread_evenly(items, k):
    """At most k of the sorted list items, evenly spread, the first and the last included."""
    if len(items) <= k:
        return list(items)
    return [items[j] for j in sorted({round(n * (len(items) - 1) / (k - 1)) for n in range(k)})]


def load_json(path, what):
    try:
        with open(path, "r", encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise ReportError(f"{path}: missing ({what})")
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ReportError(f"{path}: not valid JSON ({what}): {e}")
    except OSError as e:  # a directory, no permission, an I/O error: one line, not a traceback
        raise ReportError(f"{path}: not readable ({what}): {e.strerror or e.__class__.__name__}")


def get(d, *keys, default=None):
    for k in keys:
        if isinstance(d, dict) and k in d:
            d = d[k]
        elif isinstance(d, list) and isinstance(k, int) and -len(d) <= k < len(d):
            d = d[k]
        else:
            return default
    return d


def is_num(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def check_finite(x, where):
    """Refuses NaN and +-inf anywhere in an input (Python's json accepts them; the tools never write them)."""
    if isinstance(x, float) and not math.isfinite(x):
        raise ReportError(f"{where}: not a finite number ({x})")
    if isinstance(x, dict):
        for k, v in x.items():
            check_finite(v, f"{where}.{k}")
    elif isinstance(x, list):
        for i, v in enumerate(x):
            check_finite(v, f"{where}[{i}]")


def need(d, fname, path, kind):
    """The value at `path` (keys/indices) of d, which must exist and be of `kind` ('num', 'int', 'str', 'bool',
    'list', 'dict', 'nonempty list'); a ReportError naming file and key otherwise."""
    v, where = d, fname
    for k in path:
        where += f"[{k}]" if isinstance(k, int) else f".{k}"
        if isinstance(k, int) and isinstance(v, list) and -len(v) <= k < len(v):
            v = v[k]
        elif isinstance(k, str) and isinstance(v, dict) and k in v:
            v = v[k]
        else:
            raise ReportError(f"{where}: missing")
    ok = {"num": is_num(v), "int": isinstance(v, int) and not isinstance(v, bool), "str": isinstance(v, str),
          "bool": isinstance(v, bool), "list": isinstance(v, list), "dict": isinstance(v, dict),
          "nonempty list": isinstance(v, list) and len(v) > 0}[kind]
    if not ok:
        raise ReportError(f"{where}: expected {kind}, got {json.dumps(v)[:60]}")
    return v


def validate(train, sim, area):
    """Required keys, types and finite values of the three inputs; the simulation's own checks; the files
    describe the same run (model, device, densities, GPU)."""
    for obj, fname in ((train, "train.json"), (sim, "stats.json"), (area, "area.json")):
        if not isinstance(obj, dict):
            raise ReportError(f"{fname}: expected a JSON object, got {type(obj).__name__}")
        check_finite(obj, fname)
    T, S, A = "train.json", "stats.json", "area.json"
    for k in ("model", "device"):
        need(train, T, [k], "str")
    need(train, T, ["test_accuracy"], "num")
    need(train, T, ["iterations"], "int")
    for i, L in enumerate(need(train, T, ["layers"], "nonempty list")):
        need(train, T, ["layers", i, "layer"], "int")
        its = need(train, T, ["layers", i, "iterations"], "list")
        dens = need(train, T, ["layers", i, "act_density"], "list")
        if len(its) != len(dens) or not all(isinstance(x, int) for x in its) or not all(is_num(x) for x in dens):
            raise ReportError(f"{T}.layers[{i}]: iterations and act_density must be equal-length lists of numbers")
    # the simulation's own verdict first: a failed run gives no report
    if not need(sim, S, ["checks", "passed"], "bool"):
        raise ReportError(f"{S}: checks.passed is false (functional checks of the simulation failed, "
                          f"{get(sim, 'checks', 'extension_mismatches', default='?')} extension mismatches; "
                          "see summary.txt): no report from a failed run")
    rtl = sim.get("rtl")
    if rtl is not None:
        need(sim, S, ["rtl"], "dict")
        tot, lay = need(sim, S, ["rtl", "mismatches"], "int"), 0
        for i, _ in enumerate(need(sim, S, ["rtl", "layers"], "list")):
            lay += need(sim, S, ["rtl", "layers", i, "mismatches"], "int")
        if tot or lay:
            raise ReportError(f"{S}: rtl: {max(tot, lay)} RTL/TLM mismatches "
                              "(must be 0; see summary.txt): no report from a failed run")
    for k in ("preset",):
        need(sim, S, ["gpu", k], "str")
    need(sim, S, ["gpu", "l2_slices"], "int")
    for k in ("kernel_launch_ns", "host_mmio_read_ns", "host_mmio_write_ns"):
        need(sim, S, ["options", k], "num")
    for part in ("profile", "convert"):
        for k in ("sw_ns", "hw_ns", "ratio"):
            need(sim, S, ["overall", part, k], "num")
    need(sim, S, ["overall", "profile", "mean_layer_ratio"], "num")
    for k in ("hw_ns", "ratio"):
        need(sim, S, ["overall", "profile", "memset_launched", k], "num")
    # null when no replayed layer's input is a ReLU output (no mean over an empty set)
    if need(sim, S, ["overall", "profile", "relu_input_layers"], "int") > 0:
        need(sim, S, ["overall", "profile", "mean_layer_ratio_relu_inputs"], "num")
    for i, _ in enumerate(need(sim, S, ["layers"], "nonempty list")):
        for k in ("iteration", "layer"):
            need(sim, S, ["layers", i, k], "int")
        need(sim, S, ["layers", i, "name"], "str")
        for k in ("density", "profile_ratio", "convert_ratio"):
            need(sim, S, ["layers", i, k], "num")
        for side in ("software", "hardware"):
            for part in ("profile", "convert"):
                need(sim, S, ["layers", i, side, part, "time_ns"], "num")
        if "gemm" in sim["layers"][i]:
            need(sim, S, ["layers", i, "gemm"], "dict")
    for i, _ in enumerate(need(area, A, ["units"], "nonempty list")):
        need(area, A, ["units", i, "name"], "str")
    need(area, A, ["gpu"], "dict")
    consistency(train, sim)
    # the same run in all three files
    tm, sm = train["model"], get(sim, "trace", "model")
    if sm and sm != tm:
        raise ReportError(f"{T} is from model '{tm}' but {S} replayed a trace of '{sm}': not the same run")
    td, sd = train["device"], get(sim, "trace", "device")
    if sd and sd != td:
        raise ReportError(f"{T} was measured on '{td}' but {S}'s trace on '{sd}': not the same run")
    by_layer = {L["layer"]: L for L in train["layers"]}
    compared = 0
    for L in sim["layers"]:
        t = by_layer.get(L["layer"])
        if t is None:
            raise ReportError(f"{S}: layer {L['layer']} ({L['name']}) is not in {T}: not the same run")
        if t.get("name") not in (None, L["name"]):
            raise ReportError(f"{S}: layer {L['layer']} is '{L['name']}' but '{t.get('name')}' in {T}: not the same run")
        dens = dict(zip(t["iterations"], t["act_density"]))
        if L["iteration"] in dens:
            compared += 1
            if not math.isclose(dens[L["iteration"]], L["density"], rel_tol=1e-6, abs_tol=1e-9):
                raise ReportError(f"{S}: it{L['iteration']}/L{L['layer']} density {L['density']:.6f} but "
                                  f"{dens[L['iteration']]:.6f} in {T}: not the same run")
    if not compared:
        raise ReportError(f"{S}: none of its (iteration, layer) pairs has a density in {T}: not the same run")
    ag, sg = get(area, "gpu", "name"), sim["gpu"]["preset"]
    if ag is not None and ag != sg:
        raise ReportError(f"{A} is for GPU '{ag}' but {S} simulated '{sg}': not the same run")
    asl = get(area, "gpu", "l2_slices")
    if is_num(asl) and asl != sim["gpu"]["l2_slices"]:
        raise ReportError(f"{A}: {asl} L2 slices but {S} simulated {sim['gpu']['l2_slices']}: not the same GPU")
    return compared


def close(a, b, rel=1e-6, abs_tol=1e-9):
    return math.isclose(a, b, rel_tol=rel, abs_tol=abs_tol)


def consistency(train, sim):
    """The figures the report prints beside each other must agree with each other: a stats.json edited by hand,
    or written by a tool with a bug, would otherwise give a report whose bold ratio is not its own times'."""
    T, S = "train.json", "stats.json"
    acc = train["test_accuracy"]
    if not 0 <= acc <= 1:
        raise ReportError(f"{T}.test_accuracy: {acc} is not a fraction in [0, 1]")
    sl = sim["layers"]
    for i, L in enumerate(sl):
        where = f"{S}.layers[{i}] (it{L['iteration']}/L{L['layer']})"
        if not 0 <= L["density"] <= 1:
            raise ReportError(f"{where}.density: {L['density']} is not a fraction in [0, 1]")
        if not need(sim, S, ["layers", i, "checks", "passed"], "bool"):
            raise ReportError(f"{where}.checks.passed is false: the layer's functional checks did not pass (see "
                              "summary.txt): no report from a failed run")
        for part in ("profile", "convert"):
            sw, hw = L["software"][part]["time_ns"], L["hardware"][part]["time_ns"]
            for side, t in (("software", sw), ("hardware", hw)):
                oh = get(L, side, part, "overhead_ns")
                if t <= 0 or (is_num(oh) and not 0 <= oh <= t * (1 + 1e-9)):
                    raise ReportError(f"{where}.{side}.{part}: time {t} ns, overhead {oh} ns: times must be > 0 and "
                                      "hold their fixed costs")
            if not close(L[f"{part}_ratio"], sw / hw):
                raise ReportError(f"{where}.{part}_ratio: {L[f'{part}_ratio']} but its times give {sw / hw:.6g}: "
                                  "inconsistent")
    for part in ("profile", "convert"):
        o = sim["overall"][part]
        for key, side in (("sw_ns", "software"), ("hw_ns", "hardware")):
            tot = sum(L[side][part]["time_ns"] for L in sl)
            if not close(o[key], tot):
                raise ReportError(f"{S}.overall.{part}.{key}: {o[key]} but the layers' times sum to {tot:.6g}: "
                                  "inconsistent")
        if not close(o["ratio"], o["sw_ns"] / o["hw_ns"]):
            raise ReportError(f"{S}.overall.{part}.ratio: {o['ratio']} but sw_ns / hw_ns = "
                              f"{o['sw_ns'] / o['hw_ns']:.6g}: inconsistent")
    pp = sim["overall"]["profile"]
    ml = pp["memset_launched"]
    want = pp["hw_ns"] + len(sl) * sim["options"]["kernel_launch_ns"]
    if not ml["hw_ns"] > 0:
        raise ReportError(f"{S}.overall.profile.memset_launched.hw_ns: {ml['hw_ns']}: times must be > 0")
    if not close(ml["hw_ns"], want) or not close(ml["ratio"], pp["sw_ns"] / ml["hw_ns"]):
        raise ReportError(f"{S}.overall.profile.memset_launched: hw_ns {ml['hw_ns']}, ratio {ml['ratio']} but hw_ns + "
                          f"layers x kernel_launch_ns = {want:.6g}: inconsistent")
    if not close(pp["mean_layer_ratio"], sum(L["profile_ratio"] for L in sl) / len(sl)):
        raise ReportError(f"{S}.overall.profile.mean_layer_ratio: {pp['mean_layer_ratio']} is not the mean of the "
                          "layers' profile_ratio: inconsistent")
    if all(isinstance(L.get("relu_input"), bool) for L in sl):
        relu = [L for L in sl if L["relu_input"]]
        if pp["relu_input_layers"] != len(relu):
            raise ReportError(f"{S}.overall.profile.relu_input_layers: {pp['relu_input_layers']} but {len(relu)} "
                              "layers have relu_input true: inconsistent")
        if relu and not close(pp["mean_layer_ratio_relu_inputs"], sum(L["profile_ratio"] for L in relu) / len(relu)):
            raise ReportError(f"{S}.overall.profile.mean_layer_ratio_relu_inputs is not the mean over the layers "
                              "with relu_input: inconsistent")
    for i, L in enumerate(sl):
        g = L.get("gemm", {})
        have = [k for k in ("dense_ms", "tile_sparse_ms") if k in g]
        if have and len(have) != 2:
            raise ReportError(f"{S}.layers[{i}].gemm has {have[0]} without the other time")
        if have:
            d, t = need(sim, S, ["layers", i, "gemm", "dense_ms"], "num"), need(sim, S, ["layers", i, "gemm",
                                                                                      "tile_sparse_ms"], "num")
            if d <= 0 or t <= 0:
                raise ReportError(f"{S}.layers[{i}].gemm: GEMM times must be > 0 ms (dense {d}, tile-sparse {t})")
            if is_num(g.get("speedup_measured")) and not close(g["speedup_measured"], d / t):
                raise ReportError(f"{S}.layers[{i}].gemm.speedup_measured: {g['speedup_measured']} but dense_ms / "
                                  f"tile_sparse_ms = {d / t:.6g}: inconsistent")
    rtl = sim.get("rtl")
    if rtl is not None:
        for i, j in enumerate(rtl["layers"]):
            r, t = (need(sim, S, ["rtl", "layers", i, k], "num") for k in ("rtl_cycles", "tlm_cycles"))
            # spartan-sim's rule (rtl.cycle_tolerance, rtl/include/spartan/rtl/cycle_tolerance.h): within 5 % of
            # the TLM's cycles or 2 cycles, for the monitor's counting and flush parts each (so up to 4 cycles on
            # their sum); a layer outside it is counted as a mismatch, so a file with none has every layer inside.
            floor = 4 if j.get("unit") == "monitor" else 2
            if abs(round(r) - round(t)) > max(0.05 * round(t), floor) or j.get("timing_within_tolerance") is False:
                raise ReportError(f"{S}.rtl.layers[{i}]: RTL {r:g} cycles against TLM {t:g}, outside the cycle "
                                  "tolerance, yet no mismatch is recorded: inconsistent")
            dev = j.get("cycle_deviation_percent")
            if is_num(dev) and t > 0 and not close(dev, 100 * (r - t) / t, rel=1e-6, abs_tol=1e-6):
                raise ReportError(f"{S}.rtl.layers[{i}].cycle_deviation_percent: {dev} but its cycles give "
                                  f"{100 * (r - t) / t:.4g}: inconsistent")


def trace_metadata(path):
    """The `__metadata__` object of a trace's safetensors header: (dict, None) or (None, reason)."""
    try:
        with open(path, "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
            if n > (1 << 28):
                return None, f"{path}: header too large"
            meta = json.loads(f.read(n)).get("__metadata__", {})
    except (OSError, struct.error, ValueError, AttributeError) as e:
        return None, f"{path} not readable ({e.__class__.__name__})"
    return (meta, None) if isinstance(meta, dict) else (None, f"{path}: __metadata__ is not an object")


def read_trace_gemm(path, sim):
    """Forward/backward GEMM and compaction times (ms) of the replayed (iteration, layer) pairs from the trace's
    safetensors header; (dict keyed by (iteration, layer), None) or (None, reason)."""
    meta, why = trace_metadata(path)
    if meta is None:
        return None, why
    try:
        gt = meta.get("gemm_times")
        gt = json.loads(gt) if isinstance(gt, str) else gt
    except ValueError as e:
        return None, f"{path} not readable ({e.__class__.__name__})"
    if not isinstance(gt, list):
        return None, f"{path} has no gemm_times"
    if meta.get("model") not in (None, get(sim, "trace", "model")):
        return None, f"{path} is from model '{meta.get('model')}', not the replayed one"
    want = {(L["iteration"], L["layer"]) for L in sim["layers"]}
    out = {(g.get("iteration"), g.get("layer")): g for g in gt if isinstance(g, dict)}
    out = {k: v for k, v in out.items() if k in want}
    if len(out) != len(want):
        return None, f"{path} lacks GEMM times of {len(want) - len(out)} replayed layer(s)"
    for (it, l), g in sorted(out.items()):
        for p in ("fwd", "bwd_data", "bwd_weight"):
            d = get(g, p, "dense_ms")
            if not (is_num(d) and math.isfinite(d) and d > 0):  # a missing dense time would read as 0 ms
                return None, f"{path}: gemm_times it{it}/L{l} {p} has no dense_ms (got {json.dumps(d)})"
    return out, None


def fmt(x, spec=".2f", dash="-"):
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return dash
    try:
        return format(x, spec)
    except (TypeError, ValueError):
        return str(x)


def md_table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    for r in rows:
        out.append("| " + " | ".join(str(c) for c in r) + " |")
    return "\n".join(out)


def git(*args):
    try:
        r = subprocess.run(["git", *args], capture_output=True, text=True, timeout=10,
                           cwd=os.path.dirname(os.path.abspath(__file__)))
        return r.stdout.strip() if r.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def provenance(train, sim, area):
    """Which code produced the outputs: a commit recorded in an input if any, else only the commit of this
    script's checkout when the report is written (the binaries may be older), with its tree's state."""
    recorded = {}
    for obj, fname in ((train, "train.json"), (sim, "stats.json"), (area, "area.json")):
        c = next((v for v in (get(obj, "commit"), get(obj, "git_commit"), get(obj, "build", "commit"))
                  if isinstance(v, str) and v and v != "unknown"), None)
        if c:
            recorded[fname] = c
    head = git("rev-parse", "--short=12", "HEAD") or "unknown"
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"input_commits": recorded, "report_commit": head,
            "report_tree_dirty": None if status is None else bool(status)}


def gnuplot(script, workdir):
    """Runs gnuplot on a script; returns True if it produced output without error."""
    gp = shutil.which("gnuplot")
    if not gp:
        return False
    r = subprocess.run([gp], input=script, text=True, cwd=workdir, capture_output=True, timeout=120)
    if r.returncode != 0:
        sys.stderr.write("make_report: gnuplot: " + r.stderr.strip().splitlines()[-1] + "\n" if r.stderr else "")
        return False
    return True


def write_dat(path, header, rows):
    with open(path, "w", encoding="utf-8") as f:
        f.write("# " + "\t".join(header) + "\n")
        for r in rows:
            f.write("\t".join(str(c) for c in r) + "\n")


GP_HEAD = ('set terminal pngcairo size 1000,520 font ",11"\nset grid ytics\nset key outside right top\n'
           'set style data histograms\nset style fill solid 0.85 border -1\nset boxwidth 0.9\n'
           'set xtics rotate by -45 scale 0\n')


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", required=True, help="directory with train.json, sim/, area/")
    ap.add_argument("--out", required=True, help="report directory to (re)write")
    ap.add_argument("--profile", default="quick")
    a = ap.parse_args()

    train = load_json(os.path.join(a.run, "train.json"), "spartan-train --out-json")
    sim = load_json(os.path.join(a.run, "sim", "stats.json"), "spartan-sim run")
    area = load_json(os.path.join(a.run, "area", "area.json"), "spartan-area")
    validate(train, sim, area)  # before anything is written
    rtl = get(sim, "rtl")

    parent = os.path.dirname(os.path.abspath(a.out)) or "."
    tmp = tempfile.mkdtemp(prefix=".report.tmp.", dir=parent)
    try:
        doc, md = build(a, train, sim, area, rtl, tmp)
        with open(os.path.join(tmp, "report.md"), "w", encoding="utf-8") as f:
            f.write(md)
        with open(os.path.join(tmp, "report.json"), "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
        with open(os.path.join(tmp, "report.html"), "w", encoding="utf-8") as f:
            f.write(to_html(md))
        for dat in [n for n in os.listdir(tmp) if n.endswith(".dat") or n.endswith(".gp")]:
            os.makedirs(os.path.join(tmp, "data"), exist_ok=True)
            os.replace(os.path.join(tmp, dat), os.path.join(tmp, "data", dat))
        old = None
        if os.path.exists(a.out):
            old = a.out.rstrip("/") + ".old." + str(os.getpid())
            os.replace(a.out, old)
        try:
            os.replace(tmp, a.out)
        except BaseException:
            if old:  # the new report could not take its place: the old one goes back
                os.replace(old, a.out)
            raise
        if old:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def tick_every(n, most=16):
    """gnuplot xtic() expression showing every k-th label of n (the labels of 48 layers overlap)."""
    k = max(1, math.ceil(n / most))
    return "xtic(1)" if k == 1 else f"xtic(int($0) % {k} == 0 ? stringcolumn(1) : '')"


def us(ns):
    return ns / 1e3 if is_num(ns) else None


def pct(part, whole):
    return 100.0 * part / whole if whole else None


def ratio(a, b):
    return a / b if b else None


def assumed_costs(sim, doc):
    """One paragraph: the assumed fixed costs the simulated times rest on (stats.json options)."""
    o = sim["options"]
    bc = o.get("host_monitor_broadcast")
    uf = o.get("units_file")
    doc["assumed_costs"] = {k: o.get(k) for k in ("kernel_launch_ns", "host_mmio_read_ns", "host_mmio_write_ns",
                                                  "host_monitor_broadcast", "units_file", "units")}
    return (f"assumed costs (stats.json `options`): kernel launch {fmt(o['kernel_launch_ns'], '.0f')} ns per software "
            f"kernel; host MMIO write {fmt(o['host_mmio_write_ns'], '.0f')} ns and read "
            f"{fmt(o['host_mmio_read_ns'], '.0f')} ns per unit register access; the count-table memset before the "
            "monitors count is charged its memory time but no launch (it depends on nothing the layer computes, so the "
            "driver can issue it ahead, off the critical path; docs/hw-units.md); FLUSH and the engine's set-up follow "
            "the producer in stream order, with no host round trip charged; "
            "monitor broadcast "
            + ("on (one charged write for all monitors, an assumed broadcast register window)" if bc is True else
               "off (every monitor's write charged)" if bc is False else "not recorded")
            + "; unit settings: " + (f"`{uf}`" if uf else "the defaults (no --units file)" if uf == "" else
                                     "not recorded (stats.json predates options.units_file)")
            + (" (all values in stats.json `options.units`)" if isinstance(o.get("units"), dict) else ""))


def slower_without_fixed(sl, part):
    """Layers whose hardware step is slower than the software one once the assumed fixed costs (overhead_ns)
    are taken out of both, or None when stats.json does not split the times."""
    k = 0
    for L in sl:
        sw, hw = get(L, "software", part), get(L, "hardware", part)
        if not (is_num(get(sw, "overhead_ns")) and is_num(get(hw, "overhead_ns"))):
            return None
        k += (sw["time_ns"] - sw["overhead_ns"]) < (hw["time_ns"] - hw["overhead_ns"])
    return k


def without_fixed(sl, part):
    k = slower_without_fixed(sl, part)
    return "" if k is None else f" with the assumed fixed costs, on {k} without them"


def fixed_split(sl, part, what_sw, what_hw):
    """Totals of a comparison with and without the assumed fixed costs (overhead_ns of each layer's step), or
    None if stats.json does not split the times."""
    tot = {"sw": 0.0, "hw": 0.0, "sw_oh": 0.0, "hw_oh": 0.0}
    for L in sl:
        for side, key in (("software", "sw"), ("hardware", "hw")):
            st = get(L, side, part)
            if not is_num(get(st, "overhead_ns")):
                return None
            tot[key] += st["time_ns"]
            tot[key + "_oh"] += st["overhead_ns"]
    sw_net, hw_net = tot["sw"] - tot["sw_oh"], tot["hw"] - tot["hw_oh"]
    tot["ratio_without"] = ratio(sw_net, hw_net)
    text = (f"Of the totals, the assumed fixed costs are {fmt(us(tot['sw_oh']))} us of the {what_sw}'s "
            f"{fmt(us(tot['sw']))} us ({fmt(pct(tot['sw_oh'], tot['sw']), '.0f')} %) and {fmt(us(tot['hw_oh']))} us of the "
            f"{what_hw}'s {fmt(us(tot['hw']))} us ({fmt(pct(tot['hw_oh'], tot['hw']), '.0f')} %); without them "
            f"(memory and compute time only, `overhead_ns` subtracted): {what_sw} {fmt(us(sw_net))} us, {what_hw} "
            f"{fmt(us(hw_net))} us, ratio {fmt(tot['ratio_without'])}x.")
    return tot, text


def build(a, train, sim, area, rtl, tmp):
    prov = provenance(train, sim, area)
    doc = {"generated_utc": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"),
           "commit": prov["report_commit"], "provenance": prov, "profile": a.profile}
    md = []
    dev = train.get("device", "unknown device")
    gpu = get(sim, "gpu", "preset", default="?")
    sl = sim["layers"]
    ov = sim["overall"]
    n = len(sl)
    md.append("# Spartan co-simulation report\n")
    dirty = {True: " (working tree with uncommitted changes)", False: "", None: " (tree state unknown)"}
    if prov["input_commits"]:
        made = "outputs of the binaries at " + ", ".join(f"`{c}` ({f})" for f, c in prov["input_commits"].items())
    else:
        made = ("outputs whose binaries are not identified (train.json, stats.json and area.json record no commit; "
                "the binaries may predate the report's commit)")
    md.append(f"Generated {doc['generated_utc']} by make_report.py at commit `{prov['report_commit']}`"
              f"{dirty[prov['report_tree_dirty']]}, profile `{a.profile}`, from {made}.\n")
    if len(set(prov["input_commits"].values())) > 1:
        md.append("**The steps ran binaries of different builds** (the commits above differ: the build changed "
                  "during the job, or outputs of different jobs were combined): the figures of different sections "
                  "may not come from the same code.\n")
    n_rtl = len(get(rtl, "layers", default=[]) or []) if rtl else 0
    cmp_s = "comparison" if n_rtl == 1 else "comparisons"
    lockstep = (f"RTL/TLM lockstep with 0 mismatches on {n_rtl} layer/unit {cmp_s}" if n_rtl else
                "RTL/TLM lockstep on no layer (stats.json records no compared layer)" if rtl else
                "RTL/TLM lockstep not run")
    md.append(f"**Every check passed**: the simulation's functional checks (stats.json `checks.passed`: software and "
              f"engine outputs identical to the reference compaction, monitor counts exact, for all {n} layer "
              f"instances), {lockstep}, and the inputs describe "
              f"the same run (model `{train['model']}`, device `{dev}`, activation densities of train.json and "
              f"stats.json, GPU `{gpu}` in stats.json and area.json).\n")
    md.append("## What was run\n")
    md.append(
        f"- **Training** (`spartan-train`): model `{train.get('model', '?')}` on `{train.get('dataset', '?')}`, "
        f"{train.get('iterations', '?')} SGD steps of batch {train.get('batch', '?')}, GEMM engine "
        f"`{train.get('gemm', '?')}`, **measured on {dev}**.\n"
        f"- **Co-simulation** (`spartan-sim run`): the captured activations replayed through the SystemC/TLM-2.0 "
        f"model of the **{gpu}** preset ({get(sim, 'gpu', 'sms', default='?')} SMs, "
        f"{get(sim, 'gpu', 'l2_slices', default='?')} L2 slices, one SparsityMonitor per slice, one "
        f"CompactionEngine); format `{get(sim, 'options', 'format', default='?')}`, tile "
        f"`{get(sim, 'options', 'tile', default='?')}`, density threshold "
        f"{get(sim, 'options', 'threshold', default='?')}. All times in this section are **simulated**.\n"
        f"- **RTL validation**: Verilated RTL of both units in lockstep with the TLM models on "
        f"{'the layers listed in section 6' if n_rtl else 'no layer (not run)'}.\n"
        f"- **Area** (`spartan-area`): Yosys synthesis to OSU 0.18 um cells, OpenSTA timing, scaled with "
        f"Stillmaker & Baas (2017).\n")

    # 1. training
    md.append("## 1. Training (measured)\n")
    acc = train.get("test_accuracy")
    steps = train.get("iterations")
    # spartan-train writes the window (train_loss_steps); older train.json files: its rule, min(100, steps)
    last = train.get("train_loss_steps")
    if not (isinstance(last, int) and last > 0):
        last = min(100, steps) if isinstance(steps, int) and steps > 0 else None
    rows = [["test accuracy", fmt(100 * acc if acc is not None else None, ".2f") + " %",
             f"{train.get('test_images', 'all')} test images"],
            ["final training loss", fmt(train.get("final_loss", train.get("train_loss")), ".4f"),
             f"mean over the last {last} SGD steps" if last else "mean of the last steps"],
            ["training wall time of the last epoch (s)", fmt(get(train, "epoch_seconds", -1), ".1f"),
             dev + " (a partial epoch when stopped by --iterations); capture steps included" +
             (f", {get(train, 'epoch_capture_seconds', -1):.3g} s of it (GEMMs timed on both engines, trace written)"
              if isinstance(get(train, "epoch_capture_seconds", -1), (int, float)) else "")]]
    md.append(md_table(["quantity", "value", "source / note"], rows) + "\n")
    doc["training"] = {k: train.get(k) for k in ("model", "dataset", "device", "iterations", "batch", "gemm",
                                                   "test_accuracy", "final_loss", "train_loss", "epoch_seconds",
                                                   "epoch_capture_seconds")}

    # 2. sparsity per layer over iterations (from the training run's own measurement)
    md.append("## 2. Activation sparsity per layer over training (measured)\n")
    layers = train["layers"]
    its = sorted({i for L in layers for i in L.get("iterations", [])})
    # A long run records a density every 50 steps (188 steps in 10 epochs of vgg-s): the table and the plot show
    # at most MAX_SPARSITY_STEPS of them, evenly spread, the first and the last included; sparsity.dat and
    # report.json keep every recorded step.
    shown = spread_evenly(its, MAX_SPARSITY_STEPS)
    hdr = ["layer", "name"] + [f"step {i}" for i in shown]
    rows, dat = [], []
    for L in layers:
        dens = dict(zip(L.get("iterations", []), L.get("act_density", [])))
        rows.append([L.get("layer"), L.get("name")] + [fmt(100 * (1 - dens[i]), ".1f") + " %" if i in dens else "-"
                                                       for i in shown])
        dat.append([L.get("layer")] + [fmt(100 * (1 - dens[i]), ".3f") if i in dens else "NaN" for i in its])
    md.append("Sparsity = fraction of zero elements of the activation that feeds each conv/FC GEMM. Layer 0's is the "
              "network's input image (pixel zeros), not a ReLU output."
              + (f" {len(shown)} of the {len(its)} recorded steps are shown, evenly spread (the first and the last "
                 "included); every step is in data/sparsity.dat and report.json." if len(shown) < len(its) else "")
              + "\n")
    md.append(md_table(hdr, rows) + "\n")
    write_dat(os.path.join(tmp, "sparsity.dat"), ["layer"] + [f"step{i}" for i in its], dat)
    col = {i: k + 2 for k, i in enumerate(its)}
    if shown and gnuplot(GP_HEAD + "set output 'sparsity.png'\nset title 'Activation sparsity per layer (measured)'\n"
                         "set xlabel 'layer'\nset xtics 1\nset ylabel 'sparsity (%)'\nset yrange [0:100]\nset style data linespoints\n"
                         "plot " + ", ".join(f"'sparsity.dat' using 1:{col[i]} title 'step {i}'" for i in shown) + "\n",
                         tmp):
        md.append("![sparsity per layer](sparsity.png)\n")
    doc["sparsity"] = [{"layer": L.get("layer"), "name": L.get("name"), "iterations": L.get("iterations"),
                        "act_density": L.get("act_density")} for L in layers]

    # 3./4. profiling and conversion
    costs = assumed_costs(sim, doc)
    caveat = ("**These ratios rest on the assumed launch and MMIO costs** (spartan-sim's own caveat, summary.txt); "
              + costs + ".")
    lbl = lambda L: f"it{L['iteration']}/L{L['layer']}"
    dat_num = lambda x, spec=".4f": fmt(x, spec, "NaN")  # NaN: gnuplot skips the point (0 would vanish on a log axis)
    md.append(f"## 3. Sparsity profiling: software kernel vs SparsityMonitor (simulated on {gpu})\n")
    rows, dat = [], []
    for L in sl:
        sw, hw = us(get(L, "software", "profile", "time_ns")), us(get(L, "hardware", "profile", "time_ns"))
        rows.append([lbl(L), L["name"], fmt(L["density"], ".3f"), fmt(sw), fmt(hw), fmt(L["profile_ratio"])])
        dat.append([lbl(L), dat_num(sw), dat_num(hw)])
    md.append(md_table(["layer", "name", "density", "software (us)", "monitor (us)", "ratio software / monitor"],
                       rows) + "\n")
    pp = ov["profile"]
    slower = sum(1 for L in sl if L["profile_ratio"] < 1)
    md.append(f"**Profiling-time ratio software / monitor (sum of times): {fmt(pp['ratio'])}x** over {n} layer "
              f"instances (software {fmt(us(pp['sw_ns']))} us, monitor {fmt(us(pp['hw_ns']))} us); the monitor is "
              f"slower on {slower} of the {n}{without_fixed(sl, 'profile')}. Mean of the per-layer ratios "
              f"{fmt(pp['mean_layer_ratio'])}x "
              + (f"({fmt(pp['mean_layer_ratio_relu_inputs'])}x over the {pp['relu_input_layers']} whose input is a "
                 "ReLU output)" if pp['relu_input_layers'] > 0 else "(no replayed layer's input is a ReLU output)") +
              f". The Spartan paper reports {PAPER_PROFILE_RATIO}x on average (a mean over layers; real "
              "GPU-class hardware, ImageNet networks). If every layer's count-table memset paid a kernel launch "
              f"like the software kernels (the model issues it ahead), the monitor would take "
              f"{fmt(us(pp['memset_launched']['hw_ns']))} us: {fmt(pp['memset_launched']['ratio'])}x.\n")
    split = fixed_split(sl, "profile", "software", "monitor")
    md.append(caveat + (" " + split[1] if split else " stats.json does not split the times into memory and "
                        "fixed costs (no `overhead_ns`).") + "\n")
    doc["profile_summary"] = {"ratio_of_sums": pp["ratio"], "hardware_slower_layers": slower, "layers": n,
                              "ratio_memset_launched": pp["memset_launched"]["ratio"],
                              "fixed_costs": split[0] if split else None}
    write_dat(os.path.join(tmp, "profile.dat"), ["layer", "sw_us", "hw_us"], dat)
    if dat and gnuplot(GP_HEAD + "set output 'profiling.png'\nset title 'Profiling time per layer (simulated, "
                       + gpu + ")'\nset ylabel 'time (us, log)'\nset logscale y\n"
                       f"plot 'profile.dat' using 2:{tick_every(len(dat))} title 'software kernel', "
                       "'' using 3 title 'SparsityMonitor'\n", tmp):
        md.append("![profiling time](profiling.png)\n")

    md.append(f"## 4. Dense-to-sparse conversion: software kernel vs CompactionEngine (simulated on {gpu})\n")
    rows, dat = [], []
    for L in sl:
        sw, hw = us(get(L, "software", "convert", "time_ns")), us(get(L, "hardware", "convert", "time_ns"))
        rows.append([lbl(L), L["name"], fmt(sw), fmt(hw), fmt(L["convert_ratio"])])
        dat.append([lbl(L), dat_num(sw), dat_num(hw)])
    md.append(md_table(["layer", "name", "software (us)", "engine (us)", "ratio software / engine"], rows) + "\n")
    cp = ov["convert"]
    slower = sum(1 for L in sl if L["convert_ratio"] < 1)
    md.append(f"**Conversion-time ratio software / engine (sum of times): {fmt(cp['ratio'])}x** over {n} layer "
              f"instances (software {fmt(us(cp['sw_ns']))} us, engine {fmt(us(cp['hw_ns']))} us); the engine is "
              f"slower on {slower} of the {n}{without_fixed(sl, 'convert')}.\n")
    split = fixed_split(sl, "convert", "software", "engine")
    md.append(caveat + (" " + split[1] if split else " stats.json does not split the times into memory and "
                        "fixed costs (no `overhead_ns`).") + "\n")
    doc["convert_summary"] = {"ratio_of_sums": cp["ratio"], "hardware_slower_layers": slower, "layers": n,
                              "fixed_costs": split[0] if split else None}
    write_dat(os.path.join(tmp, "convert.dat"), ["layer", "sw_us", "hw_us"], dat)
    if dat and gnuplot(GP_HEAD + "set output 'conversion.png'\nset title 'Conversion time per layer (simulated, "
                       + gpu + ")'\nset ylabel 'time (us, log)'\nset logscale y\n"
                       f"plot 'convert.dat' using 2:{tick_every(len(dat))} title 'software kernel', "
                       "'' using 3 title 'CompactionEngine'\n", tmp):
        md.append("![conversion time](conversion.png)\n")

    scale_section(a, gpu, md, doc, train["model"], sl)

    # 5. speedups
    gdev = next((get(L, "gemm", "device") for L in sl if get(L, "gemm", "device")), "unknown")
    on_gpu = str(gdev).startswith("cuda")
    md.append("## 5. Tile-sparse GEMM speedup, and layer speedup with profiling and conversion\n")
    md.append(f"GEMM times measured on **{gdev}** (from the trace: minimum of the repeats, dense and tile-sparse "
              f"alternately); profiling and conversion times simulated on {gpu}. The layer speedup "
              "T_dense / (T_tile_sparse + T_profile + T_convert) is computed only for GEMM times measured on a GPU: "
              "CPU milliseconds are not added to simulated GPU microseconds.\n")
    rows, dat = [], []
    paths = {"tiles": "tiles", "one-sgemm": "one sgemm"}
    for L in sl:
        g = L.get("gemm", {})
        rows.append([lbl(L), L["name"], fmt(L["density"], ".3f"), fmt(g.get("operand_density"), ".3f"),
                     paths.get(g.get("tile_sparse_path"), "-"),
                     fmt(g.get("dense_ms"), ".3f"), fmt(g.get("tile_sparse_ms"), ".3f"), fmt(g.get("speedup_measured")),
                     fmt(g.get("speedup_software")), fmt(g.get("speedup_hardware"))])
        dat.append([lbl(L), dat_num(g.get("speedup_measured"))])
    md.append("Activation density: the layer's input as the units see it (sections 2-4); operand density: the "
              "forward GEMM's sparse operand (im2col of it for a conv layer); path: how the tile-sparse engine ran "
              "the forward GEMM (its tiles, or one dense sgemm when the operand was dense enough for its whole-call "
              "guard: then the ratio compares sgemm with sgemm).\n")
    md.append(md_table(["layer", "name", "activation density", "operand density", "path", "forward dense (ms)",
                        "forward tile-sparse (ms)", "forward GEMM speedup (dense / tile-sparse)",
                        "layer, software path", "layer, Spartan path"], rows) + "\n")
    timed = [L for L in sl if is_num(get(L, "gemm", "tile_sparse_ms"))]
    one = sum(1 for L in timed if get(L, "gemm", "tile_sparse_path") == "one-sgemm")
    if is_num(get(ov, "speedup", "gemm_measured")):
        md.append(f"Overall **forward** tile-sparse GEMM speedup (sum of dense / sum of tile-sparse forward GEMM "
                  f"times, measured on {gdev}): **{fmt(get(ov, 'speedup', 'gemm_measured'))}x**"
                  + (f"; **{one} of the {len(timed)} forward GEMMs ran as one dense sgemm**, sgemm against sgemm"
                     if one else "") + ". ")
    else:
        md.append(f"Overall **forward** tile-sparse GEMM speedup: not available "
                  f"({get(ov, 'speedup_unavailable', default='stats.json gives none')}). ")
    if on_gpu:
        md.append(f"Layer speedup: software path **{fmt(get(ov, 'speedup', 'software'))}x**, Spartan path "
                  f"**{fmt(get(ov, 'speedup', 'hardware'))}x**. ")
    md.append("Paper (whole conv layers, ImageNet, on a GPU): " +
              ", ".join(f"{k} {v}x" for k, v in PAPER_CONV_SPEEDUPS.items()) +
              ("." if on_gpu else f" (not comparable with the GEMM ratios above, measured on {gdev}).") + "\n")
    trace_path = os.path.join(a.run, "run.sptrace")
    gt, why = read_trace_gemm(trace_path, sim)
    passes = None
    if gt:
        passes = {}
        for p in ("fwd", "bwd_data", "bwd_weight"):
            d = sum(get(g, p, "dense_ms") for g in gt.values())  # numbers > 0: read_trace_gemm checked them
            t = [get(g, p, "tile_sparse_ms") for g in gt.values()]
            c = [get(g, p, "compact_ms") for g in gt.values()]
            ts = sum(t) if all(is_num(x) for x in t) else None
            cs = sum(c) if all(is_num(x) for x in c) else None
            # How each call ran (spartan-train's gemm_times `path`): "tiles" (the tile-sparse kernels) or
            # "one-sgemm" (the whole-call guard sent a dense-enough operand to one sgemm: sgemm against sgemm).
            paths = [get(g, p, "path") for g in gt.values()]
            passes[p] = {"dense_ms": d, "tile_sparse_ms": ts, "compact_ms": cs,
                         "one_sgemm_calls": sum(1 for x in paths if x == "one-sgemm"),
                         "tile_calls": sum(1 for x in paths if x == "tiles"),
                         "path_unrecorded_calls": sum(1 for x in paths if x not in ("tiles", "one-sgemm"))}
        tot = {k: (sum(v[k] for v in passes.values()) if all(v[k] is not None for v in passes.values()) else None)
               for k in ("dense_ms", "tile_sparse_ms", "compact_ms", "one_sgemm_calls", "tile_calls",
                         "path_unrecorded_calls")}
        passes["all"] = tot
        names = {"fwd": "forward", "bwd_data": "backward data", "bwd_weight": "backward weight",
                 "all": "all three passes"}
        rows = []
        for p, v in passes.items():
            v["speedup"] = ratio(v["dense_ms"], v["tile_sparse_ms"]) if v["tile_sparse_ms"] is not None else None
            v["speedup_with_compaction"] = (ratio(v["dense_ms"], v["tile_sparse_ms"] + v["compact_ms"])
                                            if None not in (v["tile_sparse_ms"], v["compact_ms"]) else None)
            calls = (f"{v['tile_calls']} / {v['one_sgemm_calls']}"
                     + (f" ({v['path_unrecorded_calls']} not recorded)" if v["path_unrecorded_calls"] else ""))
            rows.append([names[p], calls, fmt(v["dense_ms"]), fmt(v["tile_sparse_ms"]), fmt(v["speedup"]),
                         fmt(v["compact_ms"]), fmt(v["speedup_with_compaction"])])
        md.append(f"All GEMM passes of the {n} replayed layer instances, measured on {gdev} (trace header "
                  "`gemm_times`; every time in ms on the same device, like for like; compaction = the "
                  "dense-to-tile-sparse conversion of the GEMM's sparse operand, on that device). Calls = how the "
                  "tile-sparse engine ran each GEMM: through its tiles, or as **one dense sgemm** when the operand "
                  "was dense enough for its whole-call guard (sw/gemm/README.md): for those the ratio compares "
                  "sgemm with sgemm.\n")
        md.append(md_table(["pass", "calls: tiles / one sgemm", "dense (ms)", "tile-sparse (ms)",
                            "speedup dense / tile-sparse", "compaction (ms)",
                            "speedup dense / (tile-sparse + compaction)"], rows) + "\n")
    else:
        md.append(f"Backward-pass GEMM and compaction times not shown: {why}.\n")
    if all(is_num(get(L, "tile_kinds", "zero")) and is_num(L.get("tiles")) for L in sl):
        tiles = sum(L["tiles"] for L in sl)
        zero = sum(get(L, "tile_kinds", "zero") for L in sl)
        # No cause is claimed from it: these are tiles of the activation as the units see it; the GEMM's operand
        # (im2col of it for a conv layer) is tiled by the engine on its own grid.
        md.append(f"The replayed activations, as the units see them ({tiles} tiles of "
                  f"{get(sim, 'options', 'tile', default='?')}), have **{zero} all-zero tiles** (stats.json "
                  "`tile_kinds.zero`); the tile-sparse GEMM tiles its own operand (im2col of the activation for a "
                  "conv layer), so its skipped tiles are not these.\n")
    doc["gemm_passes"] = passes
    write_dat(os.path.join(tmp, "speedup.dat"), ["layer", "gemm"], dat)
    if dat and gnuplot(GP_HEAD + "set output 'speedup.png'\nset title 'Forward tile-sparse GEMM speedup over dense "
                       "GEMM (" + str(gdev).replace("'", "") + ")'\nset yrange [0:*]\n"
                       "set arrow from graph 0, first 1 to graph 1, first 1 nohead dashtype 2 lw 2 front\n"
                       "set ylabel 'speedup (x, axis from 0; dashed: 1.0 = no speedup)'\n"
                       f"plot 'speedup.dat' using 2:{tick_every(len(dat))} title 'dense / tile-sparse'\n", tmp):
        md.append("![speedup](speedup.png)\n")
    doc["simulation"] = {"gpu": get(sim, "gpu"), "options": get(sim, "options"), "overall": ov, "layers": sl,
                         "gemm_device": gdev, "paper": {"profile_ratio": PAPER_PROFILE_RATIO,
                                                         "conv_speedups": PAPER_CONV_SPEEDUPS}}

    # 6. RTL
    md.append("## 6. RTL vs TLM (Verilator lockstep)\n")
    if rtl:
        rows = []
        for j in get(rtl, "layers", default=[]):
            lname = j.get("layer") if isinstance(j.get("layer"), str) else f"it{j.get('iteration')}/L{j.get('layer')}"
            rows.append([lname, j.get("unit", ""), j.get("mismatches"), fmt(j.get("rtl_cycles"), ".0f"),
                         fmt(j.get("tlm_cycles"), ".0f"), fmt(j.get("cycle_deviation_percent"), "+.2f") + " %"])
        md.append(md_table(["layer", "unit", "mismatches", "RTL cycles", "TLM cycles", "cycle deviation"], rows) + "\n")
        md.append(f"Source: {get(rtl, 'source', default='spartan-sim run --rtl')} (Verilated RTL and the TLM model "
                  "on the same line traffic; per-tile counts and registers compared exactly).\n")
        by_unit = get(rtl, "max_abs_cycle_deviation_percent_by_unit", default={}) or {}
        n_cmp = len(get(rtl, "layers", default=[]) or [])
        md.append(f"Total mismatches: **{get(rtl, 'mismatches', default='?')}** over {n_cmp} layer/unit "
                  f"{'comparison' if n_cmp == 1 else 'comparisons'} (a report is written only when it is 0); maximum |cycle "
                  f"deviation| {fmt(get(rtl, 'max_abs_cycle_deviation_percent'), '.2f')} % (tolerance: "
                  f"{get(rtl, 'cycle_tolerance', default='5 % of the TLM cycles or 2 cycles')})" +
                  ("; per unit: " + ", ".join(f"{k} {fmt(v, '.2f')} %" for k, v in sorted(by_unit.items()))
                   if by_unit else "") + ".\n")
        md.append("The engine rows compare the TLM engine and the RTL behind the lockstep's fixed-latency memory, not "
                  "the engine in the GPU model (crossbar, L2, DRAM) whose times section 4 reports.\n")
    else:
        md.append("Not run in this job.\n")
    doc["rtl"] = rtl

    # 7. area
    md.append("## 7. Area and timing (synthesised, OSU 0.18 um; scaled)\n")
    md.append(area_section(area, sim, tmp, a.profile))
    doc["area"] = area
    return doc, "\n".join(md)


def scale_section(a, gpu, md, doc, model, sl):
    """Section 4b: the units at ImageNet scale (run/scale/t32 and t128, written by make run's scale step)."""
    tiles_of = {"t32": "32x32", "t128": "128x128"}
    paths = {t: os.path.join(a.run, "scale", t, "stats.json") for t in tiles_of}
    md.append("## 4b. The units at ImageNet scale (synthetic activations, simulated on " + gpu + ")\n")
    if not all(os.path.exists(p) for p in paths.values()):
        md.append("Not run (the job's `scale` step writes " + " and ".join(paths.values()) + ").\n")
        doc["imagenet_scale"] = None
        return
    def check_run(d, f, tile):
        """What every scale-step run must be: an object of finite numbers, checks passed, the main replay's GPU
        and the tile its directory names."""
        if not isinstance(d, dict):
            raise ReportError(f"{f}: expected a JSON object, got {type(d).__name__}")
        check_finite(d, f)
        if not need(d, f, ["checks", "passed"], "bool"):
            raise ReportError(f"{f}: the functional checks failed")
        if need(d, f, ["gpu", "preset"], "str") != gpu:
            raise ReportError(f"{f}: simulated GPU '{d['gpu']['preset']}', not the main replay's '{gpu}'")
        if need(d, f, ["options", "tile"], "str") != tile:
            raise ReportError(f"{f}: tile {d['options']['tile']}, not {tile} as its directory says")

    def check_layer_part(d, f, i, part):
        """Layer i of a scale-step run: its name and size, both paths' `part` ("profile" or "convert") time
        positive and its `part`_ratio the ratio of those times."""
        need(d, f, ["layers", i, "name"], "str")
        need(d, f, ["layers", i, "dense_bytes"], "num")
        for side in ("software", "hardware"):
            if need(d, f, ["layers", i, side, part, "time_ns"], "num") <= 0:
                raise ReportError(f"{f}.layers[{i}].{side}.{part}.time_ns: must be > 0")
        L = d["layers"][i]
        if not close(need(d, f, ["layers", i, f"{part}_ratio"], "num"),
                     L["software"][part]["time_ns"] / L["hardware"][part]["time_ns"]):
            raise ReportError(f"{f}.layers[{i}].{part}_ratio: not its times' ratio: inconsistent")

    runs = {t: load_json(p, "spartan-sim run, scale step") for t, p in paths.items()}
    for t, d in runs.items():
        f = paths[t]
        check_run(d, f, tiles_of[t])
        need(d, f, ["gpu", "sms"], "int")
        for i, _ in enumerate(need(d, f, ["layers"], "nonempty list")):
            need(d, f, ["layers", i, "relu_input"], "bool")
            need(d, f, ["layers", i, "tiles"], "int")
            need(d, f, ["layers", i, "density"], "num")
            for part in ("profile", "convert"):
                check_layer_part(d, f, i, part)
    def load_multi(name):
        """An optional several-engines run of 32x32 tiles (DIR/scale/NAME): checked, with its engine count."""
        f = os.path.join(a.run, "scale", name, "stats.json")
        if not os.path.exists(f):
            return None, None
        d = load_json(f, "spartan-sim run, scale step")
        check_run(d, f, "32x32")
        n = need(d, f, ["units", "engine", "count"], "int")
        if n < 2:
            raise ReportError(f"{f}: units.engine.count {n}: not a run with several engines")
        for i, _ in enumerate(need(d, f, ["layers"], "nonempty list")):
            check_layer_part(d, f, i, "convert")
            if need(d, f, ["layers", i, "hardware", "convert", "memory_ns"], "num") <= 0:
                raise ReportError(f"{f}.layers[{i}].hardware.convert.memory_ns: must be > 0")
            L = d["layers"][i]
            # the report prints the jobs (memory_ns) as a part of the conversion time
            if L["hardware"]["convert"]["memory_ns"] > L["hardware"]["convert"]["time_ns"] * (1 + 1e-6):
                raise ReportError(f"{f}.layers[{i}].hardware.convert.memory_ns: more than its time_ns: inconsistent")
        return d, n

    # Optional (make run writes them): 32x32 tiles with several compaction engines, the host writing their
    # descriptors (t32e16, since the fiftieth session), and with the descriptors fetched from memory and
    # completion records polled from the GPU (t32e16mem, since the fifty-third session).
    multi_path = os.path.join(a.run, "scale", "t32e16", "stats.json")
    mem_path = os.path.join(a.run, "scale", "t32e16mem", "stats.json")
    multi, engines = load_multi("t32e16")
    mem, mem_engines = load_multi("t32e16mem")
    # Optional: 32x32 tiles, one engine, the monitors adding to a completion counter in memory that an SM polls
    # instead of the profile's status read (t32mc, since the fifty-fourth session).
    mc_path = os.path.join(a.run, "scale", "t32mc", "stats.json")
    mc = None
    if os.path.exists(mc_path):
        mc = load_json(mc_path, "spartan-sim run, scale step")
        check_run(mc, mc_path, "32x32")
        host = get(mc, "options", "units", "host", default={})
        if not (isinstance(host, dict) and host.get("monitor_completion") is True):
            raise ReportError(f"{mc_path}: options.units.host: not a run with monitor_completion true")

        def without_counter(units):
            """options.units without host.monitor_completion (a deep copy)."""
            u = json.loads(json.dumps(units))
            if isinstance(u, dict) and isinstance(u.get("host"), dict):
                u["host"].pop("monitor_completion", None)
                if not u["host"]:
                    del u["host"]
            return u if u else {}
        # the report sets it beside t32 as "instead of the status read": t32 is the status-read run, and the two
        # differ in nothing else (no other broadcast, MMIO cost, poll interval or engine count)
        t32_units = get(runs["t32"], "options", "units", default={})
        if get(t32_units, "host", "monitor_completion", default=False) is not False:
            raise ReportError(f"{paths['t32']}: options.units.host.monitor_completion: the baseline beside {mc_path} "
                              "must read the monitors' status")
        if without_counter(get(mc, "options", "units", default={})) != without_counter(t32_units):
            raise ReportError(f"{mc_path}: options.units differ from {paths['t32']}'s in more than "
                              "host.monitor_completion")
        for i, _ in enumerate(need(mc, mc_path, ["layers"], "nonempty list")):
            check_layer_part(mc, mc_path, i, "profile")
            if need(mc, mc_path, ["layers", i, "hardware", "monitor_mmio_reads"], "int") != 0:
                raise ReportError(f"{mc_path}.layers[{i}].hardware.monitor_mmio_reads: a status read charged with "
                                  "the completion counter: inconsistent")
            if need(mc, mc_path, ["layers", i, "hardware", "monitor_completion_poll_ns"], "num") <= 0:
                raise ReportError(f"{mc_path}.layers[{i}].hardware.monitor_completion_poll_ns: must be > 0 (the poll "
                                  "that replaces the status read)")
            for k in ("passed", "monitor_completion_count_correct"):
                if need(mc, mc_path, ["layers", i, "checks", k], "bool") is not True:
                    raise ReportError(f"{mc_path}.layers[{i}].checks.{k}: false")
    if mem is not None:
        host = get(mem, "options", "units", "host", default={})
        if not (isinstance(host, dict) and host.get("engine_fetch") is True and host.get("engine_record") is True):
            raise ReportError(f"{mem_path}: options.units.host: not a run with engine_fetch and engine_record true")
        if multi is None or mem_engines != engines:
            raise ReportError(f"{mem_path}: needs {multi_path} with the same engine count beside it")
    by = {t: {L["name"]: L for L in d["layers"]} for t, d in runs.items()}
    if set(by["t32"]) != set(by["t128"]):
        raise ReportError(f"{paths['t128']}: not the layers of {paths['t32']}")
    for key, d, f in (("multi", multi, multi_path), ("mem", mem, mem_path), ("mc", mc, mc_path)):
        if d is None:
            continue
        by[key] = {L["name"]: L for L in d["layers"]}
        if set(by[key]) != set(by["t32"]) or len(d["layers"]) != len(runs["t32"]["layers"]):
            raise ReportError(f"{f}: not the layers of {paths['t32']}")
        for name in by["t32"]:
            if not close(by["t32"][name]["dense_bytes"], by[key][name]["dense_bytes"]):
                raise ReportError(f"{f}: layer {name} has another size than in {paths['t32']}")
            if key == "mc":
                # the same software profile: the report sets the two hardware profiles side by side
                if not close(by["t32"][name]["software"]["profile"]["time_ns"],
                             by[key][name]["software"]["profile"]["time_ns"]):
                    raise ReportError(f"{f}: layer {name}: software profile time not the one of "
                                      f"{paths['t32']}: inconsistent")
                continue
            # the report sets the several engines' ratio beside the one-engine run's software time
            if not close(by["t32"][name]["software"]["convert"]["time_ns"],
                         by[key][name]["software"]["convert"]["time_ns"]):
                raise ReportError(f"{f}: layer {name}: software conversion time not the one of "
                                  f"{paths['t32']}: inconsistent")
            # the engines read their counts out of the one monitor region's table (D_CFG.CT_PITCH): the
            # hardware profile is the one-engine run's
            if not close(by["t32"][name]["hardware"]["profile"]["time_ns"],
                         by[key][name]["hardware"]["profile"]["time_ns"]):
                raise ReportError(f"{f}: layer {name}: hardware profile time not the one of "
                                  f"{paths['t32']} (the engines do not change the monitors' profile): inconsistent")
    for name in by["t32"]:
        if not close(by["t32"][name]["dense_bytes"], by["t128"][name]["dense_bytes"]):
            raise ReportError(f"{paths['t128']}: layer {name} has another size than in {paths['t32']}")
    # batch and density from the synthetic trace's header (sptrace_sample --imagenet writes both), else unknown
    tr = get(runs["t32"], "trace", "path")
    meta = trace_metadata(os.path.join(a.run, "scale", os.path.basename(tr)))[0] if isinstance(tr, str) else None
    batch = get(meta, "batch") if meta else None
    relu_dens = [L["density"] for L in runs["t32"]["layers"] if L["relu_input"]]
    dens = (f"{fmt(min(relu_dens), '.2f')}-{fmt(max(relu_dens), '.2f')}" if relu_dens and
            fmt(min(relu_dens), '.2f') != fmt(max(relu_dens), '.2f') else fmt(relu_dens[0], '.2f') if relu_dens else "?")
    rows, out = [], []
    for L in runs["t32"]["layers"]:
        o = by["t128"][L["name"]]
        rows.append([L["name"] + ("" if L["relu_input"] else " (image)"), fmt(L["dense_bytes"] / 1e6, ".1f"),
                     f"{L['tiles']} / {o['tiles']}", fmt(L["profile_ratio"])]
                    + ([fmt(by["mc"][L["name"]]["profile_ratio"])] if mc is not None else [])
                    + [fmt(o["profile_ratio"]), fmt(L["convert_ratio"], ".3f"), fmt(o["convert_ratio"], ".3f")]
                    + ([fmt(by["multi"][L["name"]]["convert_ratio"], ".3f")] if multi is not None else [])
                    + ([fmt(by["mem"][L["name"]]["convert_ratio"], ".3f")] if mem is not None else []))
        out.append({"name": L["name"], "dense_bytes": L["dense_bytes"], "tiles_32": L["tiles"], "tiles_128": o["tiles"],
                    "profile_ratio_32": L["profile_ratio"], "profile_ratio_128": o["profile_ratio"],
                    "convert_ratio_32": L["convert_ratio"], "convert_ratio_128": o["convert_ratio"],
                    "sw_profile_ns_32": L["software"]["profile"]["time_ns"],
                    "sw_profile_ns_128": o["software"]["profile"]["time_ns"],
                    "hw_profile_ns_32": L["hardware"]["profile"]["time_ns"],
                    "hw_profile_ns_128": o["hardware"]["profile"]["time_ns"]})
        if mc is not None:
            e = by["mc"][L["name"]]
            out[-1].update({"profile_ratio_32_completion": e["profile_ratio"],
                            "hw_profile_ns_32_completion": e["hardware"]["profile"]["time_ns"]})
        if multi is not None:
            e = by["multi"][L["name"]]
            out[-1].update({"convert_ratio_32_engines": e["convert_ratio"],
                            "hw_convert_ns_32": L["hardware"]["convert"]["time_ns"],
                            "hw_convert_ns_32_engines": e["hardware"]["convert"]["time_ns"],
                            "hw_convert_jobs_ns_32_engines": e["hardware"]["convert"]["memory_ns"],
                            "sw_convert_ns_32": L["software"]["convert"]["time_ns"]})
        if mem is not None:
            e = by["mem"][L["name"]]
            out[-1].update({"convert_ratio_32_engines_mem": e["convert_ratio"],
                            "hw_convert_ns_32_engines_mem": e["hardware"]["convert"]["time_ns"],
                            "hw_convert_jobs_ns_32_engines_mem": e["hardware"]["convert"]["memory_ns"]})
    mb = [L["dense_bytes"] / 1e6 for L in sl if is_num(L.get("dense_bytes"))]
    size = f" are {fmt(min(mb), '.2f')}-{fmt(max(mb), '.2f')} MB" if mb else ""
    md.append(f"The {model} layers above{size}: small activations, where both profiling paths cost a few "
              "microseconds of fixed costs. To show how the ratios scale, the job also replays **synthetic** "
              f"activations (random ReLU-like values at density {dens}; the image into conv1_1 all non-zero) of "
              f"**real ImageNet conv layer sizes** (AlexNet, VGG-16, ResNet-18 at 224x224, batch "
              f"{batch if batch is not None else 'not recorded'}; `sptrace_sample --imagenet`) with 32x32 and "
              "128x128 tiles. Ratios are software / hardware:\n")
    md.append(md_table(["layer", "MB", "tiles 32x32 / 128x128", "profile 32x32"]
                       + (["profile 32x32, completion counter in memory"] if mc is not None else [])
                       + ["profile 128x128", "convert 32x32", "convert 128x128"] + ([f"convert 32x32, {engines} engines"] if multi is not None else [])
                       + ([f"convert 32x32, {engines} engines, descriptors and completion in memory"]
                          if mem is not None else []),
                       rows) + "\n")
    big = max(out, key=lambda r: r["dense_bytes"])
    sms = runs["t128"]["gpu"]["sms"]
    few = [r for r in out if r["tiles_128"] < sms]
    text = (f"On the largest layer, {big['name']}, the profiling ratio is {fmt(big['profile_ratio_32'])}x with 32x32 "
            f"tiles and {fmt(big['profile_ratio_128'])}x with 128x128: the monitors' flush grows with the number of "
            "tiles (every monitor scans every tile's counter, 8 counters in 10-11 cycles as in the RTL, and adds the "
            "non-zero ones to the count table with atomics), and larger tiles mean fewer counters.")
    if few:
        rng = lambda xs: f"{fmt(min(xs) / 1e3)}-{fmt(max(xs) / 1e3)}"
        text += (f" The ratio does not simply follow the layer's size: with 128x128 tiles, {len(few)} of the "
                 f"{len(out)} layers have fewer tiles than the {sms} SMs, and the software profile kernel works on "
                 "one tile per SM at a time (hw/spartan/include/spartan/hw/sw_baselines.h), so on them it uses fewer "
                 f"SMs: its time goes from {rng([r['sw_profile_ns_32'] for r in few])} us with 32x32 tiles to "
                 f"{rng([r['sw_profile_ns_128'] for r in few])} us, while the monitors' goes from "
                 f"{rng([r['hw_profile_ns_32'] for r in few])} to {rng([r['hw_profile_ns_128'] for r in few])} us. "
                 "Part of their higher ratio at 128x128 is this slower baseline, not a faster monitor.")
    if mc is not None:
        text += (f" With the monitors adding 1 to a completion counter in memory at each flush's end, which an SM "
                 f"polls instead of the status read over MMIO (`--units host.monitor_completion`; the column beside "
                 f"it), the profile of {big['name']} takes {fmt(big['hw_profile_ns_32_completion'] / 1e3)} us instead "
                 f"of {fmt(big['hw_profile_ns_32'] / 1e3)} us: {fmt(big['profile_ratio_32_completion'])}x.")
    text += (f" The one CompactionEngine (one line per cycle) is slower than the software conversion on large layers "
             f"({fmt(big['convert_ratio_32'], '.3f')}x on {big['name']}).")
    if multi is not None:
        text += (f" With {engines} engines side by side (`--units engine.count {engines}`, each compacting a block of "
                 f"every layer; the last column) its conversion takes {fmt(big['hw_convert_ns_32_engines'] / 1e3)} us "
                 f"instead of {fmt(big['hw_convert_ns_32'] / 1e3)} us ({fmt(big['hw_convert_jobs_ns_32_engines'] / 1e3)} us "
                 f"of it the engines' jobs, the rest the host's register writes and status read), against "
                 f"{fmt(big['sw_convert_ns_32'] / 1e3)} us in software: {fmt(big['convert_ratio_32_engines'], '.3f')}x "
                 "(docs/bench/units.md); the profile is the one-engine run's (the engines read their counts out of "
                 "the one monitor region's table).")
    if mem is not None:
        writes = get(by["mem"][big["name"]], "hardware", "engine_mmio_writes")
        text += (f" With the engines fetching their descriptors from memory and writing completion records that an SM "
                 f"polls (`--units host.engine_fetch, host.engine_record`; the last column: "
                 f"{fmt(writes, 'd') if isinstance(writes, int) else '?'} register writes on that layer "
                 f"and no status read over MMIO) it takes {fmt(big['hw_convert_ns_32_engines_mem'] / 1e3)} us "
                 f"({fmt(big['hw_convert_jobs_ns_32_engines_mem'] / 1e3)} us of it the jobs): "
                 f"{fmt(big['convert_ratio_32_engines_mem'], '.3f')}x.")
    text += (" Larger batches and the tables with batch 4 and 16: `scripts/imagenet-replay.sh` and "
             "docs/reproduce-paper.md.\n")
    md.append(text)
    doc["imagenet_scale"] = {"batch": batch, "density_relu_inputs": relu_dens, "sms": sms, "layers": out,
                             "engines_multi": engines, "engines_multi_memory_interface": mem is not None,
                             "monitor_completion_counter": mc is not None}


def area_section(area, sim, tmp, profile):
    """Area per unit (180 nm, synthesised), per GPU and share of die per node, from area.json."""
    out = []
    rows, dat = [], []
    units = area.get("units", [])
    engine = next((u.get("name") for u in units if u.get("role") == "engine"), "the engine")
    # units synthesised on their own that no GPU instantiates directly: the engine's sub-blocks (rtl/src)
    sub = lambda u: u.get("role") == "other" and u.get("instances_per_gpu") == 0
    for u in units:
        a180 = u.get("area_180nm", {})
        logic, sram = a180.get("logic_um2"), a180.get("memory_sram_um2")
        name = u.get("name") + (f" (sub-block of {engine}, in its area)" if sub(u) else "")
        untimed = get(u, "timing_180nm", "memory_paths_timed", default=True) is False
        rows.append([name, u.get("role"), fmt(u.get("cells"), "d"), fmt(logic, ".0f"), fmt(a180.get("logic_kge"), ".4g"),
                     fmt(sram, ".0f"),
                     ("<= " if untimed else "") + fmt(get(u, "timing_180nm", "fmax_mhz"), ".1f"),
                     fmt(u.get("instances_per_gpu"), "d")])
        if not sub(u):
            dat.append([u.get("name"), fmt(logic / 1e6 if is_num(logic) else None, ".4f", "NaN"),
                        fmt(sram / 1e6 if is_num(sram) else None, ".4f", "NaN")])
    man = area.get("manifest")  # spartan-area's manifest (absolute path), or "none: every Verilog file of DIR"
    if isinstance(man, str) and (man.endswith("/rtl/units.txt") or man.startswith("none")):
        out.append(f"Units synthesised from `{man}`.\n")
    elif isinstance(man, str):
        out.append(f"**Not the Spartan units**: this job synthesised `{man}`"
                   + (", the tiny profile's small test blocks (they keep the job short)" if profile == "tiny" else
                      ", not the RTL's manifest rtl/units.txt")
                   + ", so the areas, fmax and per-GPU totals below are those blocks', not the units'.\n")
    else:
        out.append("area.json does not name the manifest it synthesised (spartan-area predates `manifest`).\n")
    out.append(md_table(["unit", "role", "cells (memories as flip-flops)" if any(
        u.get("memories_synthesised_as_ff") for u in units) else "cells", "logic at 180 nm (um^2)", "logic (kGE)",
        "memory as SRAM (um^2)", "fmax at 180 nm (MHz)", "instances per GPU"], rows) + "\n")
    ge = get(area, "synthesis", "gate_equivalent")
    if isinstance(ge, dict) and is_num(ge.get("area_um2")):
        out.append(f"kGE: thousands of gate equivalents, 1 GE = {ge.get('cell')} ({fmt(ge['area_um2'], 'g')} um^2), the "
                   "liberty's smallest two-input NAND; gate counts compare across libraries, where um^2 carry this "
                   "library's cell density (docs/area.md).\n")
    if any(u.get("memories_synthesised_as_ff") for u in units) and get(area, "memory_model", "total_uses") == "sram":
        out.append("The cell counts are of the synthesised netlists, memories as flip-flops; the areas and totals "
                   "price the memories as SRAM (column 6) instead.\n")
    two = [u.get("name") for u in units if is_num(u.get("sram_bits_two_port")) and u["sram_bits_two_port"] > 0
           or is_num(u.get("sram_bits_async_read")) and u["sram_bits_async_read"] > 0]
    if two:
        out.append("**The SRAM areas are lower bounds** for " + ", ".join(two) + ": their memories are priced as "
                   "single-port 6T cells, but some have separate read and write ports (two-port macros are larger "
                   "per bit) or an asynchronous read (area/area.md).\n")
    untimed = [u.get("name") for u in units if get(u, "timing_180nm", "memory_paths_timed", default=True) is False]
    if untimed:
        out.append("**fmax is an upper bound** (`<=`) for " + ", ".join(untimed) + ": timed with the memories as "
                   "black-box SRAM macros, which have no timing arcs, so no path into or out of a memory is timed; "
                   "the unit clock and the figures at it below are upper bounds too (area/area.md).\n")
    ovr = [(u.get("name"), u.get("parameter_overrides")) for u in units if u.get("parameter_overrides")]
    if ovr:
        su = get(sim, "options", "units", default={}) or {}
        simd = ", ".join(f"{k} {get(su, *k.split('.'))}" for k in ("monitor.counter_entries", "engine.read_buffer_bytes",
                                                                     "engine.queue_depth", "engine.tile_buffers")
                         if get(su, *k.split('.')) is not None)
        out.append("**Synthesised with reduced parameters**, not the defaults that spartan-sim simulates: "
                   + "; ".join(f"{nm}: " + " ".join(f"{k}={v}" for k, v in sorted(p.items())) for nm, p in ovr)
                   + ". The areas and per-GPU totals below are for these parameters"
                   + (f" (the simulation used {simd})" if simd else "") + ".\n")
    ne = get(area, "gpu", "compaction_engines")
    if ne is not None:
        out.append(f"Engines per GPU: {ne}" + (" (**assumed**: not given to spartan-area with --engines)"
                                               if get(area, "gpu", "compaction_engines_assumed") else "") + ".\n")
    node = get(area, "gpu", "process_node_nm")
    l2 = get(area, "gpu", "l2_clock_mhz")
    unused = area.get("cycles_units_unused")
    if isinstance(unused, list) and unused:
        out.append("The RTL cycle counts of " + ", ".join(f"`{x}`" for x in unused) + " (rtl_cycles.json) match no "
                   "synthesised unit and were not used" + (": no latency table" if not any(
                       get(u, "latency", "available", default=False) for u in units) else "") + ".\n")
    lat = [u for u in units if get(u, "latency", "available", default=False)]
    if lat:
        new_cols = all("unit_clock_mhz" in u["latency"] for u in lat)
        rows = []
        for u in lat:
            L = u["latency"]
            clk, gb_clk = L.get("unit_clock_mhz"), L.get("gb_per_s_per_gpu_at_unit_clock")
            rows.append([u.get("name"), fmt(L.get("tile_latency_cycles"), ".1f"), fmt(L.get("tile_latency_ns"), ".1f"),
                         fmt(L.get("tiles_per_s_per_gpu"), ".3g"),
                         fmt(L.get("gb_per_s_per_gpu"), ".1f") + (" (capped)" if L.get("capped_at_l2_slice_port") else ""),
                         ("<= " if L.get("unit_clock_is_upper_bound") else "") + fmt(clk, ".0f"), fmt(gb_clk, ".1f"),
                         fmt(L.get("gpu_model_gb_per_s_per_gpu"), ".1f")])
        out.append(f"Latency per tile and throughput in the L2 clock ({fmt(l2, '.0f')} MHz), from the RTL "
                   f"co-simulation's cycle counts ({get(lat[0], 'latency', 'source', default='?')}); '-' where the unit "
                   "has no per-tile latency (the monitor counts alongside the L2 write path). GB/s per GPU assumes every "
                   "instance busy at the L2 clock behind the lockstep's fixed-latency memory (an upper bound; a "
                   "monitor's is capped at its L2 slice's data port); the unit clock is the lower of the synthesised "
                   f"fmax at the GPU's node ({node if node is not None else '?'} nm) and the L2 clock, and the next "
                   "column is the same bound at that clock (the datapaths are not pipelined for the L2 clock); the last "
                   "column is the same engine jobs in the simulated GPU's memory hierarchy:\n")
        out.append(md_table(["unit", "tile latency (cycles)", "tile latency (ns)", "tiles/s per GPU",
                             "GB/s per GPU (upper bound)", "unit clock (MHz)", "GB/s per GPU at the unit clock",
                             "GB/s per GPU in the GPU model"], rows) + "\n")
        if not new_cols:
            # Those figures are spartan-area's to compute (unit clock = min(fmax, L2 clock), monitor capped at its
            # L2 slice's data port); the report only reads them.
            out.append("This area.json predates spartan-area's unit-clock and L2-slice-port columns ('-' above): "
                       "its monitor GB/s are **not capped** at the L2 slices' data ports and can exceed the L2's own "
                       "bandwidth. Rerun spartan-area for the current figures.\n")
    nodes = get(area, "gpu_totals", default=[]) or []
    if nodes:
        rows = [[n.get("node_nm"), fmt(n.get("per_gpu_mm2"), ".4f"),
                 fmt(n.get("share_of_die_percent"), ".4f") if "share_of_die_percent" in n else "-"] for n in nodes]
        proc = get(area, "gpu", "process")
        out.append(f"All synthesised units of one {get(area, 'gpu', 'name', default='GPU')} (one monitor per L2 slice, "
                   f"engines as above; sub-blocks not counted twice); the share of the "
                   f"{fmt(get(area, 'gpu', 'die_area_mm2'), '.0f')} mm^2 die is given at the "
                   f"{node if node is not None else '?'} nm node"
                   + (f" (area.json's process_node_nm; the GPU itself is {proc})" if proc and str(node) not in str(proc)
                      else "") + ":\n")
        out.append(md_table(["node (nm)", "units per GPU (mm^2)", "share of die (%)"], rows) + "\n")
    write_dat(os.path.join(tmp, "area.dat"), ["unit", "logic_mm2", "sram_mm2"], dat)
    if dat and gnuplot(GP_HEAD + "set output 'area.png'\nset title 'Area per instance at 180 nm (synthesised; "
                       "engine sub-blocks not shown)'\nset xtics noenhanced\n"
                       "set style histogram rowstacked\nset ylabel 'mm^2'\n"
                       "plot 'area.dat' using 2:xtic(1) title 'logic', '' using 3 title 'memory (SRAM estimate)'\n", tmp):
        out.append("![area breakdown](area.png)\n")
    out.append(f"Source: `spartan-area` (Yosys + OpenSTA, OSU 0.18 um); memories in the totals: "
               f"{get(area, 'memory_model', 'total_uses', default='?')}. Details: `run/area/area.md`.\n")
    return "\n".join(out)


def to_html(md):
    try:
        import markdown  # Debian python3-markdown
        body = markdown.markdown(md, extensions=["tables"])
    except ImportError:
        body = "<pre>" + html.escape(md) + "</pre>"
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>Spartan report</title><style>"
            "body{font-family:sans-serif;max-width:1100px;margin:2em auto}table{border-collapse:collapse}"
            "td,th{border:1px solid #999;padding:2px 6px;text-align:right}img{max-width:100%}</style></head><body>"
            + body + "</body></html>\n")


if __name__ == "__main__":
    try:
        main()
    except ReportError as e:
        sys.stderr.write(f"make_report: error: {e}\n")
        sys.exit(2)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, ZeroDivisionError) as e:
        # an input shaped in a way validate() does not know: still one line and status 2, no report written
        tb = e.__traceback__
        while tb.tb_next:
            tb = tb.tb_next
        sys.stderr.write(f"make_report: error: malformed input ({type(e).__name__}: {e}, make_report.py line "
                         f"{tb.tb_lineno}); no report written\n")
        sys.exit(2)
