// Whole-system behaviour: functional data through the hierarchy, extra initiators in the crossbar,
// contention changing timing, determinism, and bad configs at the command line (exit 2).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <memory>

#include <tlm_utils/simple_initiator_socket.h>

#include "child.h"
#include "spartan/hw/gpu/backing_store.h"
#include "spartan/hw/gpu/gpu_system.h"
#include "spartan/hw/gpu/traffic_generator.h"
#include "spartan/hw/gpu/workloads.h"
#include "tiny_gpu.h"

using namespace spartan::hw;
using namespace spartan::hw::gpu;
using nlohmann::json;

namespace {
std::vector<std::unique_ptr<RequestSource>> streams(GpuSystem& g, std::uint64_t base, std::uint64_t bytes, bool write,
                                                    std::vector<RequestSource*>& ptrs, std::uint8_t seed = 0) {
  std::vector<std::unique_ptr<RequestSource>> v;
  for (std::uint32_t i = 0; i < g.num_sms(); ++i) {
    v.push_back(std::make_unique<StreamSource>(base, bytes, g.config().l2.slice.line_bytes, i,
                                               std::uint32_t(g.num_sms()), write, 1, seed));
    ptrs.push_back(v.back().get());
  }
  return v;
}
}  // namespace

TEST(GpuSystem, DataWrittenIsDataReadBack) {
  json s = run_in_child([] {
    GpuSystem g(tiny_gpu(2));
    const std::uint64_t base = 1 << 20, bytes = 64 * 1024;  // 16x the tiny L2: most lines go through DRAM
    std::vector<RequestSource*> p;
    auto w = streams(g, base, bytes, true, p, 0x3c);
    g.run(p);
    g.flush_l2();
    // Read back through the hierarchy with a recording source.
    std::vector<std::uint8_t> got(bytes);
    std::vector<MemRequest> reqs;
    for (std::uint64_t a = 0; a < bytes; a += 128) reqs.push_back({base + a, 128, false, got.data() + a, false});
    ListSource rd(reqs);
    g.run({&rd});
    std::uint64_t bad = 0;
    for (std::uint64_t a = 0; a < bytes; ++a) bad += got[a] != StreamSource::pattern(base + a, 0x3c);
    std::vector<std::uint8_t> direct(bytes);
    g.backing_store().read(base, direct.data(), bytes);
    return json{{"bad", bad}, {"store_matches", direct == got}, {"writebacks", g.stats().total("l2_slice", "writebacks")}};
  });
  EXPECT_EQ(s["bad"], 0);
  EXPECT_TRUE(s["store_matches"].get<bool>());
  EXPECT_GT(s["writebacks"], 0);
}

// Lazy zero pages: reading never-written memory through the hierarchy returns zeros without allocating
// pages (read-only DMI on the store's shared zero page); a later write, through the hierarchy or directly
// into the store, allocates the page and revokes those grants, so the next reads see the new data.
TEST(GpuSystem, ZeroPageReadsThenWritesAreSeen) {
  json s = run_in_child([] {
    GpuSystem g(tiny_gpu(2));
    const std::uint64_t base = 8ull << 20, bytes = 4 * BackingStore::kPageBytes;
    auto read_all = [&](std::vector<std::uint8_t>& got) {
      std::vector<MemRequest> reqs;
      for (std::uint64_t a = 0; a < bytes; a += 128) reqs.push_back({base + a, 128, false, got.data() + a, false});
      ListSource rd(reqs);
      g.run({&rd});
    };
    std::vector<std::uint8_t> first(bytes, 0xff), second(bytes, 0), third(bytes, 0);
    read_all(first);
    const std::uint64_t pages_after_reads = g.backing_store().pages_allocated();
    // Page 0 written through the hierarchy (SM stream), page 2 directly into the store.
    std::vector<RequestSource*> p;
    auto w = streams(g, base, BackingStore::kPageBytes, true, p, 0x5a);
    g.run(p);
    std::vector<std::uint8_t> direct(256, 0x77);
    g.backing_store().write(base + 2 * BackingStore::kPageBytes + 512, direct.data(), direct.size());
    read_all(second);
    g.flush_l2();
    read_all(third);
    std::uint64_t nonzero_first = 0, bad = 0;
    for (std::uint64_t a = 0; a < bytes; ++a) {
      nonzero_first += first[a] != 0;
      std::uint8_t want = 0;
      if (a < BackingStore::kPageBytes) want = StreamSource::pattern(base + a, 0x5a);
      else if (a >= 2 * BackingStore::kPageBytes + 512 && a < 2 * BackingStore::kPageBytes + 768) want = 0x77;
      bad += (second[a] != want) + (third[a] != want);
    }
    return json{{"nonzero_first", nonzero_first}, {"pages_after_reads", pages_after_reads}, {"bad", bad},
                {"pages_end", g.backing_store().pages_allocated()}};
  });
  EXPECT_EQ(s["nonzero_first"], 0);
  EXPECT_EQ(s["pages_after_reads"], 0);  // reads alone allocate nothing
  EXPECT_EQ(s["bad"], 0);
  EXPECT_EQ(s["pages_end"], 2);  // the two written pages only
}

