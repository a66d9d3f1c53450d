"""Checks the "rtl" section that `spartan-sim run --rtl` adds to stats.json.

usage: check_run_rtl.py STATS_JSON [LAYER ...]   (LAYERs: the only layer indices expected; default: all replayed)
"""
import json
import sys

doc = json.load(open(sys.argv[1]))
rtl = doc["rtl"]
want = [int(x) for x in sys.argv[2:]]
assert rtl["mismatches"] == 0, rtl["mismatches"]
layers = rtl["layers"]
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
assert abs(rtl["max_abs_cycle_deviation_percent"] - dev) < 1e-9
for L in doc["layers"]:
    assert ("rtl" in L) == ((L["iteration"], L["layer"]) in expect)
assert doc["checks"]["passed"]
print("rtl section ok:", len(layers), "layers, max |deviation| %.2f %%" % dev)
