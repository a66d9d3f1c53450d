// Lockstep scoreboard: the RTL monitor (Verilated, behind its TLM transactors) and the TLM SparsityMonitor
// (hw/spartan) get the same MMIO programming and the same write-request stream; per-tile counts written by
// the flushes must match exactly, the line/flush statistics registers must match, and the cycle counts of
// counting and flushing are reported side by side and must agree within 5 % (docs/hw-units.md "Calibration
// from the RTL").
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include "monitor_reference.h"
#include "spartan/hw/flat_memory.h"
#include "spartan/hw/mmio.h"
#include "spartan/hw/regmap.h"
#include "spartan/hw/sparsity_monitor.h"
#include "spartan/rtl/monitor_lockstep.h"
#include "spartan/rtl/monitor_rtl_sc.h"
#include "spartan/hw/payload.h"

extern "C" int sc_main(int, char**) { return 0; }

namespace {
using namespace spartan;
namespace mon = hw::regmap::monitor;
using test_ref = rtl::test::RefRegion;

struct Host : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<Host> tlm_mmio, rtl_mmio, rtl_wr;
  hw::SparsityMonitor* tlm_mon = nullptr;
  rtl::MonitorRtlSc* rtl_mon = nullptr;
  hw::FlatMemory *tlm_mem = nullptr, *rtl_mem = nullptr;
  SC_HAS_PROCESS(Host);
  explicit Host(sc_core::sc_module_name n) : sc_module(n), tlm_mmio("tm"), rtl_mmio("rm"), rtl_wr("rw") {
    SC_THREAD(run);
  }
  tlm::tlm_response_status acc(tlm_utils::simple_initiator_socket<Host>& s, bool write, std::uint32_t off,
                               std::uint32_t& v) {
    sc_core::sc_time d = sc_core::SC_ZERO_TIME;
    const auto st = spartan::hw::mmio_transport32(s, write, off, v, d);
    sc_core::wait(d);
    return st;
  }
  // Same access on both; the responses must agree.
  void both(bool write, std::uint32_t off, std::uint32_t v, std::uint32_t* tv = nullptr, std::uint32_t* rv = nullptr) {
    std::uint32_t a = v, b = v;
    const auto ra = acc(tlm_mmio, write, off, a);
    const auto rb = acc(rtl_mmio, write, off, b);
    EXPECT_EQ(ra, rb) << (write ? "write " : "read ") << std::hex << off;
    if (tv) *tv = a;
    if (rv) *rv = b;
  }
  void run() {
    std::mt19937_64 rng(2024);
    const double period_ps = rtl_mon->period().to_seconds() * 1e12;
    for (unsigned round = 0; round < 4; ++round) {
      // random regions, programmed identically into both monitors; round 3: one region of zeros only (+0.0 and
      // -0.0), whose flush ends on the scan, not on an atomic add (the TLM missed the RTL's 4-cycle tail there)
      const bool all_zero = round == 3;
      const unsigned nreg = all_zero ? 1 : 1 + rng() % 3;
      std::vector<test_ref> gs;
      std::uint32_t off = 0;
      // The previous round's regions off first: a still enabled one whose counter range overlaps a new region's
      // makes both models refuse the new one (round 3's region was refused so, and its flush scanned nothing).
      for (unsigned r = 0; r < 3; ++r) both(true, mon::region_reg(r, mon::R_CFG), 0);
      for (unsigned r = 0; r < nreg; ++r) {
        test_ref g;
        g.dtype = rng() % 3;
        g.rows = 8 + rng() % 120;
        g.cols = 8 + rng() % 200;
        g.pitch = g.cols * g.eb() + g.eb() * (rng() % 2) * 8;
        g.tr = 1u << (2 + rng() % 4);
        g.tc = 1u << (2 + rng() % 4);
        g.base = 0x1000000ull * (r + 1) + 0x100000ull * round + g.eb() * (rng() % 64);
        g.ct_base = 0x9000000ull + 0x100000ull * round + 0x10000ull * r + 4 * (rng() % 8);
        g.cnt_offset = off;
        off += static_cast<std::uint32_t>(g.tiles());
        both(true, mon::region_reg(r, mon::R_CFG), 0);
        both(true, mon::region_reg(r, mon::R_TILE), g.tr | (g.tc << 16));
        both(true, mon::region_reg(r, mon::R_BASE_LO), static_cast<std::uint32_t>(g.base));
        both(true, mon::region_reg(r, mon::R_BASE_HI), 0);
        both(true, mon::region_reg(r, mon::R_ROWS), g.rows);
        both(true, mon::region_reg(r, mon::R_COLS), g.cols);
        both(true, mon::region_reg(r, mon::R_ROW_PITCH), g.pitch);
        both(true, mon::region_reg(r, mon::R_CNT_OFFSET), g.cnt_offset);
        both(true, mon::region_reg(r, mon::R_CT_BASE_LO), static_cast<std::uint32_t>(g.ct_base));
        both(true, mon::region_reg(r, mon::R_CFG), 1u | (g.dtype << 4));
        // Both must have accepted the region (CFG.EN set): two models that refuse it alike would otherwise
        // "agree" on a flush that scans nothing.
        std::uint32_t tcfg = 0, rcfg = 0;
        both(false, mon::region_reg(r, mon::R_CFG), 0, &tcfg, &rcfg);
        EXPECT_TRUE((tcfg & 1u) && (rcfg & 1u)) << "round " << round << " region " << r << " not enabled";
        gs.push_back(g);
      }
      both(true, mon::SAMPLE_SHIFT, round == 2 ? 1 : 0);
      both(true, mon::CTRL, 0x3);  // ENABLE + CLEAR
      rtl_mon->drain(sc_core::sc_time_stamp());
      wait(rtl_mon->period() * 10000.0);  // RTL counter clear sweep (8192 cycles) is done

      // the producer writes every region line by line, back to back (one request per cycle offered)
      const sc_core::sc_time t0 = sc_core::sc_time_stamp();
      sc_core::sc_time d = sc_core::SC_ZERO_TIME;
      std::uint64_t requests = 0;
      for (const auto& g : gs) {
        std::vector<std::uint8_t> m(g.size());
        const double dens = all_zero ? 0.0 : (rng() % 100) / 100.0;
        for (std::size_t i = 0; i < m.size(); i += g.eb()) {
          // Zeros: +0.0, or 0x80008000 (a denormal for F32, -0.0 for F16 / BF16); round 3 uses -0.0 of every
          // type, so that its count table is all zero.
          const std::uint32_t other_zero = !all_zero ? 0x80008000u : g.eb() == 4 ? 0x80000000u : 0x8000u;
          std::uint32_t x = (rng() % 1000) < dens * 1000 ? static_cast<std::uint32_t>(rng()) | 1u
                                                          : ((rng() & 1) ? other_zero : 0u);
          std::memcpy(&m[i], &x, g.eb());
        }
        for (std::uint64_t a = g.base; a < g.base + g.size(); ++requests) {
          const std::uint64_t end = std::min<std::uint64_t>((a & ~127ull) + 128, g.base + g.size());
          const auto len = static_cast<std::uint32_t>(end - a);
          const sc_core::sc_time when = t0 + rtl_mon->period() * static_cast<double>(requests);
          tlm_mon->observe_write(a, &m[a - g.base], len, when);
          tlm::tlm_generic_payload p;
          spartan::hw::prepare_payload(p, tlm::TLM_WRITE_COMMAND, a, &m[a - g.base], len);
          sc_core::sc_time dl = when - sc_core::sc_time_stamp();
          if (d > dl) dl = d;  // the RTL may still be busy with the previous request
          rtl_wr->b_transport(p, dl);
          d = dl;
          a = end;
        }
      }
      const double rtl_count_cycles = (sc_core::sc_time_stamp() + d - t0).to_seconds() * 1e12 / period_ps;
      // Both timed to the last request's acceptance, inclusive (SparsityMonitor::last_accept()).
      const double tlm_count_cycles = (tlm_mon->last_accept() - t0).to_seconds() * 1e12 / period_ps + 1.0;
      wait(d);
      wait(rtl_mon->period() * 8.0);  // pipelines drained (TLM latency 3, RTL 4)
      rtl_mon->drain(sc_core::sc_time_stamp());
      // flush both
      const std::uint32_t mask = (1u << nreg) - 1;
      both(true, mon::FLUSH, mask);
      const sc_core::sc_time rtl_done = rtl_mon->drain(sc_core::sc_time_stamp());
      if (tlm_mon->flush_busy()) wait(tlm_mon->flush_done_event());
      if (rtl_done > sc_core::sc_time_stamp()) wait(rtl_done - sc_core::sc_time_stamp());
      std::uint32_t ta = 0, ra = 0;
      for (std::uint32_t reg : {mon::LINES_SEEN, mon::LINES_MATCHED, mon::LINES_SAMPLED, mon::STATUS}) {
        both(false, reg, 0, &ta, &ra);
        EXPECT_EQ(ta, ra) << "register 0x" << std::hex << reg;
      }
      for (unsigned r = 0; r < nreg; ++r) {
        both(false, mon::region_reg(r, mon::R_TILES), 0, &ta, &ra);
        EXPECT_EQ(ta, ra);
        both(false, mon::region_reg(r, mon::R_MATCHED), 0, &ta, &ra);
        EXPECT_EQ(ta, ra);
      }
      std::uint32_t tlm_fc = 0, rtl_fc = 0;
      both(false, mon::FLUSH_CYCLES, 0, &tlm_fc, &rtl_fc);
      std::uint64_t mismatches = 0, tiles = 0;
      for (const auto& g : gs)
        for (std::uint64_t t = 0; t < g.tiles(); ++t, ++tiles) {
          std::uint32_t a = 0, b = 0;
          tlm_mem->read_bytes(g.ct_base + 4 * t, &a, 4);
          rtl_mem->read_bytes(g.ct_base + 4 * t, &b, 4);
          mismatches += a != b;
        }
      EXPECT_EQ(mismatches, 0u);
      std::printf("round %u: %u regions, %llu tiles, %llu requests: count mismatches %llu\n", round, nreg,
                  (unsigned long long)tiles, (unsigned long long)requests, (unsigned long long)mismatches);
      std::printf("  counting cycles  TLM %.0f  RTL %.0f  (RTL/TLM %.3f)\n", tlm_count_cycles, rtl_count_cycles,
                  rtl_count_cycles / tlm_count_cycles);
      std::printf("  flush cycles     TLM %u  RTL %u  (RTL/TLM %.3f)\n", tlm_fc, rtl_fc,
                  tlm_fc ? double(rtl_fc) / tlm_fc : 0.0);
      // Calibrated timing (docs/hw-units.md "Calibration from the RTL"): within 5 %, also with sampling.
      EXPECT_NEAR(double(rtl_fc) / tlm_fc, 1.0, 0.05) << "flush cycles, round " << round;
      EXPECT_NEAR(rtl_count_cycles / tlm_count_cycles, 1.0, 0.05) << "counting cycles, round " << round;
      if (all_zero) {
        EXPECT_EQ(tlm_fc, rtl_fc) << "flush of an all-zero count table";
      }
    }
    // A FLUSH of no region (mask 0) ends on the FSM's tail alone, and with the completion counter on its add: the
    // same cycles in both (the TLM charged 2 more until the fifty-fourth session's review).
    for (std::uint32_t cp : {0u, 0x7000004u}) {
      both(true, mon::COMPL_PTR_LO, cp);
      both(true, mon::FLUSH, 0);
      const sc_core::sc_time rtl_done = rtl_mon->drain(sc_core::sc_time_stamp());
      if (tlm_mon->flush_busy()) wait(tlm_mon->flush_done_event());
      if (rtl_done > sc_core::sc_time_stamp()) wait(rtl_done - sc_core::sc_time_stamp());
      std::uint32_t tlm_fc = 0, rtl_fc = 0;
      both(false, mon::FLUSH_CYCLES, 0, &tlm_fc, &rtl_fc);
      EXPECT_EQ(tlm_fc, rtl_fc) << "FLUSH of mask 0, COMPL_PTR 0x" << std::hex << cp;
      EXPECT_EQ(rtl_fc, cp ? 4u + 503u : 4u) << "FLUSH of mask 0, COMPL_PTR 0x" << std::hex << cp;  // write latency 500
      std::printf("mask-0 FLUSH, COMPL_PTR 0x%x: FLUSH_CYCLES TLM %u RTL %u\n", cp, tlm_fc, rtl_fc);
    }
    sc_core::sc_stop();
  }
};

