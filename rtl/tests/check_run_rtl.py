"""Checks the "rtl" section that `spartan-sim run --rtl` adds to stats.json.

usage: check_run_rtl.py STATS_JSON [LAYER ...]   (LAYERs: the only layer indices expected; default: all replayed)
       check_run_rtl.py --engines N STATS_JSON
         (a run with --units engine.count N > 1: per layer one monitor record (the one region, the whole
          activation) and one engine record per engine's block, all clean, the blocks covering the layer's
          tiles once; some blocks narrower than the layer with several tile rows, i.e. read their counts
          with D_CFG.CT_PITCH across a tile-row wrap)
       check_run_rtl.py --engines-fetched N STATS_JSON
         (as --engines, for a run with --units host.engine_fetch: true as well: every engine record's descriptor
          was fetched by both models of the lockstep, and the replay's engines read one descriptor per job)
       check_run_rtl.py --engines-fetched-recorded N STATS_JSON
         (as --engines-fetched, with host.engine_record: true too: both models of the lockstep wrote a completion
          record per job, taking the same cycles for it, and the replay's engines one per job)
       check_run_rtl.py --monitor-completion STATS_JSON
         (a run with --units host.monitor_completion: true: in every layer's monitor lockstep both models added 1
          to the completion counter (1, 2, 3, ... over the layers, equal in both), the replay's monitors one add
          each per layer, no status read charged, the counter checked and polled in every layer)
       check_run_rtl.py --monitor-counter-fault STATS_JSON
         (that run under SPARTAN_RTL_TEST_FAULT=monitor-counter: every layer's monitor record failed on the counter
          alone, one mismatch, counts and timing clean; the run failed)
       check_run_rtl.py --engine-fault payload|cycles STATS_JSON
         (a run under SPARTAN_RTL_TEST_FAULT=engine-payload / engine-cycles: the engine scoreboard must have
          failed every job the fault touches, and only those; the monitor's records must be clean)
"""
import json
import os
import sys


def check_engine_fault(kind, path):
    doc = json.load(open(path))
    rtl = doc["rtl"]
    mon = [j for j in rtl["layers"] if j["unit"] == "monitor"]
    eng = [j for j in rtl["layers"] if j["unit"] == "engine"]
    assert mon and eng and len(mon) == len(eng), (len(mon), len(eng))
    assert all(j["mismatches"] == 0 and j["timing_within_tolerance"] for j in mon), mon
    assert not doc["checks"]["passed"]
    if kind == "payload":
        # bit 0 of the first payload byte: one byte differs from the lockstep TLM's and one from the replay's
        hit = [j for j in eng if j["payload_bytes"] > 0]
        assert hit, "no engine job with payload: the fault cannot show"
        for j in eng:
            want = 2 if j["payload_bytes"] > 0 else 0
            assert j["mismatches"] == want and j["replay_mismatches"] == want // 2, j
            assert j["timing_within_tolerance"], j
        assert rtl["mismatches"] == 2 * len(hit) and rtl["layers_outside_cycle_tolerance"] == 0, rtl["mismatches"]
        print("engine-payload fault caught in", len(hit), "of", len(eng), "jobs (the others have no payload)")
    elif kind == "cycles":
        for j in eng:
            assert not j["timing_within_tolerance"] and j["mismatches"] == 1 and j["replay_mismatches"] == 0, j
            assert j["cycle_deviation_percent"] > 5.0, j
        assert rtl["layers_outside_cycle_tolerance"] == len(eng) and rtl["mismatches"] == len(eng), rtl
        print("engine-cycles fault caught in all", len(eng), "jobs")
    else:
        raise SystemExit("unknown --engine-fault " + kind)