namespace {
// A stand-in for an extra initiator (e.g. the CompactionEngine): one SC_THREAD writing then reading.
struct ExtraInitiator : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<ExtraInitiator> socket{"socket"};
  std::uint8_t out[64], in[64] = {};
  ps_t done_ps = 0;
  tlm::tlm_response_status status = tlm::TLM_INCOMPLETE_RESPONSE;
  SC_HAS_PROCESS(ExtraInitiator);
  explicit ExtraInitiator(sc_core::sc_module_name n) : sc_module(n) {
    for (int i = 0; i < 64; ++i) out[i] = std::uint8_t(200 - i);
    SC_THREAD(run);
  }
  void run() {
    tlm::tlm_generic_payload gp;
    sc_core::sc_time d = sc_core::SC_ZERO_TIME;
    gp.set_command(tlm::TLM_WRITE_COMMAND);
    gp.set_address(0x40000);
    gp.set_data_ptr(out);
    gp.set_data_length(64);
    gp.set_streaming_width(64);
    socket->b_transport(gp, d);
    gp.set_command(tlm::TLM_READ_COMMAND);
    gp.set_data_ptr(in);
    socket->b_transport(gp, d);
    status = gp.get_response_status();
    wait(d);
    done_ps = sc_core::sc_time_stamp().value();
  }
};
}  // namespace

// Pages are carved out of host regions (BackingStore::kRegionBytes each): across several regions every page
// starts zero, pages never overlap (a write to one is never seen in another) and keep their data, wherever
// their addresses lie.
TEST(BackingStore, PagesCarvedFromSeveralRegionsAreZeroDistinctAndKeepTheirData) {
  json s = run_in_child([] {
    BackingStore store("store");
    const std::uint64_t pages = 2 * BackingStore::pages_per_region() + 5;  // three regions, the last partly used
    std::vector<std::uint64_t> addr;
    for (std::uint64_t k = 0; k < pages; ++k)  // scattered, out of address order, some far apart
      addr.push_back(((k * 7919) % pages) * BackingStore::kPageBytes * 3 + (k % 2 ? (1ull << 40) : 0) + 4096);
    std::uint64_t nonzero_fresh = 0;
    std::vector<std::uint8_t*> ptrs;
    for (std::uint64_t k = 0; k < pages; ++k) {
      std::uint8_t* p = store.page(addr[k]);
      ptrs.push_back(p);
      for (std::uint64_t i = 0; i < BackingStore::kPageBytes; i += 61) nonzero_fresh += p[i] != 0;
      store.write(addr[k], &k, sizeof k);  // the page's index at its first bytes (page offset 4096)
    }
    std::sort(ptrs.begin(), ptrs.end());
    std::uint64_t overlaps = 0;
    for (std::size_t k = 1; k < ptrs.size(); ++k) overlaps += ptrs[k] < ptrs[k - 1] + BackingStore::kPageBytes;
    std::uint64_t wrong = 0;
    for (std::uint64_t k = 0; k < pages; ++k) {
      std::uint64_t got = ~0ull, zero = 1;
      store.read(addr[k], &got, sizeof got);
      store.read(addr[k] + 8, &zero, sizeof zero);
      wrong += got != k || zero != 0;
    }
    return json{{"pages", store.pages_allocated()}, {"want_pages", pages}, {"nonzero_fresh", nonzero_fresh},
                {"overlaps", overlaps}, {"wrong", wrong}};
  });
  ASSERT_FALSE(s.contains("child_error")) << s.dump();
  EXPECT_EQ(s["pages"], s["want_pages"]);
  EXPECT_EQ(s["nonzero_fresh"], 0);
  EXPECT_EQ(s["overlaps"], 0);
  EXPECT_EQ(s["wrong"], 0);
}