TEST(MonitorRtlVsTlm, SameTrafficSameCountsAndStatistics) {
  ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  hw::MonitorConfig mc;
  mc.flush_outstanding = rtl::kMonitorFlushOutstanding;  // the RTL instance's FLUSH_OUTSTANDING
  mc.clock_mhz = 1000.0;
  hw::SparsityMonitor tlm_mon("tlm_monitor", mc);
  rtl::MonitorRtlScConfig rc;
  rc.clock_mhz = mc.clock_mhz;
  rtl::MonitorRtlSc rtl_mon("rtl_monitor", rc);
  hw::FlatMemoryConfig fc;
  fc.read_latency = sc_core::sc_time(20, sc_core::SC_NS);
  // A flush issues one atomic add per ~11 cycles at most; a 500-cycle write latency keeps ~45 in flight, so
  // the FLUSH_OUTSTANDING window (32) binds and both models must time it alike (short latencies are checked
  // by the replay's lockstep, MonitorLockstep: 10 cycles).
  fc.write_latency = sc_core::sc_time(500, sc_core::SC_NS);
  hw::FlatMemory tlm_mem("tlm_mem", fc), rtl_mem("rtl_mem", fc);
  Host host("host");
  host.tlm_mon = &tlm_mon;
  host.rtl_mon = &rtl_mon;
  host.tlm_mem = &tlm_mem;
  host.rtl_mem = &rtl_mem;
  host.tlm_mmio.bind(tlm_mon.mmio);
  host.rtl_mmio.bind(rtl_mon.mmio);
  host.rtl_wr.bind(rtl_mon.wr);
  tlm_mon.mem.bind(tlm_mem.socket);
  rtl_mon.mem.bind(rtl_mem.socket);
  sc_core::sc_start();
  // The flush window was reached (the 500-cycle latency) and never exceeded; the TLM default is the RTL's.
  EXPECT_EQ(rtl_mon.pins().max_adds_in_flight(), rtl::kMonitorFlushOutstanding);
  EXPECT_EQ(hw::MonitorConfig{}.flush_outstanding, rtl::kMonitorFlushOutstanding);
}

