// CTRL.CLEAR_DONE written in the cycle a job completes (EngineRtlSc, the TLM wrapper of the engine RTL): the
// clear must not be lost. docs/hw-units.md: "[1] CLEAR_DONE (W1: zero DONE_COUNT)"; after a CLEAR_DONE written
// while a job runs, DONE_COUNT reads 1 (cleared, then the job completed) or 0 (the job completed first), never
// the old count + 1. Until the fresh-eyes review of 2026-12-07 the RTL's completion update overrode the clear in
// that cycle (DONE_COUNT 1 -> 2 instead of 0 or 1). The write's cycle is swept over the job's whole duration,
// one engine cycle per trial, so the completion cycle is hit; the TLM CompactionEngine gets the same trials.
// One elaboration per process (SystemC), so this executable holds one scenario.
#include <gtest/gtest.h>

#include <cstdio>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include "spartan/hw/compaction_engine.h"
#include "spartan/hw/flat_memory.h"
#include "spartan/hw/mmio.h"
#include "spartan/hw/regmap.h"
#include "spartan/rtl/engine_rtl_sc.h"

extern "C" int sc_main(int, char**) { return 0; }

namespace {
using namespace spartan;
namespace eng = hw::regmap::engine;

struct Outcome {
  unsigned trials = 0, lost = 0, cleared_before = 0, cleared_after = 0;
};

struct Host : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<Host> tm, rm;
  rtl::EngineRtlSc* rtl_engine = nullptr;
  hw::CompactionEngine* tlm_engine = nullptr;
  Outcome rtl_out, tlm_out;
  SC_HAS_PROCESS(Host);
  explicit Host(sc_core::sc_module_name n) : sc_module(n), tm("tm"), rm("rm") { SC_THREAD(run); }
  std::uint32_t acc(tlm_utils::simple_initiator_socket<Host>& s, bool w, std::uint32_t off, std::uint32_t v) {
    sc_core::sc_time d = sc_core::SC_ZERO_TIME;
    EXPECT_EQ(hw::mmio_transport32(s, w, off, v, d), tlm::TLM_OK_RESPONSE) << std::hex << off;
    sc_core::wait(d);
    return v;
  }
  void trial(tlm_utils::simple_initiator_socket<Host>& s, bool is_rtl, unsigned k, Outcome& o) {
    hw::regmap::Descriptor d;  // one 8 x 8 F32 tile of zeros: a short job (count 0, header only)
    d.src = 0x10000;
    d.rows = d.cols = 8;
    d.row_pitch_bytes = 32;
    d.tile_rows = d.tile_cols = 8;
    d.count_table = 0x20000;
    d.header_base = 0x30000;
    d.out_base = 0x40000;
    d.out_capacity_bytes = 0x1000;
    const auto w = d.to_words();
    for (unsigned i = 0; i < eng::kDescWords; ++i) acc(s, true, eng::DESC_BASE + 4 * i, w[i]);
    const std::uint32_t before = acc(s, false, eng::DONE_COUNT, 0);
    acc(s, true, eng::SUBMIT, 1);
    acc(s, true, eng::CTRL, 1);
    wait(sc_core::sc_time(k, sc_core::SC_NS));
    acc(s, true, eng::CTRL, 3);  // ENABLE + CLEAR_DONE
    if (is_rtl) {
      const sc_core::sc_time t = rtl_engine->drain(sc_core::sc_time_stamp());
      if (t > sc_core::sc_time_stamp()) wait(t - sc_core::sc_time_stamp());
    } else {
      while (!tlm_engine->idle()) wait(tlm_engine->job_done_event());
    }
    wait(sc_core::sc_time(50, sc_core::SC_NS));
    const std::uint32_t after = acc(s, false, eng::DONE_COUNT, 0);
    ++o.trials;
    o.cleared_before += after == 1;
    o.cleared_after += after == 0;
    if (after > 1) {
      ++o.lost;
      ADD_FAILURE() << (is_rtl ? "RTL" : "TLM") << ": CLEAR_DONE written " << k << " ns after ENABLE: DONE_COUNT "
                    << before << " before, " << after << " after (expected 0 or 1)";
    }
    acc(s, true, eng::CTRL, 0);
  }
  void run() {
    for (unsigned k = 0; k < 120; ++k) trial(rm, true, k, rtl_out);
    for (unsigned k = 0; k < 120; ++k) trial(tm, false, k, tlm_out);
    sc_core::sc_stop();
  }
};

TEST(EngineRtlClearDone, ClearDoneInTheCompletionCycleIsNotLost) {
  constexpr double kMhz = 1000.0;  // 1 ns per engine cycle: the sweep steps one cycle per trial
  hw::EngineConfig ec;
  ec.clock_mhz = kMhz;
  hw::CompactionEngine tlm_engine("tlm", ec);
  rtl::EngineRtlScConfig rc;
  rc.clock_mhz = kMhz;
  rtl::EngineRtlSc rtl_engine("rtl", rc);
  hw::FlatMemoryConfig fc;
  fc.read_latency = sc_core::sc_time(20, sc_core::SC_NS);
  fc.write_latency = sc_core::sc_time(10, sc_core::SC_NS);
  hw::FlatMemory tlm_mem("tlm_mem", fc), rtl_mem("rtl_mem", fc);
  Host h("host");
  h.rtl_engine = &rtl_engine;
  h.tlm_engine = &tlm_engine;
  h.tm.bind(tlm_engine.mmio);
  h.rm.bind(rtl_engine.mmio);
  tlm_engine.mem.bind(tlm_mem.socket);
  rtl_engine.mem.bind(rtl_mem.socket);
  sc_core::sc_start();
  for (const Outcome* o : {&h.rtl_out, &h.tlm_out}) {
    const char* who = o == &h.rtl_out ? "RTL" : "TLM";
    std::printf("%s: %u trials, clear before completion %u, after %u, lost %u\n", who, o->trials, o->cleared_before,
                o->cleared_after, o->lost);
    EXPECT_EQ(o->trials, 120u) << who;
    EXPECT_EQ(o->lost, 0u) << who;
    // the sweep brackets the completion: some clears land before it, some after
    EXPECT_GT(o->cleared_before, 0u) << who;
    EXPECT_GT(o->cleared_after, 0u) << who;
  }
}

}  // namespace
