#!/usr/bin/python3
"""Fast test of scripts/make_report.py on small synthetic inputs (no training, simulation or synthesis):
a consistent run gives a report (status 0, the checks line, NaN instead of 0 in the .dat files for missing
values), and every refused input (failed checks, RTL mismatches, no layers, a missing or mistyped key, NaN/inf,
files of different runs, JSON of the wrong type) gives status 2, one line on stderr and no report: the previous
report directory stays as it was and no temporary directory is left behind.
Usage: test_make_report.py SOURCE_DIR"""
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

FAILS = []


def fail(msg):
    FAILS.append(msg)
    print("FAIL: " + msg)


def step(kind, t, ov):
    return {"name": kind, "time_ns": t, "overhead_ns": ov, "memory_ns": t - ov, "compute_ns": 0.0,
            "l2_bytes": 1024, "dram_bytes": 0}


def layer(it, l, name, dens, with_gemm=True):
    L = {"iteration": it, "layer": l, "name": name, "density": dens, "tiles": 4, "relu_input": l > 0,
         "tile_kinds": {"dense": 2, "sparse": 2, "zero": 0},
         "software": {"profile": step("sw_profile", 3500.0, 3000.0), "convert": step("convert", 6800.0, 6000.0)},
         "hardware": {"profile": step("profile", 3300.0, 2600.0), "convert": step("convert", 4000.0, 2800.0)},
         "profile_ratio": 3500.0 / 3300.0, "convert_ratio": 6800.0 / 4000.0, "checks": {"passed": True}}
    if with_gemm:
        L["gemm"] = {"device": "cpu: test", "dense_ms": 1.0, "tile_sparse_ms": 0.9, "speedup_measured": 1.0 / 0.9}
    else:
        L["gemm"] = {"note": "no measured GEMM times for this (iteration, layer) in the trace"}
    return L


def inputs():
    train = {"model": "vgg-s", "dataset": "fashion-mnist", "device": "cpu: test", "iterations": 10, "batch": 8,
             "gemm": "tile-sparse", "test_accuracy": 0.5, "test_images": 100, "train_loss": 1.5,
             "epoch_seconds": [1.0], "epoch_capture_seconds": [0.25],
             "layers": [{"layer": 0, "name": "conv1", "iterations": [0, 5], "act_density": [0.5, 0.4]},
                        {"layer": 1, "name": "fc1", "iterations": [0, 5], "act_density": [0.25, 0.2]}]}
    layers = [layer(0, 0, "conv1", 0.5), layer(0, 1, "fc1", 0.25, with_gemm=False)]
    n = len(layers)
    stats = {"tool": "spartan-sim run", "trace": {"path": "run.sptrace", "model": "vgg-s", "device": "cpu: test"},
             "gpu": {"preset": "v100", "sms": 2, "l2_slices": 2, "l2_mhz": 1447.0},
             "options": {"format": "ell", "tile": "32x32", "threshold": 0.5, "kernel_launch_ns": 3000.0,
                         "host_mmio_read_ns": 1000.0, "host_mmio_write_ns": 100.0, "host_monitor_broadcast": True,
                         "units_file": "", "units": {"monitor": {"counter_entries": 8192}}},
             "layers": layers,
             "overall": {"layers": n,
                         "profile": {"sw_ns": 3500.0 * n, "hw_ns": 3300.0 * n, "ratio": 3500.0 / 3300.0,
                                     "mean_layer_ratio": 3500.0 / 3300.0, "mean_layer_ratio_relu_inputs": 3500.0 / 3300.0,
                                     "relu_input_layers": 1,
                                     "memset_launched": {"hw_ns": 6300.0 * n, "ratio": 3500.0 / 6300.0}},
                         "convert": {"sw_ns": 6800.0 * n, "hw_ns": 4000.0 * n, "ratio": 6800.0 / 4000.0}},
             "checks": {"passed": True, "extension_mismatches": 0},
             "rtl": {"mismatches": 0, "layers": [{"iteration": 0, "layer": 0, "unit": "monitor", "mismatches": 0,
                                                  "rtl_cycles": 100, "tlm_cycles": 100,
                                                  "cycle_deviation_percent": 0.0}]}}
    area = {"tool": "spartan-area",
            "gpu": {"name": "v100", "l2_slices": 2, "l2_clock_mhz": 1447.0, "process": "12nm", "process_node_nm": 16,
                    "die_area_mm2": 815.0, "compaction_engines": 1, "compaction_engines_assumed": True},
            "units": [{"name": "sparsity_monitor", "role": "monitor", "cells": 10, "instances_per_gpu": 2,
                       "parameter_overrides": {"CAPACITY": "64"},
                       "area_180nm": {"logic_um2": 1000.0, "logic_kge": 1000.0 / 24000.0, "memory_sram_um2": None},
                       "timing_180nm": {"fmax_mhz": 40.0}, "latency": {"available": False}}],
            "gpu_totals": [{"node_nm": 16, "per_gpu_mm2": 0.1, "share_of_die_percent": 0.01}],
            "memory_model": {"total_uses": "sram"},
            "synthesis": {"gate_equivalent": {"cell": "NAND2X1", "area_um2": 24.0}}}
    return train, stats, area