// COMPL_PTR (regmap.h) in the lockstep (MonitorLockstep::set_completion): each matrix is run once without and once
// with the completion counter; both models must add 1 to it once per flush, and the cycles the add puts on the
// flush (FLUSH_CYCLES with minus without) must be the same in both, on all-zero tables (the flush ends on the scan)
// as on tables with adds in flight, with and without sampling, lines and shuffled sectors.
struct CounterHost : sc_core::sc_module {
  rtl::MonitorLockstep ls{"counter_ls", 1000.0};
  struct Case {
    std::uint32_t rows, cols, tr, tc;
    unsigned dtype;
    double density;
    unsigned shift;
    rtl::LockstepStimulus stimulus;
  };
  std::vector<Case> cases;
  std::vector<std::pair<rtl::LockstepResult, rtl::LockstepResult>> out;  // (without, with)
  SC_HAS_PROCESS(CounterHost);
  explicit CounterHost(sc_core::sc_module_name n) : sc_module(n) { SC_THREAD(run); }
  void run() {
    std::mt19937_64 rng(77);
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const Case& c = cases[i];
      const unsigned eb = c.dtype == 0 ? 4 : 2;
      std::vector<std::uint8_t> m(std::size_t(c.rows) * c.cols * eb, 0);
      for (std::size_t o = 0; o < m.size(); o += eb)
        if ((rng() % 1000) < c.density * 1000) {
          const std::uint32_t x = static_cast<std::uint32_t>(rng()) | 1u;
          std::memcpy(&m[o], &x, eb);
        }
      rtl::LockstepMatrix lm;
      lm.data = m.data();
      lm.rows = c.rows;
      lm.cols = c.cols;
      lm.row_pitch_bytes = c.cols * eb;
      lm.dtype = c.dtype;
      lm.tile_rows = c.tr;
      lm.tile_cols = c.tc;
      ls.set_completion(0);
      const auto without = ls.run(lm, c.shift, c.stimulus, 5 + i);
      ls.set_completion(0xA00000000ull + 0x40 * i + 4 * (i % 8));  // every word position of a 32 B group
      const auto with = ls.run(lm, c.shift, c.stimulus, 5 + i);
      out.emplace_back(without, with);
    }
    sc_core::sc_stop();
  }
};

