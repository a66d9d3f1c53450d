#!/usr/bin/python3
"""Builds report/ (report.md, report.html, report.json, PNG plots) from the outputs of the main job.

Inputs (all in --run DIR): train.json (spartan-train --out-json), sim/stats.json (spartan-sim run),
area/area.json (spartan-area). Every number in the report is read from those files; nothing is computed
here except means and ratios of those numbers, each labelled with its source. The report directory is
written to a temporary directory and renamed at the end, so a failure leaves no half-written report.
Exit status: 0, or 2 with one line if an input is missing or malformed.
"""
import argparse
import datetime
import html
import json
import os
import shutil
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


def fmt(x, spec=".2f", dash="-"):
    if x is None:
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


def git_commit():
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              timeout=10).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


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
        os.replace(tmp, a.out)
        if old:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def build(a, train, sim, area, rtl, tmp):
    doc = {"generated_utc": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"), "commit": git_commit(),
           "profile": a.profile}
    md = []
    dev = train.get("device", "unknown device")
    gpu = get(sim, "gpu", "preset", default="?")
    md.append("# Spartan co-simulation report\n")
    md.append(f"Generated {doc['generated_utc']} from commit `{doc['commit']}`, profile `{a.profile}`.\n")
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
    rows = [["test accuracy", fmt(100 * acc if acc is not None else None, ".2f") + " %",
             f"{train.get('test_images', 'all')} test images"],
            ["final training loss", fmt(train.get("final_loss", train.get("train_loss")), ".4f"), "mean of the last steps"],
            ["training wall time of the last epoch (s)", fmt(get(train, "epoch_seconds", -1), ".1f"),
             dev + " (a partial epoch when stopped by --iterations)"]]
    md.append(md_table(["quantity", "value", "source / note"], rows) + "\n")
    doc["training"] = {k: train.get(k) for k in ("model", "dataset", "device", "iterations", "batch", "gemm",
                                                   "test_accuracy", "final_loss", "train_loss", "epoch_seconds")}

    # 2. sparsity per layer over iterations (from the training run's own measurement)
    md.append("## 2. Activation sparsity per layer over training (measured)\n")
    layers = train.get("layers", [])
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
    plots = []
    if its and gnuplot(GP_HEAD + "set output 'sparsity.png'\nset title 'Activation sparsity per layer (measured)'\n"
                       "set xlabel 'layer'\nset ylabel 'sparsity (%)'\nset yrange [0:100]\nset style data linespoints\n"
                       "plot " + ", ".join(f"'sparsity.dat' using 1:{k + 2} title 'step {i}'"
                                           for k, i in enumerate(its)) + "\n", tmp):
        plots.append("sparsity.png")
        md.append("![sparsity per layer](sparsity.png)\n")
    doc["sparsity"] = [{"layer": L.get("layer"), "name": L.get("name"), "iterations": L.get("iterations"),
                        "act_density": L.get("act_density")} for L in layers]

    # 3./4. profiling and conversion
    sl = sim.get("layers", [])
    ov = sim.get("overall", {})
    md.append(f"## 3. Sparsity profiling: software kernel vs SparsityMonitor (simulated on {gpu})\n")
    rows, dat = [], []
    for L in sl:
        sw = get(L, "software", "profile", "time_ns")
        hw = get(L, "hardware", "profile", "time_ns")
        rows.append([f"it{L.get('iteration')}/L{L.get('layer')}", L.get("name"), fmt(L.get("density"), ".3f"),
                     fmt(sw / 1e3 if sw is not None else None, ".2f"), fmt(hw / 1e3 if hw is not None else None, ".2f"),
                     fmt(L.get("profile_ratio"), ".1f")])
        dat.append([f"it{L.get('iteration')}/L{L.get('layer')}", fmt(sw / 1e3 if sw else 0, ".4f"),
                    fmt(hw / 1e3 if hw else 0, ".4f")])
    md.append(md_table(["layer", "name", "density", "software (us)", "monitor (us)", "ratio"], rows) + "\n")
    pr = get(ov, "profile", "mean_layer_ratio")
    prr = get(ov, "profile", "mean_layer_ratio_relu_inputs")
    md.append(f"**Average profiling-time ratio software / monitor: {fmt(pr, '.1f')}x** over {len(sl)} layer "
              f"instances ({fmt(prr, '.1f')}x over the {get(ov, 'profile', 'relu_input_layers')} whose input is a "
              f"ReLU output; total-time ratio {fmt(get(ov, 'profile', 'ratio'), '.1f')}x); the Spartan paper reports "
              f"{PAPER_PROFILE_RATIO}x on average (real GPU-class hardware model, ImageNet networks).\n")
    write_dat(os.path.join(tmp, "profile.dat"), ["layer", "sw_us", "hw_us"], dat)
    if dat and gnuplot(GP_HEAD + "set output 'profiling.png'\nset title 'Profiling time per layer (simulated, "
                       + gpu + ")'\nset ylabel 'time (us, log)'\nset logscale y\n"
                       "plot 'profile.dat' using 2:xtic(1) title 'software kernel', '' using 3 title 'SparsityMonitor'\n",
                       tmp):
        md.append("![profiling time](profiling.png)\n")

    md.append(f"## 4. Dense-to-sparse conversion: software kernel vs CompactionEngine (simulated on {gpu})\n")
    rows, dat = [], []
    for L in sl:
        sw = get(L, "software", "convert", "time_ns")
        hw = get(L, "hardware", "convert", "time_ns")
        rows.append([f"it{L.get('iteration')}/L{L.get('layer')}", L.get("name"),
                     fmt(sw / 1e3 if sw is not None else None, ".2f"), fmt(hw / 1e3 if hw is not None else None, ".2f"),
                     fmt(L.get("convert_ratio"), ".2f")])
        dat.append([f"it{L.get('iteration')}/L{L.get('layer')}", fmt(sw / 1e3 if sw else 0, ".4f"),
                    fmt(hw / 1e3 if hw else 0, ".4f")])
    md.append(md_table(["layer", "name", "software (us)", "engine (us)", "ratio"], rows) + "\n")
    md.append(f"Total conversion-time ratio software / engine: **{fmt(get(ov, 'convert', 'ratio'), '.2f')}x**.\n")
    write_dat(os.path.join(tmp, "convert.dat"), ["layer", "sw_us", "hw_us"], dat)
    if dat and gnuplot(GP_HEAD + "set output 'conversion.png'\nset title 'Conversion time per layer (simulated, "
                       + gpu + ")'\nset ylabel 'time (us, log)'\nset logscale y\n"
                       "plot 'convert.dat' using 2:xtic(1) title 'software kernel', '' using 3 title 'CompactionEngine'\n",
                       tmp):
        md.append("![conversion time](conversion.png)\n")

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
        rows.append([f"it{L.get('iteration')}/L{L.get('layer')}", L.get("name"), fmt(L.get("density"), ".3f"),
                     fmt(g.get("dense_ms"), ".3f"), fmt(g.get("tile_sparse_ms"), ".3f"), fmt(g.get("speedup_measured")),
                     fmt(g.get("speedup_software")), fmt(g.get("speedup_hardware"))])
        dat.append([f"it{L.get('iteration')}/L{L.get('layer')}", fmt(g.get("speedup_measured"), ".4f", "NaN")])
    md.append(md_table(["layer", "name", "density", "dense (ms)", "tile-sparse (ms)", "GEMM speedup",
                        "layer, software path", "layer, Spartan path"], rows) + "\n")
    md.append(f"Overall tile-sparse GEMM speedup (sum of times, measured on {gdev}): "
              f"**{fmt(get(ov, 'speedup', 'gemm_measured'))}x**. ")
    if on_gpu:
        md.append(f"Layer speedup: software path **{fmt(get(ov, 'speedup', 'software'))}x**, Spartan path "
                  f"**{fmt(get(ov, 'speedup', 'hardware'))}x**. ")
    md.append("Paper (conv layers, ImageNet, GPU): " +
              ", ".join(f"{k} {v}x" for k, v in PAPER_CONV_SPEEDUPS.items()) + ".\n")
    write_dat(os.path.join(tmp, "speedup.dat"), ["layer", "gemm"], dat)
    if dat and gnuplot(GP_HEAD + "set output 'speedup.png'\nset title 'Tile-sparse GEMM speedup over dense GEMM ("
                       + str(gdev).replace("'", "") + ")'\n"
                       "set ylabel 'speedup (x)'\nplot 'speedup.dat' using 2:xtic(1) title 'dense / tile-sparse'\n", tmp):
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
                         fmt(j.get("tlm_cycles"), ".0f"), fmt(j.get("cycle_deviation_percent"), "+.1f") + " %"])
        md.append(md_table(["layer", "unit", "mismatches", "RTL cycles", "TLM cycles", "cycle deviation"], rows) + "\n")
        md.append(f"Source: {get(rtl, 'source', default='spartan-sim run --rtl')} (Verilated RTL and the TLM model "
                  "on the same line traffic; per-tile counts and registers compared exactly).\n")
        by_unit = get(rtl, "max_abs_cycle_deviation_percent_by_unit", default={}) or {}
        md.append(f"Total mismatches: **{get(rtl, 'mismatches', default='?')}** (must be 0); maximum |cycle "
                  f"deviation| {fmt(get(rtl, 'max_abs_cycle_deviation_percent'), '.2f')} % (goal 5 %)" +
                  ("; per unit: " + ", ".join(f"{k} {fmt(v, '.2f')} %" for k, v in sorted(by_unit.items()))
                   if by_unit else "") + ".\n")
    else:
        md.append("Not run in this job.\n")
    doc["rtl"] = rtl

    # 7. area
    md.append("## 7. Area and timing (synthesised, OSU 0.18 um; scaled)\n")
    md.append(area_section(area, tmp))
    doc["area"] = area
    return doc, "\n".join(md)