def write_run(d, train, stats, area, raw=None):
    """raw: {relative path: text} written verbatim (e.g. NaN literals or a JSON list)."""
    os.makedirs(os.path.join(d, "sim"), exist_ok=True)
    os.makedirs(os.path.join(d, "area"), exist_ok=True)
    for rel, obj in (("train.json", train), ("sim/stats.json", stats), ("area/area.json", area)):
        with open(os.path.join(d, rel), "w") as f:
            f.write(raw[rel] if raw and rel in raw else json.dumps(obj))
    for rel, text in (raw or {}).items():  # further files (the scale step's)
        if isinstance(rel, str) and rel.startswith("scale/"):
            os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
            with open(os.path.join(d, rel), "w") as f:
                f.write(text)


def write_trace_header(path, metadata):
    """A trace file with only its safetensors header (what make_report.py reads of it)."""
    hdr = json.dumps({"__metadata__": metadata}).encode()
    with open(path, "wb") as f:
        f.write(len(hdr).to_bytes(8, "little") + hdr)


def gemm_times(dense_ms=1.0):
    def pas(path):
        return {"dense_ms": dense_ms, "tile_sparse_ms": 0.5, "compact_ms": 0.1, "path": path}
    return [{"iteration": 0, "layer": l, "device": "cpu: test", "fwd": pas("tiles"), "bwd_data": pas("one-sgemm"),
             "bwd_weight": pas("tiles")} for l in (0, 1)]


def scale_run(tile, tiles, engines=1, memory_interface=False, monitor_completion=False):
    """An ImageNet-scale replay's stats.json (make run's scale step) with two layers; with engines > 1 the
    hardware conversion is that many times faster (its memory time: the jobs; 500 ns of host overhead, 100 ns
    with `memory_interface`: descriptors fetched and completion records, 4 register writes); with
    `monitor_completion` the hardware profile is 1000 ns shorter (no status read) and no read is charged."""
    def L(name, relu, mb, sw, hw):
        st = lambda t: {"time_ns": t, "overhead_ns": 0.0}
        hc = hw / engines + ((100.0 if memory_interface else 500.0) if engines > 1 else 0.0)
        hp = hw - (1000.0 if monitor_completion else 0.0)
        return {"name": name, "relu_input": relu, "tiles": tiles, "dense_bytes": mb * 1e6, "density": 0.3,
                "software": {"profile": st(sw), "convert": st(2 * sw)},
                "hardware": {"profile": st(hp), "convert": {"time_ns": hc, "overhead_ns": hc - hw / engines,
                                                            "memory_ns": hw / engines},
                             "engine_mmio_writes": 4 if memory_interface else 20,
                             "monitor_mmio_reads": 0 if monitor_completion else 1,
                             "monitor_completion_poll_ns": 125.0 if monitor_completion else 0.0},
                "checks": {"passed": True, **({"monitor_completion_count_correct": True} if monitor_completion else {})},
                "profile_ratio": sw / hp, "convert_ratio": 2 * sw / hc}
    units = {"host": {"engine_fetch": True, "engine_record": True}} if memory_interface else {}
    if monitor_completion:
        units = {"host": {"monitor_completion": True}}
    return {"checks": {"passed": True}, "gpu": {"preset": "v100", "sms": 2}, "options": {"tile": tile, "units": units},
            "units": {"engine": {"count": engines}}, "trace": {"path": "/elsewhere/imagenet-b1.sptrace"},
            "layers": [L("vgg16.conv1_1", False, 0.6, 4000.0, 4000.0), L("vgg16.conv1_2", True, 12.8, 28000.0, 6000.0)]}


def run_report(src, run, out):
    return subprocess.run(["/usr/bin/python3", os.path.join(src, "scripts/make_report.py"), "--run", run,
                           "--out", out], capture_output=True, text=True, timeout=60)


