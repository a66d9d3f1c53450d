// L2 slice behaviour on a tiny GPU (2 sets x 2 ways): hits, misses, LRU evictions, writebacks, MSHR merging,
// sectored fills, write-path observers. Each test builds its GPU in a child process (see child.h).
#include <gtest/gtest.h>

#include <cstring>

#include "child.h"
#include "spartan/hw/gpu/gpu_system.h"
#include "spartan/hw/gpu/l2_slice.h"
#include "tiny_gpu.h"

using namespace spartan::hw;
using namespace spartan::hw::gpu;
using nlohmann::json;

namespace {
// Lines with the same set index on the tiny GPU (1 slice, 2 sets, 128 B lines): stride 256 B.
constexpr std::uint64_t kA = 0x10000, kB = kA + 256, kC = kA + 512, kD = kA + 768;

MemRequest rd(std::uint64_t a, std::uint32_t n = 128, bool dep = true) { return {a, n, false, nullptr, dep}; }
MemRequest wr(std::uint64_t a, std::uint8_t* d, std::uint32_t n = 128) { return {a, n, true, d, true}; }

json l2_stats(GpuSystem& g) { return g.stats_json()["components"]["l2[0]"]; }
}  // namespace

TEST(L2Slice, HitsMissesLruEvictionsAndWritebacks) {
  json s = run_in_child([] {
    GpuSystem g(tiny_gpu());
    std::uint8_t line[128];
    std::memset(line, 0xab, sizeof line);
    // A miss, A hit, B miss, C miss (evicts A, clean), B write hit (dirty), D miss (evicts C, LRU),
    // A miss (evicts B: dirty -> writeback).
    ListSource src({rd(kA), rd(kA), rd(kB), rd(kC), wr(kB, line), rd(kD), rd(kA)});
    g.run({&src});
    json j = l2_stats(g);
    j["contains_A"] = g.l2_slice(0).contains(kA);
    j["contains_B"] = g.l2_slice(0).contains(kB);
    return j;
  });
  EXPECT_EQ(s["read_hits"], 1);
  EXPECT_EQ(s["read_misses"], 5);
  EXPECT_EQ(s["write_hits"], 1);
  EXPECT_EQ(s["write_misses"], 0);
  EXPECT_EQ(s["evictions"], 3);
  EXPECT_EQ(s["writebacks"], 1);
  EXPECT_EQ(s["writeback_bytes"], 128);
  EXPECT_EQ(s["fill_bytes"], 5 * 128);
  EXPECT_EQ(s["sector_misses"], 5 * 4);
  EXPECT_TRUE(s["contains_A"].get<bool>());
  EXPECT_FALSE(s["contains_B"].get<bool>());
}

TEST(L2Slice, MshrMergesASecondMissToALineInFlight) {
  json s = run_in_child([] {
    GpuSystem g(tiny_gpu());
    ListSource src({rd(kA, 32, false), rd(kA + 32, 32, false), rd(kA, 32, false)});  // independent: overlap
    auto k = g.run({&src});
    json j = l2_stats(g);
    j["max_latency"] = k.latency_ps.max();
    j["min_latency"] = k.latency_ps.min();
    return j;
  });
  // First: miss on sector 0; second: miss on sector 1 (another sector, its own fill); third: sector 0 is
  // valid but its fill is still in flight -> merged into the outstanding MSHR, counted as a hit.
  EXPECT_EQ(s["read_misses"], 2);
  EXPECT_EQ(s["read_hits"], 1);
  EXPECT_EQ(s["mshr_merges"], 1);
  EXPECT_EQ(s["sector_misses"], 2);  // a request fetches only its sectors
  EXPECT_GT(s["min_latency"].get<double>(), 0.5 * s["max_latency"].get<double>());  // the merge waited for the fill
}