def check_engines(n, path, fetched=False, recorded=False):
    doc = json.load(open(path))
    rtl = doc["rtl"]
    eng_units = doc["units"]["engine"]
    assert doc["options"]["units"]["host"]["engine_fetch"] == fetched, doc["options"]["units"]["host"]
    assert doc["options"]["units"]["host"]["engine_record"] == recorded, doc["options"]["units"]["host"]
    assert eng_units["completion_records"] == (eng_units["jobs"] if recorded else 0), eng_units
    assert eng_units["completion_record_errors"] == 0, eng_units
    assert eng_units["descriptor_fetches"] == (eng_units["jobs"] if fetched else 0), eng_units
    assert eng_units["descriptor_fetch_errors"] == 0, eng_units
    assert rtl["mismatches"] == 0 and doc["checks"]["passed"], rtl["mismatches"]
    assert doc["units"]["engine"]["count"] == n, doc["units"]["engine"]["count"]
    several = pitched = 0
    for L in doc["layers"]:
        key = (L["iteration"], L["layer"])
        blocks = L["hardware"]["engine_blocks"]
        mon = [j for j in rtl["layers"] if j["unit"] == "monitor" and (j["iteration"], j["layer"]) == key]
        eng = [j for j in rtl["layers"] if j["unit"] == "engine" and (j["iteration"], j["layer"]) == key]
        # one monitor region, the whole activation (until the fifty-first session one per block); engine b checks
        # block b, and the blocks' tiles add up to the layer's
        assert [j["region"] for j in mon] == [0], (key, mon)
        assert [j["engine"] for j in eng] == list(range(len(blocks))), (key, eng)
        assert mon[0]["tiles"] == L["tiles"] == sum(j["tiles"] for j in eng), key
        tiles_c = max(b["tile_col0"] + b["tile_cols"] for b in blocks)
        # a block narrower than the layer with several tile rows: its count addresses wrap by the pitch
        pitched += sum(b["tile_cols"] < tiles_c and b["tile_rows"] >= 2 for b in blocks)
        for j in mon + eng:
            assert j["mismatches"] == 0 and j["timing_within_tolerance"] and j["rtl_cycles"] > 0, j
        for j in eng:
            assert j.get("descriptor_fetched", False) == fetched, j
            if fetched:  # FETCH write to job start: the TLM rule within a cycle of the RTL's, at least the read
                f = j["fetch_to_start_cycles"]
                assert f["rtl"] > 4 and abs(f["rtl"] - f["tlm"]) <= 1, j
            assert j.get("completion_record", False) == recorded, j
            if recorded:  # the cycles the record's write added to the job: equal in both models, at least a write
                c = j["record_cycles"]
                assert c["rtl"] > 1 and c["rtl"] == c["tlm"], j
        if recorded:  # no status read charged; the poll of the records instead
            assert L["hardware"]["engine_mmio_reads"] == 0 and L["hardware"]["engine_record_poll_ns"] > 0, key
        for j, b in zip(eng, blocks):
            assert j["replay_job_cycles"] == b["cycles"] and j["payload_bytes"] == b["payload_bytes"], (j, b)
        several += len(blocks) > 1
        assert isinstance(L["rtl"], dict), key
        multi = L["rtl_engine"] if len(blocks) > 1 else [L["rtl_engine"]]
        assert len(multi) == len(blocks)
    assert several > 0, "no layer was cut into blocks"
    assert pitched > 0, "no block of several tile rows read its counts with a pitch"
    # rtl_cycles.json (spartan-area --cycles) names the layers co-simulated (review of 28121a3: it said 38
    # layer(s) for the sample's 10 with 4 engines, when each block had a monitor region)
    cyc = json.load(open(os.path.join(os.path.dirname(path), "rtl_cycles.json")))
    want = "co-simulation of %d layer(s)" % len(doc["layers"])
    assert want in cyc["source"], (want, cyc["source"])
    print("engines:", several, "of", len(doc["layers"]), "layers cut into blocks,", pitched,
          "blocks read their counts with a pitch, every region and block clean" +
          (", every descriptor fetched (%d)" % eng_units["descriptor_fetches"] if fetched else "") +
          (", every job's completion record written (%d)" % eng_units["completion_records"] if recorded else ""))


if sys.argv[1] in ("--engines", "--engines-fetched", "--engines-fetched-recorded"):
    check_engines(int(sys.argv[2]), sys.argv[3], fetched=sys.argv[1] != "--engines",
                  recorded=sys.argv[1] == "--engines-fetched-recorded")
    sys.exit(0)

def check_monitor_completion(path):
    doc = json.load(open(path))
    rtl = doc["rtl"]
    assert doc["options"]["units"]["host"]["monitor_completion"] is True, doc["options"]["units"]["host"]
    assert rtl["mismatches"] == 0 and doc["checks"]["passed"], rtl["mismatches"]
    mon = [j for j in rtl["layers"] if j["unit"] == "monitor"]
    assert len(mon) == len(doc["layers"]) > 1, (len(mon), len(doc["layers"]))
    for k, j in enumerate(mon, 1):
        c = j["completion_counter"]
        assert c["rtl"] == c["tlm"] == k and c["mismatches"] == 0 and j["mismatches"] == 0, j
    for L in doc["layers"]:
        h = L["hardware"]
        assert L["checks"]["monitor_completion_count_correct"] is True, L["name"]
        assert h["monitor_mmio_reads"] == 0 and h["monitor_completion_poll_ns"] > 0, L["name"]
    layers = len(doc["layers"])
    assert all(m["completion_adds"] == layers for m in doc["units"]["monitors"]), doc["units"]["monitors"]
    print("monitor completion counter: %d layers, both models of the lockstep counted every flush (1..%d), "
          "%d monitors added once per layer" % (layers, layers, len(doc["units"]["monitors"])))