// Under AddressSanitizer (make test-asan) a write one byte past a page is reported (a poisoned redzone follows
// each page) instead of landing silently in the next page carved from the same region.
TEST(BackingStore, OverrunOfAPageIsReportedUnderAddressSanitizer) {
#if defined(__SANITIZE_ADDRESS__)
  std::fflush(nullptr);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0) << "fork";
  if (pid == 0) {  // child (its own SystemC elaboration): the overrun; ASan ends it with its report
    BackingStore store("store");
    std::uint8_t* p = store.page(0);
    store.page(1ull << 30);  // the next page of the region
    volatile std::uint8_t* q = p;
    q[BackingStore::kPageBytes] = 0xab;
    _exit(0);  // reached only if the overrun went unnoticed
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the overrun was not reported";
#else
  GTEST_SKIP() << "AddressSanitizer builds only (make test-asan)";
#endif
}

TEST(GpuSystem, ExtraInitiatorReachesL2ThroughTheCrossbar) {
  json s = run_in_child([] {
    GpuSystem g(tiny_gpu());
    ExtraInitiator ce("ce");
    g.bind_extra_initiator(ce.socket, "compaction_engine");
    g.run_until_idle();
    auto j = g.stats_json();
    return json{{"ok", std::memcmp(ce.in, ce.out, 64) == 0}, {"done", ce.done_ps},
                {"status", int(ce.status)}, {"port", j["components"]["xbar.compaction_engine"]["requests"]}};
  });
  EXPECT_TRUE(s["ok"].get<bool>());
  EXPECT_EQ(s["status"], int(tlm::TLM_OK_RESPONSE));
  EXPECT_GT(s["done"], 0);
  EXPECT_EQ(s["port"], 2);
}

namespace {
// Writes `kLines` L2 lines (they stay in the L2: write-allocate), waits, then issues reads of all of them at
// the same instant; records when the last read's data is back (the port's response direction serialises them).
struct LineBurst : sc_core::sc_module {
  static constexpr int kLines = 32;
  tlm_utils::simple_initiator_socket<LineBurst> socket{"socket"};
  std::uint8_t buf[128] = {};
  ps_t start_ps = 0, last_ps = 0;
  SC_HAS_PROCESS(LineBurst);
  explicit LineBurst(sc_core::sc_module_name n) : sc_module(n) { SC_THREAD(run); }
  void run() {
    tlm::tlm_generic_payload gp;
    gp.set_data_ptr(buf);
    gp.set_data_length(128);
    gp.set_streaming_width(128);
    sc_core::sc_time d = sc_core::SC_ZERO_TIME;
    for (int i = 0; i < kLines; ++i) {
      gp.set_command(tlm::TLM_WRITE_COMMAND);
      gp.set_address(0x100000 + 128 * std::uint64_t(i));
      sc_core::sc_time di = sc_core::SC_ZERO_TIME;
      socket->b_transport(gp, di);
      d = std::max(d, di);
    }
    wait(d + sc_core::sc_time(1, sc_core::SC_US));
    start_ps = sc_core::sc_time_stamp().value();
    for (int i = 0; i < kLines; ++i) {
      gp.set_command(tlm::TLM_READ_COMMAND);
      gp.set_address(0x100000 + 128 * std::uint64_t(i));
      sc_core::sc_time di = sc_core::SC_ZERO_TIME;
      socket->b_transport(gp, di);
      last_ps = std::max(last_ps, start_ps + ps_t(di.value()));
    }
  }
};
}  // namespace