TEST(MonitorRtlVsTlm, CompletionCounterMatches) {
  ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  CounterHost h("counterhost");
  using S = rtl::LockstepStimulus;
  h.cases = {{64, 96, 32, 32, 0, 0.4, 0, S::kLines},        {100, 100, 32, 32, 0, 0.0, 0, S::kLines},
             {37, 250, 8, 64, 1, 0.7, 0, S::kShuffledSectors}, {120, 64, 16, 16, 2, 0.1, 1, S::kLines},
             {200, 200, 4, 4, 0, 0.9, 0, S::kLines},          {9, 33, 1, 2, 1, 0.5, 0, S::kShuffledSectors}};
  sc_core::sc_start();
  ASSERT_EQ(h.out.size(), h.cases.size());
  for (std::size_t i = 0; i < h.out.size(); ++i) {
    const auto& [a, b] = h.out[i];
    const long long d_rtl = static_cast<long long>(b.rtl_flush_cycles) - a.rtl_flush_cycles;
    const long long d_tlm = static_cast<long long>(b.tlm_flush_cycles) - a.tlm_flush_cycles;
    std::ostringstream what;
    what << "case " << i << ": flush cycles without / with COMPL_PTR RTL " << a.rtl_flush_cycles << " / "
         << b.rtl_flush_cycles << ", TLM " << a.tlm_flush_cycles << " / " << b.tlm_flush_cycles << "; counter RTL "
         << b.rtl_counter << " TLM " << b.tlm_counter;
    for (const auto* r : {&a, &b}) {
      EXPECT_EQ(r->count_mismatches, 0u) << what.str();
      EXPECT_EQ(r->register_mismatches, 0u) << what.str();
      EXPECT_EQ(r->stray_writes, 0u) << what.str();
    }
    EXPECT_FALSE(a.completion_counted) << what.str();
    ASSERT_TRUE(b.completion_counted) << what.str();
    EXPECT_EQ(b.completion_mismatches, 0u) << what.str();
    EXPECT_EQ(b.rtl_counter, 1u) << what.str();  // a fresh counter word per case (zero in both memories)
    EXPECT_EQ(d_rtl, d_tlm) << what.str();
    EXPECT_EQ(d_rtl, 13) << what.str();  // the lockstep memory's 10-cycle write latency + 3 (docs/hw-units.md)
    std::printf("case %zu: %llu tiles; FLUSH_CYCLES without / with the counter: RTL %u / %u, TLM %u / %u\n", i,
                static_cast<unsigned long long>(b.tiles), a.rtl_flush_cycles, b.rtl_flush_cycles, a.tlm_flush_cycles,
                b.tlm_flush_cycles);
  }
}

}  // namespace