def check_monitor_counter_fault(path):
    doc = json.load(open(path))
    rtl = doc["rtl"]
    mon = [j for j in rtl["layers"] if j["unit"] == "monitor"]
    assert mon and not doc["checks"]["passed"], len(mon)
    for k, j in enumerate(mon, 1):
        c = j["completion_counter"]
        assert c["tlm"] == k and c["rtl"] == k + 1 and c["mismatches"] == 2, j
        assert j["mismatches"] == 2 and j["count_mismatches"] == 0 and j["timing_within_tolerance"], j
    assert rtl["mismatches"] == 2 * len(mon), rtl["mismatches"]
    print("monitor-counter fault caught in all", len(mon), "layers")


if sys.argv[1] == "--monitor-completion":
    check_monitor_completion(sys.argv[2])
    sys.exit(0)

if sys.argv[1] == "--monitor-counter-fault":
    check_monitor_counter_fault(sys.argv[2])
    sys.exit(0)

if sys.argv[1] == "--engine-fault":
    check_engine_fault(sys.argv[2], sys.argv[3])
    sys.exit(0)

doc = json.load(open(sys.argv[1]))
rtl = doc["rtl"]
want = [int(x) for x in sys.argv[2:]]
assert rtl["mismatches"] == 0, rtl["mismatches"]
layers = [j for j in rtl["layers"] if j["unit"] == "monitor"]
engine = [j for j in rtl["layers"] if j["unit"] == "engine"]
replayed = [(L["iteration"], L["layer"]) for L in doc["layers"]]
expect = [k for k in replayed if not want or k[1] in want]
got = [(j["iteration"], j["layer"]) for j in layers]
assert got == expect and got, (got, expect)
dev = 0.0
for j in layers:
    for k in ("iteration", "layer", "name", "unit", "mismatches", "rtl_cycles", "tlm_cycles", "cycle_deviation_percent"):
        assert k in j, k
    assert j["unit"] == "monitor" and j["mismatches"] == 0 and j["rtl_cycles"] > 0 and j["tlm_cycles"] > 0
    assert j["requests"] > 0 and j["tiles"] > 0
    # the lockstep replayed the write requests the replay's monitors counted, each byte of the activation once
    lay = next(L for L in doc["layers"] if (L["iteration"], L["layer"]) == (j["iteration"], j["layer"]))
    assert j["stimulus"] == "replay" and j["stimulus_bytes"] == lay["dense_bytes"], (j, lay["dense_bytes"])
    dev = max(dev, abs(j["cycle_deviation_percent"]))
assert abs(rtl["max_abs_cycle_deviation_percent_by_unit"]["monitor"] - dev) < 1e-9
# the engine job of every checked layer re-run on the engine RTL: byte-exact, bytes actually compared
assert [(j["iteration"], j["layer"]) for j in engine] == expect, engine
for j in engine:
    assert j["mismatches"] == 0 and j["rtl_cycles"] > 0 and j["tlm_cycles"] > 0
    assert j["bytes_compared"] >= j["payload_bytes"]
    # the TLM engine timing is calibrated from the RTL (docs/hw-units.md): per-job deviation within 5 %
    assert abs(j["cycle_deviation_percent"]) <= 5.0, j
assert sum(j["payload_bytes"] for j in engine) > 0 or not engine
for L in doc["layers"]:
    assert ("rtl" in L) == ((L["iteration"], L["layer"]) in expect)
assert doc["checks"]["passed"]
# per-unit cycle figures for spartan-area --cycles, next to stats.json
import os
cyc = json.load(open(os.path.join(os.path.dirname(os.path.abspath(sys.argv[1])), "rtl_cycles.json")))
assert cyc["source"] and set(cyc["units"]) == {"sparsity_monitor", "compaction_engine"}, cyc
assert cyc["units"]["sparsity_monitor"]["tiles"] == sum(j["tiles"] for j in layers)
assert cyc["units"]["sparsity_monitor"]["busy_cycles"] == sum(j["rtl_cycles"] for j in layers)
assert cyc["units"]["compaction_engine"]["busy_cycles"] == sum(j["rtl_cycles"] for j in engine)
for u in cyc["units"].values():
    assert u["tiles"] > 0 and u["busy_cycles"] > 0 and u["tile_bytes"] > 0
print("rtl section ok:", len(layers), "layers, monitor max |deviation| %.2f %%;" % dev, len(engine), "engine jobs byte-exact")