// Review finding F3: an extra initiator's crossbar port can be wider than an SM's. 32 line reads that hit in
// the L2 and start at once: through a port of the SM width (32 B/cycle: header + line = 5 flits) they take
// longer than through a 128 B/cycle port (2 flits); the port stats count the same bytes either way.
TEST(GpuSystem, WiderExtraInitiatorPortMovesLinesFaster) {
  auto once = [](std::uint32_t width) {
    return run_in_child([width] {
      // tiny_gpu with 8 slices of 64 sets x 4 ways, lines interleaved: the 32 lines stay in the L2 and the
      // slices' own ports (4 lines each) are not the bottleneck
      std::string y = tiny_gpu_yaml();
      const auto swap = [&](const std::string& a, const std::string& b) { y.replace(y.find(a), a.size(), b); };
      swap("slices: 1, sets: 2, ways: 2", "slices: 8, sets: 64, ways: 4");
      swap("interleave_bytes: 256", "interleave_bytes: 128");
      GpuSystem g(spartan::hw::parse_gpu_config(y, "tiny8.yaml"));
      LineBurst b("burst");
      g.bind_extra_initiator(b.socket, "unit", width);
      g.run_until_idle();
      auto j = g.stats_json();
      return json{{"time", b.last_ps - b.start_ps}, {"rsp", j["components"]["xbar.unit"]["response_bytes"]},
                  {"cycle_ps", g.config().crossbar_clock().cycles_to_ps(1)},
                  {"sm_width", g.config().crossbar.port_bytes_per_cycle}};
    });
  };
  const json narrow = once(0), wide = once(128);
  std::printf("32 line reads: %s ps through a 32 B port, %s ps through a 128 B port\n", narrow["time"].dump().c_str(),
              wide["time"].dump().c_str());
  ASSERT_EQ(narrow["sm_width"], 32);
  EXPECT_EQ(narrow["rsp"], wide["rsp"]);
  const double cyc = narrow["cycle_ps"].get<double>();
  // The narrow port needs >= 5 cycles per read response; the wide one 2 (the slices' ports are spread).
  EXPECT_GE(narrow["time"].get<double>(), 5 * LineBurst::kLines * cyc * 0.99);
  EXPECT_LT(wide["time"].get<double>(), 0.6 * narrow["time"].get<double>());
  EXPECT_EQ(once(32), narrow);  // an explicit SM width is the default
}

// A request crossing L2 lines takes an in-flight slot and an issue interval per line: one 8 KiB request from a
// RequestSource is timed like the 64 line requests it consists of (before the sixteenth session it went out as
// one slot: 0.45 us against 14.8 us for the lines with max_outstanding_lines 1 on the V100 preset).
TEST(GpuSystem, MultiLineRequestTakesASlotPerLine) {
  json s = run_in_child([] {
    std::string y = tiny_gpu_yaml(1);
    y.replace(y.find("max_outstanding_lines: 8"), 24, "max_outstanding_lines: 1");
    GpuSystem g(parse_gpu_config(y, "tiny.yaml"));
    const std::uint64_t base = 1 << 22, bytes = 8192;
    std::vector<std::uint8_t> big(bytes), lines(bytes);
    ListSource one({{base, std::uint32_t(bytes), false, big.data(), false}});
    g.align_to_refresh();
    const auto k1 = g.run({&one});
    g.flush_l2();
    std::vector<MemRequest> reqs;
    for (std::uint64_t a = 0; a < bytes; a += 128) reqs.push_back({base + bytes + a, 128, false, lines.data() + a, false});
    ListSource many(reqs);
    g.align_to_refresh();
    const auto k2 = g.run({&many});
    return json{{"one_ps", k1.end_ps - k1.start_ps}, {"lines_ps", k2.end_ps - k2.start_ps},
                {"one_requests", k1.requests}, {"one_bytes", k1.bytes_read}};
  });
  ASSERT_FALSE(s.contains("child_error")) << s;
  EXPECT_EQ(s["one_requests"], 64);
  EXPECT_EQ(s["one_bytes"], 8192);
  const double one = s["one_ps"].get<double>(), lines = s["lines_ps"].get<double>();
  EXPECT_NEAR(one, lines, 0.05 * lines) << "8 KiB in one request: " << one << " ps, as 64 lines: " << lines << " ps";
}

