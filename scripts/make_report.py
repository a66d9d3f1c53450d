#!/usr/bin/python3
"""Builds report/ (report.md, report.html, report.json, PNG plots) from the outputs of the main job.

Inputs (all in --run DIR): train.json (spartan-train --out-json), sim/stats.json (spartan-sim run),
area/area.json (spartan-area). Every number in the report is read from those files; nothing is computed
here except means and ratios of those numbers, each labelled with its source. The report directory is
written to a temporary directory and renamed at the end, so a failure leaves no half-written report.
The inputs are checked before anything is written: required keys and types, finite numbers, the same model,
device and activation densities in train.json and stats.json, the same GPU in stats.json and area.json, and
the simulation's own checks (checks.passed, RTL mismatches). The GEMM times of the backward passes and the
software compaction times are read from the trace's header (DIR/run.sptrace) when it is there.
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


def load_json(path, what):
    try:
        with open(path, "r", encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise ReportError(f"{path}: missing ({what})")
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ReportError(f"{path}: not valid JSON ({what}): {e}")


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


def read_trace_gemm(path, sim):
    """Forward/backward GEMM and compaction times (ms) of the replayed (iteration, layer) pairs from the trace's
    safetensors header; (dict keyed by (iteration, layer), None) or (None, reason)."""
    try:
        with open(path, "rb") as f:
            n = struct.unpack("<Q", f.read(8))[0]
            if n > (1 << 28):
                return None, f"{path}: header too large"
            meta = json.loads(f.read(n)).get("__metadata__", {})
        gt = meta.get("gemm_times")
        gt = json.loads(gt) if isinstance(gt, str) else gt
        if not isinstance(gt, list):
            return None, f"{path} has no gemm_times"
    except (OSError, struct.error, ValueError, AttributeError) as e:
        return None, f"{path} not readable ({e.__class__.__name__})"
    if meta.get("model") not in (None, get(sim, "trace", "model")):
        return None, f"{path} is from model '{meta.get('model')}', not the replayed one"
    want = {(L["iteration"], L["layer"]) for L in sim["layers"]}
    out = {(g.get("iteration"), g.get("layer")): g for g in gt if isinstance(g, dict)}
    out = {k: v for k, v in out.items() if k in want}
    if len(out) != len(want):
        return None, f"{path} lacks GEMM times of {len(want) - len(out)} replayed layer(s)"
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
            f"{fmt(o['host_mmio_read_ns'], '.0f')} ns per unit register access; monitor broadcast "
            + ("on (one charged write for all monitors, an assumed broadcast register window)" if bc is True else
               "off (every monitor's write charged)" if bc is False else "not recorded")
            + "; unit settings: " + (f"`{uf}`" if uf else "the defaults (no --units file)" if uf == "" else
                                     "not recorded (stats.json predates options.units_file)")
            + (" (all values in stats.json `options.units`)" if isinstance(o.get("units"), dict) else ""))


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
    md.append(f"**Every check passed**: the simulation's functional checks (stats.json `checks.passed`: software and "
              f"engine outputs identical to the reference compaction, monitor counts exact, for all {n} layer "
              f"instances), RTL/TLM lockstep {'with 0 mismatches' if rtl else 'not run'}, and the inputs describe "
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
        f"{'the layers listed in section 6' if rtl else 'no layer (not run)'}.\n"
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
             (f", {get(train, 'epoch_capture_seconds', -1):.1f} s of it (GEMMs timed on both engines, trace written)"
              if isinstance(get(train, "epoch_capture_seconds", -1), (int, float)) else "")]]
    md.append(md_table(["quantity", "value", "source / note"], rows) + "\n")
    doc["training"] = {k: train.get(k) for k in ("model", "dataset", "device", "iterations", "batch", "gemm",
                                                   "test_accuracy", "final_loss", "train_loss", "epoch_seconds",
                                                   "epoch_capture_seconds")}

    # 2. sparsity per layer over iterations (from the training run's own measurement)
    md.append("## 2. Activation sparsity per layer over training (measured)\n")
    layers = train["layers"]
    its = sorted({i for L in layers for i in L.get("iterations", [])})
    hdr = ["layer", "name"] + [f"step {i}" for i in its]
    rows, dat = [], []
    for L in layers:
        dens = dict(zip(L.get("iterations", []), L.get("act_density", [])))
        rows.append([L.get("layer"), L.get("name")] + [fmt(100 * (1 - dens[i]), ".1f") + " %" if i in dens else "-"
                                                       for i in its])
        dat.append([L.get("layer")] + [fmt(100 * (1 - dens[i]), ".3f") if i in dens else "NaN" for i in its])
    md.append("Sparsity = fraction of zero elements of the activation that feeds each conv/FC GEMM. Layer 0's is the "
              "network's input image (pixel zeros), not a ReLU output.\n")
    md.append(md_table(hdr, rows) + "\n")
    write_dat(os.path.join(tmp, "sparsity.dat"), ["layer"] + [f"step{i}" for i in its], dat)
    if its and gnuplot(GP_HEAD + "set output 'sparsity.png'\nset title 'Activation sparsity per layer (measured)'\n"
                       "set xlabel 'layer'\nset ylabel 'sparsity (%)'\nset yrange [0:100]\nset style data linespoints\n"
                       "plot " + ", ".join(f"'sparsity.dat' using 1:{k + 2} title 'step {i}'"
                                           for k, i in enumerate(its)) + "\n", tmp):
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
              f"slower on {slower} of the {n}. Mean of the per-layer ratios {fmt(pp['mean_layer_ratio'])}x "
              + (f"({fmt(pp['mean_layer_ratio_relu_inputs'])}x over the {pp['relu_input_layers']} whose input is a "
                 "ReLU output)" if pp['relu_input_layers'] > 0 else "(no replayed layer's input is a ReLU output)") +
              f". The Spartan paper reports {PAPER_PROFILE_RATIO}x on average (a mean over layers; real "
              "GPU-class hardware, ImageNet networks).\n")
    split = fixed_split(sl, "profile", "software", "monitor")
    md.append(caveat + (" " + split[1] if split else " stats.json does not split the times into memory and "
                        "fixed costs (no `overhead_ns`).") + "\n")
    doc["profile_summary"] = {"ratio_of_sums": pp["ratio"], "hardware_slower_layers": slower, "layers": n,
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
              f"slower on {slower} of the {n}.\n")
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
    for L in sl:
        g = L.get("gemm", {})
        rows.append([lbl(L), L["name"], fmt(L["density"], ".3f"),
                     fmt(g.get("dense_ms"), ".3f"), fmt(g.get("tile_sparse_ms"), ".3f"), fmt(g.get("speedup_measured")),
                     fmt(g.get("speedup_software")), fmt(g.get("speedup_hardware"))])
        dat.append([lbl(L), dat_num(g.get("speedup_measured"))])
    md.append(md_table(["layer", "name", "density", "forward dense (ms)", "forward tile-sparse (ms)",
                        "forward GEMM speedup (dense / tile-sparse)", "layer, software path", "layer, Spartan path"],
                       rows) + "\n")
    if is_num(get(ov, "speedup", "gemm_measured")):
        md.append(f"Overall **forward** tile-sparse GEMM speedup (sum of dense / sum of tile-sparse forward GEMM "
                  f"times, measured on {gdev}): **{fmt(get(ov, 'speedup', 'gemm_measured'))}x**. ")
    else:
        md.append(f"Overall **forward** tile-sparse GEMM speedup: not available "
                  f"({get(ov, 'speedup_unavailable', default='stats.json gives none')}). ")
    if on_gpu:
        md.append(f"Layer speedup: software path **{fmt(get(ov, 'speedup', 'software'))}x**, Spartan path "
                  f"**{fmt(get(ov, 'speedup', 'hardware'))}x**. ")
    md.append("Paper (conv layers, ImageNet, GPU): " +
              ", ".join(f"{k} {v}x" for k, v in PAPER_CONV_SPEEDUPS.items()) + ".\n")
    trace_path = os.path.join(a.run, "run.sptrace")
    gt, why = read_trace_gemm(trace_path, sim)
    passes = None
    if gt:
        passes = {}
        for p in ("fwd", "bwd_data", "bwd_weight"):
            d = sum(get(g, p, "dense_ms", default=0) or 0 for g in gt.values())
            t = [get(g, p, "tile_sparse_ms") for g in gt.values()]
            c = [get(g, p, "compact_ms") for g in gt.values()]
            ts = sum(t) if all(is_num(x) for x in t) else None
            cs = sum(c) if all(is_num(x) for x in c) else None
            passes[p] = {"dense_ms": d, "tile_sparse_ms": ts, "compact_ms": cs}
        tot = {k: (sum(v[k] for v in passes.values()) if all(v[k] is not None for v in passes.values()) else None)
               for k in ("dense_ms", "tile_sparse_ms", "compact_ms")}
        passes["all"] = tot
        names = {"fwd": "forward", "bwd_data": "backward data", "bwd_weight": "backward weight",
                 "all": "all three passes"}
        rows = []
        for p, v in passes.items():
            v["speedup"] = ratio(v["dense_ms"], v["tile_sparse_ms"]) if v["tile_sparse_ms"] is not None else None
            v["speedup_with_compaction"] = (ratio(v["dense_ms"], v["tile_sparse_ms"] + v["compact_ms"])
                                            if None not in (v["tile_sparse_ms"], v["compact_ms"]) else None)
            rows.append([names[p], fmt(v["dense_ms"]), fmt(v["tile_sparse_ms"]), fmt(v["speedup"]),
                         fmt(v["compact_ms"]), fmt(v["speedup_with_compaction"])])
        md.append(f"All GEMM passes of the {n} replayed layer instances, measured on {gdev} (trace header "
                  "`gemm_times`; every time in ms on the same device, like for like; compaction = the CPU's "
                  "dense-to-tile-sparse conversion of the sparse operand):\n")
        md.append(md_table(["pass", "dense (ms)", "tile-sparse (ms)", "speedup dense / tile-sparse",
                            "compaction (ms)", "speedup dense / (tile-sparse + compaction)"], rows) + "\n")
    else:
        md.append(f"Backward-pass GEMM and compaction times not shown: {why}.\n")
    if all(is_num(get(L, "tile_kinds", "zero")) and is_num(L.get("tiles")) for L in sl):
        tiles = sum(L["tiles"] for L in sl)
        zero = sum(get(L, "tile_kinds", "zero") for L in sl)
        # The cause is stated only when it is the cause: no zero tile to skip.
        cause = ": the kernel has no zero tile to skip, so it cannot gain much over dense" if zero == 0 else ""
        md.append(f"The tile-sparse GEMM skips all-zero tiles; the replayed activations ({tiles} tiles of "
                  f"{get(sim, 'options', 'tile', default='?')}) have **{zero} all-zero tiles** (stats.json "
                  f"`tile_kinds.zero`){cause}.\n")
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
        md.append(f"Total mismatches: **{get(rtl, 'mismatches', default='?')}** (checked: 0); maximum |cycle "
                  f"deviation| {fmt(get(rtl, 'max_abs_cycle_deviation_percent'), '.2f')} % (goal 5 %)" +
                  ("; per unit: " + ", ".join(f"{k} {fmt(v, '.2f')} %" for k, v in sorted(by_unit.items()))
                   if by_unit else "") + ".\n")
        md.append("The engine rows compare the TLM engine and the RTL behind the lockstep's fixed-latency memory, not "
                  "the engine in the GPU model (crossbar, L2, DRAM) whose times section 4 reports.\n")
    else:
        md.append("Not run in this job.\n")
    doc["rtl"] = rtl

    # 7. area
    md.append("## 7. Area and timing (synthesised, OSU 0.18 um; scaled)\n")
    md.append(area_section(area, sim, tmp))
    doc["area"] = area
    return doc, "\n".join(md)


def scale_section(a, gpu, md, doc, model, sl):
    """Section 4b: the units at ImageNet scale (run/scale/t32 and t128, written by make run's scale step)."""
    paths = {t: os.path.join(a.run, "scale", t, "stats.json") for t in ("t32", "t128")}
    md.append("## 4b. The units at ImageNet scale (synthetic activations, simulated on " + gpu + ")\n")
    if not all(os.path.exists(p) for p in paths.values()):
        md.append("Not run (the job's `scale` step writes " + " and ".join(paths.values()) + ").\n")
        doc["imagenet_scale"] = None
        return
    runs = {t: load_json(p, "spartan-sim run, scale step") for t, p in paths.items()}
    for t, d in runs.items():
        if not get(d, "checks", "passed"):
            raise ReportError(f"{paths[t]}: the functional checks failed")
    by = {t: {L["name"]: L for L in d["layers"]} for t, d in runs.items()}
    rows, out = [], []
    for L in runs["t32"]["layers"]:
        o = by["t128"].get(L["name"])
        if o is None:
            raise ReportError(f"{paths['t128']}: layer {L['name']} missing")
        rows.append([L["name"] + ("" if L["relu_input"] else " (image)"), fmt(L["dense_bytes"] / 1e6, ".1f"),
                     fmt(L["profile_ratio"]), fmt(o["profile_ratio"]), fmt(L["convert_ratio"], ".3f"),
                     fmt(o["convert_ratio"], ".3f")])
        out.append({"name": L["name"], "dense_bytes": L["dense_bytes"], "profile_ratio_32": L["profile_ratio"],
                    "profile_ratio_128": o["profile_ratio"], "convert_ratio_32": L["convert_ratio"],
                    "convert_ratio_128": o["convert_ratio"]})
    mb = [L["dense_bytes"] / 1e6 for L in sl if is_num(L.get("dense_bytes"))]
    size = f" are {fmt(min(mb), '.2f')}-{fmt(max(mb), '.2f')} MB" if mb else ""
    md.append(f"The {model} layers above{size}: small activations, where both profiling paths cost a few "
              "microseconds of fixed costs. To show how the ratios scale, the job also replays **synthetic** activations (random ReLU-like "
              "values at density 0.3; the image into conv1_1 all non-zero) of **real ImageNet conv layer sizes** "
              "(AlexNet, VGG-16, ResNet-18 at 224x224, batch 1; `sptrace_sample --imagenet`) with 32x32 and "
              "128x128 tiles. Ratios are software / hardware:\n")
    md.append(md_table(["layer", "MB", "profile 32x32", "profile 128x128", "convert 32x32", "convert 128x128"],
                       rows) + "\n")
    big = max(out, key=lambda r: r["dense_bytes"])
    md.append(f"The profiling ratio grows with the activation and the tile (largest layer, {big['name']}: "
              f"{fmt(big['profile_ratio_32'])}x with 32x32 tiles, {fmt(big['profile_ratio_128'])}x with 128x128; "
              "the flush's time grows with the number of tiles: every monitor scans every tile's counter, 8 counters in 10-11 "
              "cycles as in the RTL, and adds the non-zero ones to the count table with atomics). The one "
              f"CompactionEngine (one line per cycle) is slower than the software conversion on large layers "
              f"({fmt(big['convert_ratio_32'], '.3f')}x on {big['name']}). Larger batches and the tables with "
              "batch 4 and 16: `scripts/imagenet-replay.sh` and docs/reproduce-paper.md.\n")
    doc["imagenet_scale"] = {"batch": 1, "density": 0.3, "layers": out}


def area_section(area, sim, tmp):
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
        rows.append([name, u.get("role"), fmt(u.get("cells"), "d"), fmt(logic, ".0f"), fmt(sram, ".0f"),
                     ("<= " if untimed else "") + fmt(get(u, "timing_180nm", "fmax_mhz"), ".1f"),
                     fmt(u.get("instances_per_gpu"), "d")])
        if not sub(u):
            dat.append([u.get("name"), fmt(logic / 1e6 if is_num(logic) else None, ".4f", "NaN"),
                        fmt(sram / 1e6 if is_num(sram) else None, ".4f", "NaN")])
    out.append(md_table(["unit", "role", "cells", "logic at 180 nm (um^2)", "memory as SRAM (um^2)",
                         "fmax at 180 nm (MHz)", "instances per GPU"], rows) + "\n")
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
        out.append(f"All units of one {get(area, 'gpu', 'name', default='GPU')} (one monitor per L2 slice, "
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
