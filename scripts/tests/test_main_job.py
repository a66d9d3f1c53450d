#!/usr/bin/python3
"""End-to-end test of the main job: runs scripts/run-main-job.sh with the `tiny` profile (lenet5, 20 steps,
RTL on one layer, area flow on small blocks) into a scratch directory and checks that report.json carries
the same numbers as the step outputs it was built from (train.json, sim/stats.json with its rtl section,
scale/t32, scale/t128, scale/t32e16, scale/t32e16mem and scale/t32mc stats.json, area.json),
that the functional checks passed, and that report.md/html and the plots exist.
Usage: test_main_job.py SOURCE_DIR BUILD_BIN_DIR"""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def close(a, b, what):
    if a is None or b is None:
        fail(f"{what}: missing value ({a!r} vs {b!r})")
    if not math.isclose(float(a), float(b), rel_tol=1e-12, abs_tol=1e-12):
        fail(f"{what}: report {a!r} != source {b!r}")


def main():
    src, bindir = sys.argv[1], sys.argv[2]
    work = tempfile.mkdtemp(prefix="spartan-e2e-")
    try:
        env = dict(os.environ, RUN_BIN=bindir, RUN_DIR=os.path.join(work, "run"),
                   RUN_REPORT=os.path.join(work, "report"))
        r = subprocess.run(["bash", os.path.join(src, "scripts/run-main-job.sh"), "tiny"], cwd=src, env=env,
                           capture_output=True, text=True, timeout=1200)
        sys.stdout.write(r.stdout[-4000:])
        if r.returncode != 0:
            fail(f"run-main-job.sh exited {r.returncode}: {r.stderr.strip()[-2000:]}")
        run, rep = env["RUN_DIR"], env["RUN_REPORT"]
        load = lambda p: json.load(open(p))
        train, stats = load(f"{run}/train.json"), load(f"{run}/sim/stats.json")
        area, report = load(f"{run}/area/area.json"), load(f"{rep}/report.json")
        rtl = stats.get("rtl")
        if not rtl or not rtl.get("layers"):
            fail("stats.json has no rtl section: the RTL lockstep did not run")
        for f in ("report.md", "report.html", "sparsity.png", "profiling.png", "conversion.png", "speedup.png"):
            if not os.path.getsize(os.path.join(rep, f)):
                fail(f"{f} is empty")
        # training numbers
        close(report["training"]["test_accuracy"], train["test_accuracy"], "test accuracy")
        # simulation: overall ratios and every layer's times
        ov, rov = stats["overall"], report["simulation"]["overall"]
        close(rov["profile"]["mean_layer_ratio"], ov["profile"]["mean_layer_ratio"], "mean profiling ratio")
        close(rov["convert"]["ratio"], ov["convert"]["ratio"], "conversion ratio")
        if len(report["simulation"]["layers"]) != len(stats["layers"]) or not stats["layers"]:
            fail("layer count differs between report and stats.json")
        for a, b in zip(report["simulation"]["layers"], stats["layers"]):
            close(a["software"]["profile"]["time_ns"], b["software"]["profile"]["time_ns"], "SW profiling time")
            close(a["hardware"]["convert"]["time_ns"], b["hardware"]["convert"]["time_ns"], "engine time")
        if not stats["checks"]["passed"]:
            fail("functional checks of the simulation failed")
        # the Markdown shows the same ratios (of the summed times) as stats.json, and the checks' outcome
        md = open(f"{rep}/report.md").read()
        if f"{ov['profile']['ratio']:.2f}x" not in md or f"{ov['convert']['ratio']:.2f}x" not in md:
            fail("report.md does not show the profiling and conversion ratios of stats.json")
        if "Every check passed" not in md:
            fail("report.md does not state the checks' outcome")
        # RTL: mismatches summed over the per-layer records of stats.json
        want = sum(x["mismatches"] for x in rtl["layers"])
        if report["rtl"]["mismatches"] != want or rtl["mismatches"] != want or want != 0:
            fail(f"RTL mismatches: report {report['rtl']['mismatches']}, stats.json {want} (must be 0)")
        # area: the report embeds area.json unchanged
        if report["area"] != area:
            fail("report.json area section differs from area.json")
        # area: latency/throughput come from the RTL co-simulation's cycle file (run --rtl -> spartan-area --cycles)
        cyc = load(f"{run}/sim/rtl_cycles.json")
        if area.get("cycles_source") != cyc.get("source") or not cyc.get("units"):
            fail("area.json did not read run/sim/rtl_cycles.json (cycles_source %r)" % area.get("cycles_source"))
        # the scale step: both ImageNet-scale replays passed their checks and the report carries their ratios
        sc = report.get("imagenet_scale")
        if not sc or len(sc["layers"]) != 13:
            fail("report.json has no imagenet_scale section of 13 layers")
        for tile, key in (("t32", "32"), ("t128", "128")):
            s = load(f"{run}/scale/{tile}/stats.json")
            if not s["checks"]["passed"]:
                fail(f"scale/{tile}: functional checks failed")
            for a, b in zip(sc["layers"], s["layers"]):
                close(a[f"profile_ratio_{key}"], b["profile_ratio"], f"scale {tile} profiling ratio {b['name']}")
                close(a[f"convert_ratio_{key}"], b["convert_ratio"], f"scale {tile} conversion ratio {b['name']}")
        # ... and the replay with 16 compaction engines (--units engine.count 16) beside them
        s = load(f"{run}/scale/t32e16/stats.json")
        if not s["checks"]["passed"] or s["units"]["engine"]["count"] != 16 or sc.get("engines_multi") != 16:
            fail("scale/t32e16: not a passing run with 16 engines in the report")
        for a, b in zip(sc["layers"], s["layers"]):
            close(a["convert_ratio_32_engines"], b["convert_ratio"], f"scale t32e16 conversion ratio {b['name']}")
        # ... and with them fetching their descriptors and writing completion records (host.engine_fetch, engine_record)
        m = load(f"{run}/scale/t32e16mem/stats.json")
        host = m["options"]["units"]["host"]
        if (not m["checks"]["passed"] or m["units"]["engine"]["count"] != 16 or not host["engine_fetch"] or
                not host["engine_record"] or not sc.get("engines_multi_memory_interface")):
            fail("scale/t32e16mem: not a passing run with 16 engines, descriptors and completion in memory, in the report")
        for a, b, c in zip(sc["layers"], m["layers"], s["layers"]):
            close(a["convert_ratio_32_engines_mem"], b["convert_ratio"], f"scale t32e16mem conversion ratio {b['name']}")
            if b["hardware"]["engine_mmio_reads"] != 0 or b["hardware"]["engine_record_poll_ns"] <= 0:
                fail(f"scale/t32e16mem {b['name']}: a status read charged, or no poll of the completion records")
            # the same jobs as with SUBMIT, and less host time: 4 writes and a poll instead of ~90 writes and a read
            if not b["hardware"]["convert"]["overhead_ns"] < c["hardware"]["convert"]["overhead_ns"]:
                fail(f"scale/t32e16mem {b['name']}: host overhead not below the SUBMIT run's")
        # ... and the monitors' flush completion counter polled from the GPU (host.monitor_completion, one engine)
        c32 = load(f"{run}/scale/t32/stats.json")
        q = load(f"{run}/scale/t32mc/stats.json")
        if (not q["checks"]["passed"] or not q["options"]["units"]["host"]["monitor_completion"] or
                not sc.get("monitor_completion_counter")):
            fail("scale/t32mc: not a passing run with the monitors' completion counter, in the report")
        for a, b, c in zip(sc["layers"], q["layers"], c32["layers"]):
            close(a["profile_ratio_32_completion"], b["profile_ratio"], f"scale t32mc profiling ratio {b['name']}")
            h = b["hardware"]
            if (h["monitor_mmio_reads"] != 0 or h["monitor_completion_poll_ns"] <= 0 or
                    not b["checks"]["monitor_completion_count_correct"]):
                fail(f"scale/t32mc {b['name']}: a status read charged, no poll of the counter, or a wrong count")
            # the same register writes, a poll of ~0.1-0.5 us instead of the 1 us read (the flush ~0.13 us longer)
            if not h["profile"]["time_ns"] < c["hardware"]["profile"]["time_ns"]:
                fail(f"scale/t32mc {b['name']}: hardware profile not shorter than with the status read")
        if "| profile 32x32, completion counter in memory |" not in md or "`--units host.monitor_completion`" not in md:
            fail("report.md: no column or sentence on the monitors' completion counter")
        if "## 4b. The units at ImageNet scale" not in md:
            fail("report.md has no ImageNet-scale section")
        # the tiny profile synthesises test blocks: the report must not present them as the units
        if "**Not the Spartan units**" not in md or "sim/area/tests/data/manifest.yaml" not in md:
            fail("report.md does not say that the tiny profile's area is of test blocks")
        print("e2e: report numbers match train.json, stats.json (incl. rtl) and area.json")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