// MemRequest::after_reads waits for every read issued before it (since the previous such request), while
// `dependent` waits only for the last request: a cold read X, then warm reads Y and V. V `dependent` issues
// once Y (a hit) is back, overlapping X's miss (~max(miss, 2 hits)); V `after_reads` waits for X's miss, so
// the kernel takes X's latency plus a hit (review of the software baselines, eighteenth session).
TEST(GpuSystem, AfterReadsWaitsForEveryEarlierReadDependentOnlyForTheLast) {
  json s = run_in_child([] {
    GpuSystem g(tiny_gpu());
    const std::uint64_t x = 1 << 22, y = x + 128, v = x + 384;  // X in set 0; Y and V in set 1 (2 ways)
    auto kernel = [&](bool after_reads) {
      ListSource warm({{y, 128, false, nullptr, false}, {v, 128, false, nullptr, false}});
      g.run({&warm});
      ListSource k({{x, 128, false, nullptr, false},
                    {y, 128, false, nullptr, false},
                    {v, 128, false, nullptr, !after_reads, after_reads}});
      const auto r = g.run({&k});
      g.flush_l2();
      g.align_to_refresh();
      return json{{"duration", r.end_ps - r.start_ps}, {"max", r.latency_ps.max()}, {"min", r.latency_ps.min()}};
    };
    g.align_to_refresh();
    return json{{"dependent", kernel(false)}, {"after_reads", kernel(true)}};
  });
  ASSERT_FALSE(s.contains("child_error")) << s;
  const double cold = s["dependent"]["max"].get<double>(), hit = s["dependent"]["min"].get<double>();
  const double dep = s["dependent"]["duration"].get<double>(), all = s["after_reads"]["duration"].get<double>();
  ASSERT_GT(cold, hit + 10'000) << s;  // X missed, Y and V hit
  EXPECT_LT(dep, cold + 0.9 * hit) << s;  // V overlapped X's miss (it waited only for Y: ~2 hits)
  // V waited for X: X's miss as it went in this kernel (the DRAM rows X's first run left open can make it
  // faster than the first kernel's `cold`), then V's hit
  EXPECT_GE(all, s["after_reads"]["max"].get<double>() + 0.9 * hit) << s;
}

TEST(GpuSystem, ContentionSlowsAStreamAndRunsAreDeterministic) {
  auto once = [] {
    return run_in_child([] {
      GpuSystem g(tiny_gpu(2));
      // One SM alone, then both SMs on twice the data: the DRAM channel is shared, so the time per byte
      // must not improve linearly with the second SM.
      std::vector<RequestSource*> p1;
      StreamSource a(1 << 22, 256 * 1024, 128, 0, 1, false);
      auto k1 = g.run({&a});
      std::vector<RequestSource*> p2;
      auto v = streams(g, 1 << 24, 512 * 1024, false, p2);
      auto k2 = g.run(p2);
      return json{{"one", k1.bytes_per_s()}, {"two", k2.bytes_per_s()}, {"end", g.now_ps()},
                  {"peak", g.config().peak_dram_bytes_per_s()}};
    });
  };
  json s = once(), t = once();
  EXPECT_EQ(s, t);  // deterministic
  EXPECT_LT(s["two"].get<double>(), 2.0 * s["one"].get<double>());
  EXPECT_LE(s["two"].get<double>(), s["peak"].get<double>());
}

TEST(GpuSystem, AlignToRefreshGivesTheSameTimesFromAnyStart) {
  // align_to_refresh (after flush_l2) moves to a multiple of tREFI at least one tREFI ahead, so the same
  // work started there takes the same time whatever time it started from (the replay relies on it).
  json s = run_in_child([] {
    std::string y = tiny_gpu_yaml(1);
    const std::string from = "tREFI: 0", to = "tREFI: 390, tRFC: 26";
    y.replace(y.find(from), from.size(), to);
    GpuSystem g(spartan::hw::parse_gpu_config(y, "tiny_refresh.yaml"));
    const ps_t period = g.config().dram_clock().cycles_to_ps(390);
    json r = json::array();
    for (ps_t offset : {ps_t(0), ps_t(1234567), ps_t(777), ps_t(period - 1)}) {
      g.advance(offset);
      g.flush_l2();
      const ps_t before = g.now_ps(), t = g.align_to_refresh();
      StreamSource a(1 << 22, 16 * 1024, 128, 0, 1, false);
      const auto k = g.run({&a});
      r.push_back({{"multiple", t % period == 0}, {"ahead", t >= before + period}, {"now", g.now_ps() >= t},
                   {"duration", k.end_ps - k.start_ps}});
    }
    return r;
  });
  ASSERT_EQ(s.size(), 4u);
  for (const auto& e : s) {
    EXPECT_TRUE(e["multiple"].get<bool>()) << e;
    EXPECT_TRUE(e["ahead"].get<bool>()) << e;
    EXPECT_TRUE(e["now"].get<bool>()) << e;
    EXPECT_EQ(e["duration"], s[0]["duration"]) << s;
  }
}

// The same with the V100's clocks (1447 MHz core/L2/crossbar: 691.09 ps, not a divisor of the 850 MHz DRAM's
// tREFI) and 4 slices: an aligned start is then at a different phase of the crossbar's 8-cycle bins and of
// the DRAM command slots for each offset; align_to_refresh rebases the calendars, so the same work is timed
// to the picosecond from any start (without the rebase, durations and latencies differ by a few ns).
TEST(GpuSystem, AlignToRefreshRebasesTheCalendarsAtAnyClockPhase) {
  json s = run_in_child([] {
    std::string y = tiny_gpu_yaml(2);
    const auto swap = [&](const std::string& a, const std::string& b) { y.replace(y.find(a), a.size(), b); };
    swap("tREFI: 0", "tREFI: 390, tRFC: 26");
    swap("clocks: {core_mhz: 1000, l2_mhz: 1000, dram_mhz: 1000}", "clocks: {core_mhz: 1447, l2_mhz: 1447, dram_mhz: 850}");
    swap("slices: 1, sets: 2, ways: 2", "slices: 4, sets: 16, ways: 4");
    GpuSystem g(spartan::hw::parse_gpu_config(y, "tiny_v100_clocks.yaml"));
    json r = json::array();
    for (ps_t offset : {ps_t(0), ps_t(1234567), ps_t(777), ps_t(3000001), ps_t(55555)}) {
      g.advance(offset);
      g.flush_l2();
      g.align_to_refresh();
      std::vector<RequestSource*> p;
      auto v = streams(g, 1 << 22, 64 * 1024, false, p);
      const auto k = g.run(p);
      std::vector<RequestSource*> pw;
      auto vw = streams(g, 1 << 23, 32 * 1024, true, pw);
      const auto kw = g.run(pw);
      r.push_back({{"read", k.end_ps - k.start_ps}, {"read_lat", k.latency_ps.mean()},
                   {"write", kw.end_ps - kw.start_ps}, {"write_lat", kw.latency_ps.mean()}});
    }
    return r;
  });
  ASSERT_EQ(s.size(), 5u);
  for (const auto& e : s) EXPECT_EQ(e, s[0]) << s;
}

TEST(SpartanSimMicrobench, BadConfigExitsTwoNamingFileAndKey) {
  const std::string exe = SPARTAN_SIM_EXE;
  if (!std::ifstream(exe).good()) GTEST_SKIP() << "spartan-sim not built: " << exe;
  std::string dir = ::testing::TempDir();
  struct Case { std::string text, expect; };
  std::string good = tiny_gpu_yaml();
  std::vector<Case> cases = {
      {good + "frobnicate: 1\n", "key 'frobnicate': unknown key"},
      {[&] { auto t = good; t.replace(t.find("sets: 2"), 7, "sets: 3"); return t; }(), "key 'l2.sets'"},
      {[&] { auto t = good; t.replace(t.find("banks_per_group: 4"), 18, "banks_per_group: 0"); return t; }(),
       "key 'dram.banks_per_group'"},
      {[&] { auto t = good; t.replace(t.find("sector_bytes: 32"), 16, "sector_bytes: 256"); return t; }(),
       "key 'l2.sector_bytes': sector size 256 is larger than the line size 128"},
      {[&] { auto t = good; t.replace(t.find("tRCD: 12, "), 10, ""); return t; }(), "missing required key"},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    // per-process names: two test runs on one machine must not rewrite each other's files
    const std::string tag = std::to_string(::getpid()) + "_" + std::to_string(i);
    std::string yaml = dir + "/bad_gpu_" + tag + ".yaml";
    std::ofstream(yaml) << cases[i].text;
    std::string out = dir + "/bad_out_" + tag + ".json";
    std::string cmd = exe + " microbench --gpu " + yaml + " --out " + out + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    std::string text;
    char buf[512];
    while (fgets(buf, sizeof buf, p)) text += buf;
    int rc = pclose(p);
    EXPECT_EQ(WEXITSTATUS(rc), 2) << text;
    EXPECT_NE(text.find(yaml), std::string::npos) << text;
    EXPECT_NE(text.find(cases[i].expect), std::string::npos) << text;
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;  // one line
    EXPECT_FALSE(std::ifstream(out).good());                            // no output written
    std::remove(yaml.c_str());
  }
}