def area_section(area, tmp):
    """Area per unit (180 nm, synthesised), per GPU and share of die per node, from area.json."""
    out = []
    rows, dat = [], []
    for u in area.get("units", []):
        a180 = u.get("area_180nm", {})
        logic, sram, ff = a180.get("logic_um2"), a180.get("memory_sram_um2"), a180.get("memory_ff_um2")
        rows.append([u.get("name"), u.get("role"), fmt(u.get("cells"), "d"), fmt(logic, ".0f"), fmt(sram, ".0f"),
                     fmt(get(u, "timing_180nm", "fmax_mhz"), ".1f"), fmt(u.get("instances_per_gpu"), "d")])
        dat.append([u.get("name"), fmt((logic or 0) / 1e6, ".4f"), fmt((sram or 0) / 1e6, ".4f")])
    out.append(md_table(["unit", "role", "cells", "logic at 180 nm (um^2)", "memory as SRAM (um^2)",
                         "fmax at 180 nm (MHz)", "instances per GPU"], rows) + "\n")
    lat = [u for u in area.get("units", []) if get(u, "latency", "available", default=False)]
    if lat:
        rows = [[u.get("name"), fmt(get(u, "latency", "tile_latency_cycles"), ".1f"),
                 fmt(get(u, "latency", "tile_latency_ns"), ".1f"), fmt(get(u, "latency", "tiles_per_s_per_gpu"), ".3g"),
                 fmt(get(u, "latency", "gb_per_s_per_gpu"), ".1f")
                 + (" (capped)" if get(u, "latency", "capped_at_l2_slice_port", default=False) else ""),
                 fmt(get(u, "latency", "unit_clock_mhz"), ".0f"),
                 fmt(get(u, "latency", "gb_per_s_per_gpu_at_unit_clock"), ".1f"),
                 fmt(get(u, "latency", "gpu_model_gb_per_s_per_gpu"), ".1f")] for u in lat]
        out.append(f"Latency per tile and throughput in the L2 clock "
                   f"({fmt(get(lat[0], 'latency', 'l2_clock_mhz'), '.0f')} MHz), from the RTL co-simulation's cycle "
                   f"counts ({get(lat[0], 'latency', 'source', default='?')}); '-' where the unit has no per-tile "
                   "latency (the monitor counts alongside the L2 write path). GB/s per GPU assumes every instance "
                   "busy at the L2 clock behind the lockstep's fixed-latency memory (an upper bound; a monitor's is "
                   "capped at its L2 slice's data port); the unit clock is the lower of the synthesised fmax at "
                   f"the GPU's node ({get(area, 'gpu', 'process_node_nm', default='?')} nm) and the L2 clock, and the "
                   "next column is the same bound at that clock (the datapaths are not pipelined for the L2 clock); "
                   "the last column is the same engine jobs in the simulated GPU's memory hierarchy:\n")
        out.append(md_table(["unit", "tile latency (cycles)", "tile latency (ns)", "tiles/s per GPU",
                             "GB/s per GPU (upper bound)", "unit clock (MHz)", "GB/s per GPU at the unit clock",
                             "GB/s per GPU in the GPU model"], rows) + "\n")
    nodes = get(area, "gpu_totals", default=[]) or []
    if nodes:
        rows = [[n.get("node_nm"), fmt(n.get("per_gpu_mm2"), ".4f"),
                 fmt(n.get("share_of_die_percent"), ".4f") if "share_of_die_percent" in n else "-"] for n in nodes]
        out.append(f"All units of one {get(area, 'gpu', 'name', default='GPU')} (one monitor per L2 slice, "
                   "engines as configured); the share of die is given at the GPU's own node:\n")
        out.append(md_table(["node (nm)", "units per GPU (mm^2)", "share of die (%)"], rows) + "\n")
    write_dat(os.path.join(tmp, "area.dat"), ["unit", "logic_mm2", "sram_mm2"], dat)
    if dat and gnuplot(GP_HEAD + "set output 'area.png'\nset title 'Area per instance at 180 nm (synthesised)'\n"
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