TEST(L2Slice, VictimSkipsTheLruWayWhileItsFillIsInFlight) {
  json s = run_in_child([] {
    GpuSystem g(tiny_gpu());
    // B (arrived), then A missing (its fill in flight), B hit: LRU order A, B. C misses while A's fill is
    // still on its way: the victim is B (the least recently used way whose fills have all arrived), not A.
    ListSource src({rd(kB), rd(kA), rd(kB, 128, false), rd(kC, 128, false)});
    g.run({&src});
    json j = l2_stats(g);
    j["contains_A"] = g.l2_slice(0).contains(kA);
    j["contains_B"] = g.l2_slice(0).contains(kB);
    return j;
  });
  EXPECT_EQ(s["read_misses"], 3);
  EXPECT_EQ(s["read_hits"], 1);
  EXPECT_EQ(s["evictions"], 1);
  EXPECT_TRUE(s["contains_A"].get<bool>());
  EXPECT_FALSE(s["contains_B"].get<bool>());
}

TEST(L2Slice, WritesNeverFetchAPartialSectorIsFetchedOnItsFirstRead) {
  json s = run_in_child([] {
    GpuSystem g(tiny_gpu());
    std::uint8_t d[128] = {};
    // 2 full sectors of A; then 8 bytes of B's sector 0 (partial: allocated, dirty, not fetched).
    ListSource w({wr(kA, d, 64), wr(kB + 8, d, 8)});
    auto kw = g.run({&w});
    json j;
    j["after_writes"] = l2_stats(g);
    j["write_max_latency"] = kw.latency_ps.max();
    // Reading A's written sectors hits; reading B's partial sector must fetch it (a miss) ...
    ListSource r1({rd(kA, 64), rd(kB, 32)});
    auto k1 = g.run({&r1});
    j["after_reads"] = l2_stats(g);
    j["read_max_latency"] = k1.latency_ps.max();
    // ... after which it is a plain valid sector: a hit.
    ListSource r2({rd(kB + 16, 16)});
    g.run({&r2});
    j["after_reread"] = l2_stats(g);
    // Evicting B (C and D map to the same set) writes its dirty sector back.
    ListSource ev({rd(kC), rd(kD)});
    g.run({&ev});
    j["after_evict"] = l2_stats(g);
    return j;
  });
  const json& w = s["after_writes"];
  EXPECT_EQ(w["write_misses"], 2);
  EXPECT_EQ(w["sector_misses"], 0);  // no fetch for a full or a partial sector
  EXPECT_EQ(w["fill_bytes"], 0);
  // The partial write completed at hit latency (no DRAM round trip): 20 L2 cycles + crossbar at 1 GHz.
  EXPECT_LE(s["write_max_latency"].get<double>(), 40'000);
  const json& r = s["after_reads"];
  EXPECT_EQ(r["read_hits"], 1);
  EXPECT_EQ(r["read_misses"], 1);
  EXPECT_EQ(r["sector_misses"], 1);  // only B's partial sector
  EXPECT_EQ(r["fill_bytes"], 32);
  EXPECT_GT(s["read_max_latency"].get<double>(), 40'000 + 10'000);  // the fetch: + DRAM
  EXPECT_EQ(s["after_reread"]["read_hits"], 2);
  EXPECT_EQ(s["after_reread"]["sector_misses"], 1);
  const json& e = s["after_evict"];
  EXPECT_EQ(e["writebacks"], 2);  // A (2 dirty sectors) and B (1)
  EXPECT_EQ(e["writeback_bytes"], 3 * 32);
}

TEST(L2Slice, PartialWritesThatCoverEverySectorByteMakeItWhole) {
  // Rows whose byte length is not a multiple of the sector (196 floats = 784 B = 24.5 sectors) end in the
  // middle of a sector; the next row's write completes it. The slice keeps each partial sector's byte mask,
  // so such a sector is whole once every byte is written and a read of it hits (found by make run's
  // conversion times of 2026-12-03: without the masks every such sector was fetched from DRAM on its read).
  json s = run_in_child([] {
    GpuSystem g(tiny_gpu());
    std::uint8_t d[128] = {};
    // A: bytes 0..20 then 20..72 (sector 0 completed by the second write, which also writes sector 1 whole
    // and 8 bytes of sector 2). B: bytes 4..32 only (byte 0..3 never written: stays partial).
    ListSource w({wr(kA, d, 20), wr(kA + 20, d, 52), wr(kB + 4, d, 28)});
    g.run({&w});
    json j;
    j["after_writes"] = l2_stats(g);
    ListSource r1({rd(kA, 64)});  // sectors 0 and 1 of A: both whole
    g.run({&r1});
    j["after_whole"] = l2_stats(g);
    ListSource r2({rd(kA + 64, 32)});  // sector 2 of A: 8 of 32 bytes written
    g.run({&r2});
    j["after_a2"] = l2_stats(g);
    ListSource r3({rd(kB, 32)});  // B's sector 0: 28 of 32 bytes
    g.run({&r3});
    j["after_b"] = l2_stats(g);
    return j;
  });
  EXPECT_EQ(s["after_writes"]["fill_bytes"], 0);
  EXPECT_EQ(s["after_whole"]["read_hits"], 1);
  EXPECT_EQ(s["after_whole"]["sector_misses"], 0);
  EXPECT_EQ(s["after_a2"]["read_misses"], 1);
  EXPECT_EQ(s["after_a2"]["sector_misses"], 1);
  EXPECT_EQ(s["after_b"]["read_misses"], 2);
  EXPECT_EQ(s["after_b"]["sector_misses"], 2);
  EXPECT_EQ(s["after_b"]["fill_bytes"], 2 * 32);
}

TEST(L2Slice, ByteMaskStartsAnewAfterAnEvictionAndAWholeSectorStaysWhole) {
  json s = run_in_child([] {
    GpuSystem g(tiny_gpu());
    std::uint8_t d[128] = {};
    // B: bytes 0..16 written, B evicted (C and D fill the 2-way set), then bytes 16..32 written: the first
    // half went to DRAM with the eviction, so the reallocated sector holds only 16..32 and a read misses.
    // A: sector 0 written whole, then 4 bytes of it again: still whole, a read hits.
    ListSource w({wr(kB, d, 16), rd(kC), rd(kD), wr(kB + 16, d, 16), wr(kA, d, 32), wr(kA + 4, d, 4)});
    g.run({&w});
    json j;
    j["before"] = l2_stats(g);
    ListSource rb({rd(kB, 32)});
    g.run({&rb});
    j["after_b"] = l2_stats(g);
    ListSource ra({rd(kA, 32)});
    g.run({&ra});
    j["after_a"] = l2_stats(g);
    return j;
  });
  const auto d = [&](const char* k, const char* f) { return s[k][f].get<long>() - s["before"][f].get<long>(); };
  EXPECT_EQ(d("after_b", "read_misses"), 1);
  EXPECT_EQ(d("after_b", "sector_misses"), 1);
  EXPECT_EQ(d("after_a", "read_hits"), 1);
  EXPECT_EQ(d("after_a", "sector_misses"), 1);  // only B's, above
}

TEST(L2Slice, ByteMasksOfSectorsWiderThan64Bytes) {
  // One 128-byte sector per line: the byte mask spans two 64-bit words.
  json s = run_in_child([] {
    std::string y = tiny_gpu_yaml();
    y.replace(y.find("sector_bytes: 32"), 16, "sector_bytes: 128");
    GpuSystem g(parse_gpu_config(y, "tiny128.yaml"));
    std::uint8_t d[128] = {};
    ListSource w({wr(kA, d, 70), wr(kA + 70, d, 58), wr(kB, d, 100), wr(kB + 101, d, 27)});
    g.run({&w});
    ListSource r({rd(kA, 128), rd(kB, 128)});
    g.run({&r});
    return l2_stats(g);
  });
  EXPECT_EQ(s["read_hits"], 1);    // A: bytes 0..70 and 70..128 written
  EXPECT_EQ(s["read_misses"], 1);  // B: byte 100 never written
  EXPECT_EQ(s["fill_bytes"], 128);
}

TEST(L2Slice, MissesCostMoreThanHits) {
  json s = run_in_child([] {
    GpuSystem g(tiny_gpu());
    ListSource miss({rd(kA)});
    auto k1 = g.run({&miss});
    ListSource hit({rd(kA)});
    auto k2 = g.run({&hit});
    return json{{"miss", k1.latency_ps.mean()}, {"hit", k2.latency_ps.mean()}};
  });
  EXPECT_GT(s["miss"].get<double>(), s["hit"].get<double>() + 10'000);  // + DRAM (>= tRCD + CL)
  // Hit: 20 L2 cycles + crossbar both ways (4 + 4 cycles + flits) at 1 GHz.
  EXPECT_GE(s["hit"].get<double>(), 28'000);
  EXPECT_LE(s["hit"].get<double>(), 40'000);
}

namespace {
struct Recorder : L2WriteObserver {
  std::vector<L2WriteEvent> seen;
  std::vector<std::uint8_t> bytes;
  void on_l2_write(const L2WriteEvent& ev) override {
    seen.push_back(ev);
    bytes.insert(bytes.end(), ev.data, ev.data + ev.bytes);
  }
};
}  // namespace

TEST(L2Slice, WriteObserverSeesEveryWriteWithItsData) {
  json s = run_in_child([] {
    GpuSystem g(tiny_gpu());
    Recorder rec;
    g.add_l2_write_observer(0, rec);
    std::uint8_t d[128];
    for (int i = 0; i < 128; ++i) d[i] = std::uint8_t(i * 3);
    ListSource src({wr(kA, d), rd(kA), wr(kC + 16, d, 16)});
    g.run({&src});
    json j;
    j["count"] = rec.seen.size();
    j["addr0"] = rec.seen.at(0).addr;
    j["addr1"] = rec.seen.at(1).addr;
    j["bytes1"] = rec.seen.at(1).bytes;
    j["slice"] = rec.seen.at(0).slice;
    j["data_ok"] = std::memcmp(rec.bytes.data(), d, 128) == 0 && std::memcmp(rec.bytes.data() + 128, d, 16) == 0;
    j["time_increasing"] = rec.seen.at(1).time_ps > rec.seen.at(0).time_ps;
    return j;
  });
  EXPECT_EQ(s["count"], 2);
  EXPECT_EQ(s["addr0"], kA);
  EXPECT_EQ(s["addr1"], kC + 16);
  EXPECT_EQ(s["bytes1"], 16);
  EXPECT_EQ(s["slice"], 0);
  EXPECT_TRUE(s["data_ok"].get<bool>());
  EXPECT_TRUE(s["time_increasing"].get<bool>());
}

// A DRAM burst wider than an L2 sector (here 64 B bursts, 32 B sectors): a dirty line's write-back writes each
// burst once, not once per sector it covers (review of 2026-12-02: 4 bursts for a 128 B line, 2 needed).
TEST(L2Slice, WritebackWritesABurstWiderThanASectorOnce) {
  json s = run_in_child([] {
    std::string y = tiny_gpu_yaml();
    const std::string from = "bus_bytes: 16", to = "bus_bytes: 32";
    y.replace(y.find(from), from.size(), to);  // 32 B x burst_length 2 = 64 B bursts
    GpuSystem g(spartan::hw::parse_gpu_config(y, "tiny64.yaml"));
    std::uint8_t d[128] = {};
    ListSource src({wr(kA, d, 128)});
    g.run({&src});
    g.flush_l2();  // the dirty line goes to DRAM
    return g.stats_json()["components"]["mc[0]"];
  });
  // `writes` counts the controller's write requests (one per dirty sector); the bus time counts bursts:
  // tBURST = 1 cycle at 1 GHz = 1000 ps each.
  EXPECT_EQ(s["writes"], 4) << s.dump();
  EXPECT_EQ(s["bus_busy_ps"], 2 * 1000) << s.dump();
}

// flush_l2() returns when every write-back has reached DRAM, including those posted before the flush by
// evictions (review of 2026-12-02: only the lines the flush itself evicted were waited for).
TEST(L2Slice, FlushWaitsForWritebacksPostedBeforeIt) {
  json s = run_in_child([] {
    std::string y = tiny_gpu_yaml();
    const std::string from = "WL: 2", to = "WL: 200";  // a write's data 200 ns after its command: the
    y.replace(y.find(from), from.size(), to);            // write-back ends long after the last read returned
    GpuSystem g(spartan::hw::parse_gpu_config(y, "tiny_wl.yaml"));
    std::uint8_t d[128] = {};
    // B dirty, then C and D (same set, 2 ways) evict it: its write-back is posted by the last read miss.
    ListSource src({wr(kB, d, 128), rd(kC), rd(kD)});
    g.run({&src});
    const ps_t wb_end = g.l2_slice(0).last_writeback_end_ps();
    const ps_t now = g.now_ps();
    const ps_t done = g.flush_l2();
    return json{{"wb_end", wb_end}, {"now", now}, {"done", done}, {"writebacks", l2_stats(g)["writebacks"]}};
  });
  EXPECT_EQ(s["writebacks"], 1);
  EXPECT_GT(s["wb_end"].get<ps_t>(), s["now"].get<ps_t>()) << s.dump();  // still in flight at the flush
  EXPECT_GE(s["done"].get<ps_t>(), s["wb_end"].get<ps_t>());
}

// A dirty victim's write-back reads its sectors out of the data array (GPGPU-Sim's data port charges an
// eviction its modified bytes): a hit that arrives right behind the evicting miss waits for the miss's own
// booking and then the write-back's, 32 + 32 cycles with a 4 B/cycle array, against 32 behind a clean victim.
// DRAM is made slow (controller 200 cycles) so that the hit is the faster of the two probe requests.
TEST(L2Slice, DirtyWritebackOccupiesTheDataArray) {
  auto hit_behind_eviction = [](bool dirty) {  // one GpuSystem per process: each variant in its own child
    return run_in_child([dirty] {
      std::string yaml = tiny_gpu_yaml();
      for (auto [from, to] : {std::pair<std::string, std::string>{"bytes_per_cycle: 64", "bytes_per_cycle: 4"},
                              {"controller_latency_cycles: 10", "controller_latency_cycles: 200"}})
        yaml.replace(yaml.find(from), from.size(), to);
      GpuSystem g(spartan::hw::parse_gpu_config(yaml, "tiny-slow-array.yaml"));
      std::uint8_t line[128];
      std::memset(line, 0x5a, sizeof line);
      // A and B resident in set 0 (written: dirty; read: clean), then a miss in set 1 whose DRAM round trip
      // outlasts every array booking before it: the probe finds the array idle in both variants.
      ListSource setup(dirty ? std::vector<MemRequest>{wr(kA, line), wr(kB, line), rd(kA + 128)}
                             : std::vector<MemRequest>{rd(kA), rd(kB), rd(kA + 128)});
      g.run({&setup});
      // C misses and evicts A (the LRU way of set 0); the hit on B is issued right behind it.
      ListSource probe({rd(kC), rd(kB, 128, false)});
      auto k = g.run({&probe});
      json j = l2_stats(g);
      return json{{"hit_ps", k.latency_ps.min()}, {"miss_ps", k.latency_ps.max()}, {"writebacks", j["writebacks"]},
                  {"read_hits", j["read_hits"]}};
    });
  };
  const json dirty = hit_behind_eviction(true), clean = hit_behind_eviction(false);
  EXPECT_EQ(dirty["writebacks"], 1);
  EXPECT_EQ(clean["writebacks"], 0);
  EXPECT_EQ(dirty["read_hits"], 1);
  EXPECT_EQ(clean["read_hits"], 1);
  EXPECT_GT(clean["miss_ps"].get<double>(), 200'000);  // the slow DRAM: the min latency is the hit's
  EXPECT_GT(dirty["miss_ps"].get<double>(), dirty["hit_ps"].get<double>());
  // 128 B at 4 B per 1 GHz cycle: 32 cycles = 32 000 ps more behind the dirty victim.
  EXPECT_NEAR(dirty["hit_ps"].get<double>() - clean["hit_ps"].get<double>(), 32'000, 2'000)
      << "dirty " << dirty.dump() << ", clean " << clean.dump();
}