def main():
    src = sys.argv[1]
    work = tempfile.mkdtemp(prefix="spartan-report-test-")
    try:
        # a consistent run
        run, out = os.path.join(work, "ok"), os.path.join(work, "report")
        write_run(run, *inputs())
        r = run_report(src, run, out)
        if r.returncode != 0:
            fail(f"consistent inputs: status {r.returncode}: {r.stderr.strip()}")
        else:
            md = open(os.path.join(out, "report.md")).read()
            for want in ("Every check passed", "ratio software / monitor (sum of times): 1.06x",
                         "These ratios rest on the assumed launch and MMIO costs", "kernel launch 3000 ns",
                         "the monitor is slower on 0 of the 2", "mean over the last 10 SGD steps",
                         "**forward** tile-sparse GEMM", "CAPACITY=64", "**assumed**", "0 all-zero tiles",
                         "capture steps included, 0.25 s of it", "| 1000 | 0.04167 |", "1 GE = NAND2X1 (24 um^2)",
                         "the monitor would take 12.60 us: 0.56x",
                         "RTL/TLM lockstep with 0 mismatches on 1 layer/unit comparison",
                         "Total mismatches: **0** over 1 layer/unit comparison"):
                if want not in md:
                    fail(f"report.md lacks {want!r}")
            # As whole tokens: the report quotes the run's path, and mkdtemp's random suffix may read "-x..."
            # (CI failed once on "spartan-report-test-x...").
            for bad in ("nanx", "infx", "-x", "None"):
                if re.search(r"(?<![\w/.-])" + re.escape(bad) + r"(?![\w/-])", md):
                    fail(f"report.md contains {bad!r}")
            if "fmax is an upper bound" in md:
                fail("report.md calls fmax an upper bound for a unit timed with every path")
            dat = open(os.path.join(out, "data", "speedup.dat")).read().splitlines()
            if not dat[-1].endswith("NaN"):
                fail(f"speedup.dat: a layer without GEMM times is not NaN: {dat[-1]!r}")
        # A long run (188 recorded steps in 10 epochs of vgg-s): section 2 shows 8 steps, evenly spread with the
        # first and the last, and says so; sparsity.dat keeps them all. A short run shows every step, no note.
        if r.returncode == 0 and "recorded steps are shown" in md:
            fail("two recorded steps: report.md says only some are shown")
        t7, s7, a7 = inputs()
        steps = list(range(0, 100, 5))
        for L, first in zip(t7["layers"], (0.5, 0.25)):
            L["iterations"] = steps
            L["act_density"] = [first] + [0.3 + 0.01 * k for k in range(1, len(steps))]
        run7, out7 = os.path.join(work, "long"), os.path.join(work, "report-long")
        write_run(run7, t7, s7, a7)
        r7 = run_report(src, run7, out7)
        if r7.returncode != 0:
            fail(f"20 recorded steps: status {r7.returncode}: {r7.stderr.strip()}")
        else:
            md7 = open(os.path.join(out7, "report.md")).read()
            hdr = next((l for l in md7.splitlines() if l.startswith("| layer | name | step ")), "")
            cols = re.findall(r"step (\d+)", hdr)
            if len(cols) != 8 or cols[0] != "0" or cols[-1] != "95":
                fail(f"20 recorded steps: section 2 header shows {cols}, want 8 from step 0 to step 95")
            if "8 of the 20 recorded steps are shown" not in md7:
                fail("20 recorded steps: report.md does not say 8 of the 20 are shown")
            dat7 = open(os.path.join(out7, "data", "sparsity.dat")).read()
            if len(re.findall(r"step\d+", dat7.splitlines()[0])) != 20:
                fail("20 recorded steps: sparsity.dat does not keep every step")
        # A unit timed with its memories as black-box macros: fmax is an upper bound and the report says so.
        t3, s3, a3 = inputs()
        a3["units"][0]["timing_180nm"]["memory_paths_timed"] = False
        run3, out3 = os.path.join(work, "untimed"), os.path.join(work, "report-untimed")
        write_run(run3, t3, s3, a3)
        r = run_report(src, run3, out3)
        if r.returncode != 0:
            fail(f"memory_paths_timed false: status {r.returncode}: {r.stderr.strip()}")
        else:
            md3 = open(os.path.join(out3, "report.md")).read()
            for want in ("**fmax is an upper bound**", "<= 40.0"):
                if want not in md3:
                    fail(f"memory_paths_timed false: report.md lacks {want!r}")
        # Zero tiles present: the count is shown without the "no zero tile to skip" cause; a null count (no
        # number) leaves the sentence out instead of refusing the report.
        for zero, want, unwanted in ((3, "6 all-zero tiles", "no zero tile to skip"), (None, None, "all-zero tiles")):
            t2, s2, a2 = inputs()
            for L in s2["layers"]:
                L["tile_kinds"]["zero"] = zero
            run2, out2 = os.path.join(work, f"zero{zero}"), os.path.join(work, f"report-zero{zero}")
            write_run(run2, t2, s2, a2)
            r = run_report(src, run2, out2)
            if r.returncode != 0:
                fail(f"tile_kinds.zero = {zero}: status {r.returncode}: {r.stderr.strip()}")
                continue
            md2 = open(os.path.join(out2, "report.md")).read()
            if want and want not in md2:
                fail(f"tile_kinds.zero = {zero}: report.md lacks {want!r}")
            if unwanted in md2:
                fail(f"tile_kinds.zero = {zero}: report.md has {unwanted!r}")
        # No replayed layer whose input is a ReLU output: stats.json's mean over them is null (no mean over an
        # empty set); the report says so instead of refusing the run or printing a number.
        t4, s4, a4 = inputs()
        for L in s4["layers"]:
            L["relu_input"] = False
        s4["overall"]["profile"].update(relu_input_layers=0, mean_layer_ratio_relu_inputs=None)
        run4, out4 = os.path.join(work, "norelu"), os.path.join(work, "report-norelu")
        write_run(run4, t4, s4, a4)
        r = run_report(src, run4, out4)
        if r.returncode != 0:
            fail(f"no ReLU-input layer: status {r.returncode}: {r.stderr.strip()}")
        elif "(no replayed layer's input is a ReLU output)" not in open(os.path.join(out4, "report.md")).read():
            fail("no ReLU-input layer: report.md does not say there is none")
        # The trace's gemm_times: the pass table counts how each call ran; a pass without its dense time is
        # not summed as 0 ms (it was), the table is left out with the reason.
        for dense, want in ((1.0, "| backward data | 0 / 2 |"), (None, "bwd_data has no dense_ms")):
            t5, s5, a5 = inputs()
            run5, out5 = os.path.join(work, f"trace{dense}"), os.path.join(work, f"report-trace{dense}")
            write_run(run5, t5, s5, a5)
            g = gemm_times()
            if dense is None:
                del g[1]["bwd_data"]["dense_ms"]
            write_trace_header(os.path.join(run5, "run.sptrace"), {"model": "vgg-s", "gemm_times": json.dumps(g)})
            r = run_report(src, run5, out5)
            if r.returncode != 0:
                fail(f"trace gemm_times (dense {dense}): status {r.returncode}: {r.stderr.strip()}")
            elif want not in open(os.path.join(out5, "report.md")).read():
                fail(f"trace gemm_times (dense {dense}): report.md lacks {want!r}")
        # Section 4b from the scale step's two replays: batch read from the synthetic trace, the layers with fewer
        # 128x128 tiles than SMs named as a baseline effect.
        t6, s6, a6 = inputs()
        run6, out6 = os.path.join(work, "scale"), os.path.join(work, "report-scale")
        write_run(run6, t6, s6, a6)
        def scale_report(runs, what, wants):
            """Adds the scale runs {dir name: stats.json} to run6, writes the report and checks that report.md has
            every string of `wants`; returns (report.md, report.json), or None after a failure."""
            for t, doc in runs.items():
                os.makedirs(os.path.join(run6, "scale", t), exist_ok=True)
                with open(os.path.join(run6, "scale", t, "stats.json"), "w") as f:
                    json.dump(doc, f)
            r = run_report(src, run6, out6)
            if r.returncode != 0:
                fail(f"{what}: status {r.returncode}: {r.stderr.strip()}")
                return None
            md_ = open(os.path.join(out6, "report.md")).read()
            for want in wants:
                if want not in md_:
                    fail(f"{what}: report.md lacks {want!r}")
            return md_, json.load(open(os.path.join(out6, "report.json")))

        os.makedirs(os.path.join(run6, "scale"))
        write_trace_header(os.path.join(run6, "scale", "imagenet-b1.sptrace"), {"batch": "1"})
        got = scale_report({"t32": scale_run("32x32", 16), "t128": scale_run("128x128", 1)}, "scale section",
                           ("224x224, batch 1;", "density 0.30;", "2 of the 2 layers have fewer tiles than the 2 SMs",
                            "| vgg16.conv1_2 | 12.8 | 16 / 1 | 4.67 |"))
        if got and ("engines side by side" in got[0] or "| convert 32x32," in got[0]):
            fail("scale section: a column or sentence on several engines without their run")
        # ... and with the several-engines run (scale/t32e16): its column and sentence.
        # conv1_2: 56 us in software; one engine 6 us; 16 engines 6/16 + 0.5 = 0.875 us -> 64x
        got = scale_report({"t32e16": scale_run("32x32", 16, engines=16)}, "scale section with engines",
                           ("| convert 32x32, 16 engines |",
                            "| vgg16.conv1_2 | 12.8 | 16 / 1 | 4.67 | 4.67 | 9.333 | 9.333 | 64.000 |",
                            "With 16 engines side by side", "takes 0.88 us instead of 6.00 us (0.38 us of it"))
        if got:
            md6, rep6 = got
            if rep6["imagenet_scale"]["engines_multi"] != 16:
                fail("scale section with engines: report.json imagenet_scale.engines_multi is not 16")
            if "descriptors and completion in memory" in md6 or rep6["imagenet_scale"]["engines_multi_memory_interface"]:
                fail("scale section with engines: a column on the memory interface without its run")
        # ... and with the engines fetching descriptors and writing completion records (scale/t32e16mem)
        # conv1_2: 56 us in software; 16 engines 6/16 + 0.1 = 0.475 us -> 117.9x
        got = scale_report({"t32e16mem": scale_run("32x32", 16, engines=16, memory_interface=True)},
                           "scale section with the memory interface",
                           ("| convert 32x32, 16 engines, descriptors and completion in memory |",
                            "| vgg16.conv1_2 | 12.8 | 16 / 1 | 4.67 | 4.67 | 9.333 | 9.333 | 64.000 | 117.895 |",
                            "4 register writes on that layer", "it takes 0.47 us (0.38 us of it the jobs): 117.895x"))
        if got and not got[1]["imagenet_scale"]["engines_multi_memory_interface"]:
            fail("scale section with the memory interface: report.json does not say it")
        if got and ("completion counter in memory" in got[0] or got[1]["imagenet_scale"]["monitor_completion_counter"]):
            fail("scale section: a column on the monitors' completion counter without its run")
        # ... and with the monitors' flush completion counter (scale/t32mc): conv1_2's profile 6000 - 1000 ns -> 5.60x
        got = scale_report({"t32mc": scale_run("32x32", 16, monitor_completion=True)},
                           "scale section with the monitors' completion counter",
                           ("| profile 32x32, completion counter in memory |",
                            "| vgg16.conv1_2 | 12.8 | 16 / 1 | 4.67 | 5.60 | 4.67 | 9.333 | 9.333 | 64.000 | 117.895 |",
                            "the profile of vgg16.conv1_2 takes 5.00 us instead of 6.00 us: 5.60x"))
        if got and not got[1]["imagenet_scale"]["monitor_completion_counter"]:
            fail("scale section with the monitors' completion counter: report.json does not say it")
        if got and got[1]["imagenet_scale"]["layers"][1].get("profile_ratio_32_completion") != 28000.0 / 5000.0:
            fail("scale section with the monitors' completion counter: report.json's profile_ratio_32_completion")
        with open(os.path.join(out, "SENTINEL"), "w") as f:
            f.write("previous report\n")

        # refused inputs: (name, mutate(train, stats, area) -> raw or None, substring of the error line)
        def m(fn):
            return fn

        def nan_time(t, s, a):
            s["layers"][0]["hardware"]["profile"]["time_ns"] = float("nan")
            return {"sim/stats.json": json.dumps(s)}  # json.dumps writes the NaN literal

        def negative_time(t, s, a):
            s["layers"][0]["hardware"]["profile"]["time_ns"] = -10.0
            s["layers"][0]["profile_ratio"] = 3500.0 / -10.0
            return None

        def inf_ratio(t, s, a):
            s["overall"]["profile"]["ratio"] = float("inf")
            return {"sim/stats.json": json.dumps(s)}

        cases = [
            ("failed checks", lambda t, s, a: s["checks"].update(passed=False), "checks.passed is false"),
            ("RTL mismatches", lambda t, s, a: s["rtl"]["layers"][0].update(mismatches=7), "7 RTL/TLM mismatches"),
            ("RTL total mismatches", lambda t, s, a: s["rtl"].update(mismatches=3), "3 RTL/TLM mismatches"),
            ("no layers", lambda t, s, a: s.update(layers=[]), "stats.json.layers: expected nonempty list"),
            ("no overall", lambda t, s, a: s.pop("overall"), "stats.json.overall"),
            ("NaN time", nan_time, "not a finite number"),
            ("inf ratio", inf_ratio, "not a finite number"),
            ("other model", lambda t, s, a: t.update(model="lenet5"), "not the same run"),
            ("other device", lambda t, s, a: t.update(device="cuda: X"), "not the same run"),
            ("other densities", lambda t, s, a: s["layers"][1].update(density=0.3), "not the same run"),
            ("other layer name", lambda t, s, a: s["layers"][1].update(name="conv9"), "not the same run"),
            ("other GPU in area.json", lambda t, s, a: a["gpu"].update(name="a100"), "not the same run"),
            ("stats.json a list", lambda t, s, a: {"sim/stats.json": "[1, 2]"}, "expected a JSON object"),
            ("train.json a string", lambda t, s, a: {"train.json": '"x"'}, "expected a JSON object"),
            ("layer time missing", lambda t, s, a: s["layers"][0]["software"]["profile"].pop("time_ns"),
             "layers[0].software.profile.time_ns: missing"),
            ("layer time a string", lambda t, s, a: s["layers"][0]["hardware"]["convert"].update(time_ns="12"),
             "expected num"),
            ("layers not a list", lambda t, s, a: t.update(layers={"0": 1}), "train.json.layers: expected"),
            ("area units empty", lambda t, s, a: a.update(units=[]), "area.json.units"),
            ("ReLU-input mean null with such layers",
             lambda t, s, a: s["overall"]["profile"].update(mean_layer_ratio_relu_inputs=None),
             "mean_layer_ratio_relu_inputs: expected num"),
            ("not JSON", lambda t, s, a: {"area/area.json": "{"}, "not valid JSON"),
            # figures printed beside each other must agree (fourteenth review of the report, thirty-ninth session)
            ("a layer's checks failed", lambda t, s, a: s["layers"][1]["checks"].update(passed=False),
             "layers[1] (it0/L1).checks.passed is false"),
            ("overall ratio not its times'", lambda t, s, a: s["overall"]["profile"].update(ratio=52.5),
             "overall.profile.ratio: 52.5 but sw_ns / hw_ns"),
            ("overall sum not the layers'", lambda t, s, a: s["overall"]["convert"].update(sw_ns=1e9),
             "overall.convert.sw_ns: 1000000000.0 but the layers' times sum"),
            ("layer ratio not its times'", lambda t, s, a: s["layers"][0].update(profile_ratio=3.0),
             "layers[0] (it0/L0).profile_ratio: 3.0 but its times give"),
            ("mean of layer ratios", lambda t, s, a: s["overall"]["profile"].update(mean_layer_ratio=2.0),
             "mean_layer_ratio: 2.0 is not the mean"),
            ("memset bound missing", lambda t, s, a: s["overall"]["profile"].pop("memset_launched"),
             "overall.profile.memset_launched: missing"),
            ("memset bound not hw_ns + launches", lambda t, s, a: s["overall"]["profile"]["memset_launched"].update(
                hw_ns=1.0, ratio=3500.0 * len(s["layers"])), "overall.profile.memset_launched: hw_ns 1.0"),
            ("memset bound zero", lambda t, s, a: s["overall"]["profile"]["memset_launched"].update(hw_ns=0.0),
             "memset_launched.hw_ns: 0.0: times must be > 0"),
            ("accuracy in percent", lambda t, s, a: t.update(test_accuracy=41.8), "not a fraction in [0, 1]"),
            ("negative time", negative_time, "times must be > 0"),
            ("RTL cycles a string", lambda t, s, a: s["rtl"]["layers"][0].update(rtl_cycles="abc"),
             "rtl.layers[0].rtl_cycles: expected num"),
            ("RTL 37 % off without a mismatch", lambda t, s, a: s["rtl"]["layers"][0].update(
                rtl_cycles=137, cycle_deviation_percent=37.0), "outside the cycle tolerance"),
            ("RTL deviation not its cycles'", lambda t, s, a: s["rtl"]["layers"][0].update(cycle_deviation_percent=3.0),
             "cycle_deviation_percent: 3.0 but its cycles give"),
            ("ReLU-input count", lambda t, s, a: s["overall"]["profile"].update(relu_input_layers=0),
             "relu_input_layers: 0 but 1 layers have relu_input"),
            ("GEMM speedup not its times'", lambda t, s, a: s["layers"][0]["gemm"].update(speedup_measured=5.0),
             "gemm.speedup_measured: 5.0 but dense_ms / tile_sparse_ms"),
            ("GEMM time alone", lambda t, s, a: s["layers"][0]["gemm"].pop("dense_ms"),
             "gemm has tile_sparse_ms without the other time"),
        ]
        # the scale step's files, refused as the others: (name, mutate(t32 stats, t128 stats), error substring)
        def scale_case(mutate):
            def f(t, s, a):
                runs = {"t32": scale_run("32x32", 16), "t128": scale_run("128x128", 1)}
                mutate(runs)
                return {"scale/" + k + "/stats.json": json.dumps(v) for k, v in runs.items()}
            return f

        def nan_scale(runs):
            runs["t128"]["layers"][1]["hardware"]["profile"]["time_ns"] = float("nan")

        cases += [
            ("scale NaN", scale_case(nan_scale), "not a finite number"),
            ("scale other GPU", scale_case(lambda r: r["t128"]["gpu"].update(preset="h100")), "not the main replay's"),
            ("scale other tile", scale_case(lambda r: r["t128"]["options"].update(tile="64x64")),
             "tile 64x64, not 128x128"),
            ("scale failed checks", scale_case(lambda r: r["t32"]["checks"].update(passed=False)),
             "functional checks failed"),
            ("scale ratio not its times'", scale_case(lambda r: r["t32"]["layers"][0].update(profile_ratio=9.0)),
             "profile_ratio: not its times' ratio"),
            ("scale other layers", scale_case(lambda r: r["t128"]["layers"].pop()), "not the layers of"),
        ]
        def mc_case(mutate):
            def f(t, s, a):
                runs = {"t32": scale_run("32x32", 16), "t128": scale_run("128x128", 1),
                        "t32mc": scale_run("32x32", 16, monitor_completion=True)}
                mutate(runs)
                return {"scale/" + k + "/stats.json": json.dumps(v) for k, v in runs.items()}
            return f

        def engines_case(mutate):
            def f(t, s, a):
                runs = {"t32": scale_run("32x32", 16), "t128": scale_run("128x128", 1), "t32e16": scale_run("32x32", 16, 16),
                        "t32e16mem": scale_run("32x32", 16, 16, memory_interface=True)}
                mutate(runs)
                return {"scale/" + k + "/stats.json": json.dumps(v) for k, v in runs.items()}
            return f

        cases += [
            ("engines failed checks", engines_case(lambda r: r["t32e16"]["checks"].update(passed=False)),
             "t32e16/stats.json: the functional checks failed"),
            ("memory interface failed checks", engines_case(lambda r: r["t32e16mem"]["checks"].update(passed=False)),
             "t32e16mem/stats.json: the functional checks failed"),
            ("memory interface not fetched", engines_case(lambda r: r["t32e16mem"]["options"]["units"]["host"].update(
                engine_fetch=False)), "not a run with engine_fetch and engine_record true"),
            ("memory interface without records", engines_case(lambda r: r["t32e16mem"]["options"]["units"].pop("host")),
             "not a run with engine_fetch and engine_record true"),
            ("memory interface other engine count", engines_case(lambda r: r["t32e16mem"]["units"]["engine"].update(count=8)),
             "with the same engine count beside it"),
            ("memory interface other layers", engines_case(lambda r: r["t32e16mem"]["layers"].pop()), "not the layers of"),
            ("completion counter not on", mc_case(lambda r: r["t32mc"]["options"]["units"].pop("host")),
             "not a run with monitor_completion true"),
            ("completion counter and a status read", mc_case(
                lambda r: r["t32mc"]["layers"][1]["hardware"].update(monitor_mmio_reads=1)),
             "a status read charged with the completion counter"),
            ("completion counter ratio not its times'", mc_case(lambda r: r["t32mc"]["layers"][1].update(profile_ratio=9.0)),
             "profile_ratio: not its times' ratio"),
            ("completion counter other layers", mc_case(lambda r: r["t32mc"]["layers"].pop()), "not the layers of"),
            ("completion counter software profile not t32's", mc_case(lambda r: (
                r["t32mc"]["layers"][1]["software"]["profile"].update(time_ns=30000.0),
                r["t32mc"]["layers"][1].update(profile_ratio=30000.0 / r["t32mc"]["layers"][1]["hardware"]["profile"]["time_ns"]))),
             "software profile time not the one of"),
            ("completion counter failed checks", mc_case(lambda r: r["t32mc"]["checks"].update(passed=False)),
             "t32mc/stats.json: the functional checks failed"),
            ("completion counter layer check failed", mc_case(
                lambda r: r["t32mc"]["layers"][1]["checks"].update(monitor_completion_count_correct=False)),
             "checks.monitor_completion_count_correct: false"),
            ("completion counter no poll", mc_case(
                lambda r: r["t32mc"]["layers"][0]["hardware"].update(monitor_completion_poll_ns=0.0)),
             "monitor_completion_poll_ns: must be > 0"),
            ("completion counter other units", mc_case(
                lambda r: r["t32mc"]["options"]["units"]["host"].update(poll_interval_ns=2000.0)),
             "differ from"),
            ("completion counter baseline with the counter", mc_case(
                lambda r: r["t32"]["options"]["units"].update(host={"monitor_completion": True})),
             "the baseline beside"),
            ("engines only one", engines_case(lambda r: r["t32e16"]["units"]["engine"].update(count=1)),
             "not a run with several engines"),
            ("engines other layers", engines_case(lambda r: r["t32e16"]["layers"].pop()), "not the layers of"),
            ("engines ratio not its times'", engines_case(lambda r: r["t32e16"]["layers"][0].update(convert_ratio=9.0)),
             "convert_ratio: not its times' ratio"),
            ("engines software time not t32's", engines_case(lambda r: (
                r["t32e16"]["layers"][1]["software"]["convert"].update(time_ns=168000.0),
                r["t32e16"]["layers"][1].update(convert_ratio=168000.0 / r["t32e16"]["layers"][1]["hardware"]["convert"]["time_ns"]))),
             "software conversion time not the one of"),
            ("engines jobs longer than the conversion", engines_case(
                lambda r: r["t32e16"]["layers"][1]["hardware"]["convert"].update(memory_ns=5000.0)),
             "memory_ns: more than its time_ns"),
            ("engines profile not t32's", engines_case(
                lambda r: r["t32e16"]["layers"][1]["hardware"]["profile"].update(time_ns=7000.0)),
             "hardware profile time not the one of"),
            ("engines a layer twice", engines_case(lambda r: r["t32e16"]["layers"].append(copy.deepcopy(r["t32e16"]["layers"][1]))),
             "not the layers of"),
        ]
        for name, mutate, want in cases:
            t, s, a = copy.deepcopy(inputs())
            raw = mutate(t, s, a)
            run = os.path.join(work, "case")
            shutil.rmtree(run, ignore_errors=True)
            write_run(run, t, s, a, raw if isinstance(raw, dict) else None)
            r = run_report(src, run, out)
            lines = r.stderr.strip().splitlines()
            if r.returncode != 2:
                fail(f"{name}: status {r.returncode}, want 2 ({r.stderr.strip()[-300:]})")
            elif len(lines) != 1 or not lines[0].startswith("make_report: error: "):
                fail(f"{name}: stderr is not one error line: {r.stderr.strip()[-300:]!r}")
            elif want not in lines[0]:
                fail(f"{name}: error line lacks {want!r}: {lines[0]!r}")
            if not os.path.exists(os.path.join(out, "SENTINEL")):
                fail(f"{name}: the previous report directory was replaced")
            left = [d for d in os.listdir(work) if d.startswith(".report.tmp.")]
            if left:
                fail(f"{name}: temporary directories left: {left}")
        # RTL lockstep recorded on no layer: the report must not say it passed with 0 mismatches
        t, s_, a = inputs()
        s_["rtl"]["layers"] = []
        run = os.path.join(work, "norl")
        write_run(run, t, s_, a)
        out_n = os.path.join(work, "report-norl")
        r = run_report(src, run, out_n)
        if r.returncode != 0:
            fail(f"RTL on no layer: status {r.returncode}: {r.stderr.strip()[-300:]}")
        else:
            mdn = open(os.path.join(out_n, "report.md")).read()
            if "lockstep with 0 mismatches" in mdn or "RTL/TLM lockstep on no layer" not in mdn:
                fail("RTL on no layer: report.md claims a lockstep with 0 mismatches")
        # the sparsity plot's x axis is the layer index: whole-number ticks only (gnuplot's default put ticks at
        # 0.5, 1.5, ... for the five layers of lenet5). A stand-in gnuplot records the scripts it is given.
        fake = os.path.join(work, "fakebin")
        os.makedirs(fake)
        with open(os.path.join(fake, "gnuplot"), "w") as f:
            f.write("#!/bin/sh\ncat >> \"$GP_LOG\"\n")
        os.chmod(os.path.join(fake, "gnuplot"), 0o755)
        env = dict(os.environ, PATH=fake + os.pathsep + os.environ.get("PATH", ""),
                   GP_LOG=os.path.join(work, "gp.log"))
        run = os.path.join(work, "ok")
        r = subprocess.run(["/usr/bin/python3", os.path.join(src, "scripts/make_report.py"), "--run", run,
                            "--out", os.path.join(work, "report-gp")], capture_output=True, text=True, timeout=60,
                           env=env)
        gp = open(env["GP_LOG"]).read() if os.path.exists(env["GP_LOG"]) else ""
        sp = gp[gp.find("set output 'sparsity.png'"):].split("plot ", 1)[0]
        if r.returncode != 0 or "sparsity.png" not in gp or "set xtics 1" not in sp:
            fail(f"sparsity plot: no whole-number layer ticks (status {r.returncode})")
        # binaries of different builds (the build directory rebuilt while the job ran): the report says so
        for commits, want in ((("aaa", "aaa", "aaa"), False), (("aaa", "bbb", "aaa"), True)):
            t, s_, a = inputs()
            for obj, c in zip((t, s_, a), commits):
                obj["build"] = {"commit": c}
            run = os.path.join(work, "builds")
            shutil.rmtree(run, ignore_errors=True)
            write_run(run, t, s_, a)
            out_b = os.path.join(work, "report-builds")
            r = run_report(src, run, out_b)
            got = r.returncode == 0 and "binaries of different builds" in open(os.path.join(out_b, "report.md")).read()
            if r.returncode != 0 or got != want:
                fail(f"build commits {commits}: status {r.returncode}, different-builds note {got}, want {want}")
        # an input path that is a directory (or unreadable): one error line, status 2, not a traceback
        run = os.path.join(work, "case")
        shutil.rmtree(run, ignore_errors=True)
        write_run(run, *inputs())
        os.remove(os.path.join(run, "area", "area.json"))
        os.mkdir(os.path.join(run, "area", "area.json"))
        r = run_report(src, run, out)
        lines = r.stderr.strip().splitlines()
        if r.returncode != 2 or len(lines) != 1 or "area.json: not readable" not in lines[0]:
            fail(f"area.json a directory: status {r.returncode}, stderr {r.stderr.strip()[-300:]!r}")
        if not os.path.exists(os.path.join(out, "SENTINEL")):
            fail("area.json a directory: the previous report directory was replaced")
        if FAILS:
            print(f"{len(FAILS)} failure(s)")
            sys.exit(1)
        print(f"make_report: consistent inputs and {len(cases)} refused inputs ok")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
