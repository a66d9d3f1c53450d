"""Checks the "rtl" section that `spartan-sim run --rtl` adds to stats.json.

usage: check_run_rtl.py STATS_JSON [LAYER ...]   (LAYERs: the only layer indices expected; default: all replayed)
"""
import json
import sys

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
    dev = max(dev, abs(j["cycle_deviation_percent"]))
assert abs(rtl["max_abs_cycle_deviation_percent_by_unit"]["monitor"] - dev) < 1e-9
# the engine job of every checked layer re-run on the engine RTL: byte-exact, bytes actually compared
assert [(j["iteration"], j["layer"]) for j in engine] == expect, engine
for j in engine:
    assert j["mismatches"] == 0 and j["rtl_cycles"] > 0 and j["tlm_cycles"] > 0
    assert j["bytes_compared"] >= j["payload_bytes"]
assert sum(j["payload_bytes"] for j in engine) > 0 or not engine
for L in doc["layers"]:
    assert ("rtl" in L) == ((L["iteration"], L["layer"]) in expect)
assert doc["checks"]["passed"]
print("rtl section ok:", len(layers), "layers, monitor max |deviation| %.2f %%;" % dev, len(engine), "engine jobs byte-exact")
