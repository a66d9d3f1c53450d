// Lockstep scoreboard RTL vs TLM sparsity monitor (see monitor_lockstep.h).
#include "spartan/rtl/monitor_lockstep.h"

#include <chrono>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include "spartan/hw/flat_memory.h"
#include "spartan/hw/mmio.h"
#include "spartan/hw/regmap.h"
#include "spartan/hw/sparsity_monitor.h"
#include "spartan/rtl/monitor_rtl_sc.h"
#include "spartan/hw/payload.h"
#include "test_fault.h"

namespace spartan::rtl {

namespace mon = hw::regmap::monitor;

namespace {
struct Host : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<Host> tlm_mmio, rtl_mmio, rtl_wr;
  explicit Host(sc_core::sc_module_name n) : sc_module(n), tlm_mmio("tlm_mmio"), rtl_mmio("rtl_mmio"), rtl_wr("rtl_wr") {}
};

tlm::tlm_response_status access(tlm_utils::simple_initiator_socket<Host>& s, bool write, std::uint32_t off,
                                std::uint32_t& v) {
  sc_core::sc_time d = sc_core::SC_ZERO_TIME;
  const auto st = hw::mmio_transport32(s, write, off, v, d);
  sc_core::wait(d);
  return st;
}
}  // namespace

hw::MonitorConfig MonitorLockstep::tlm_config(double clock_mhz) {
  hw::MonitorConfig c;
  c.clock_mhz = clock_mhz;
  c.flush_outstanding = kMonitorFlushOutstanding;
  return c;
}

using detail::TestFault;

struct MonitorLockstep::Impl {
  double clock_mhz;  ///< the units' clock (first: initialised before the models)
  TestFault fault =
      detail::test_fault_for("monitor", {TestFault::kCount, TestFault::kFlushCycles, TestFault::kMonitorCounter});
  hw::SparsityMonitor tlm;
  MonitorRtlSc rtl;
  hw::FlatMemory tlm_mem, rtl_mem;
  Host host;
  std::uint64_t job = 0;
  std::uint64_t compl_ptr = 0;  ///< set_completion()
  bool compl_programmed = false;  ///< the models' COMPL_PTR is non-zero
  Impl(const std::string& name, double mhz)
      : clock_mhz(mhz),
        tlm((name + "_tlm").c_str(), MonitorLockstep::tlm_config(mhz)),
        rtl((name + "_rtl").c_str(), [mhz] { MonitorRtlScConfig c; c.clock_mhz = mhz; return c; }()),
        tlm_mem((name + "_tlm_mem").c_str(), mem_cfg()),
        rtl_mem((name + "_rtl_mem").c_str(), mem_cfg()),
        host((name + "_host").c_str()) {
    host.tlm_mmio.bind(tlm.mmio);
    host.rtl_mmio.bind(rtl.mmio);
    host.rtl_wr.bind(rtl.wr);
    tlm.mem.bind(tlm_mem.socket);
    rtl.mem.bind(rtl_mem.socket);
  }
  static hw::FlatMemoryConfig mem_cfg() {
    hw::FlatMemoryConfig c;
    c.read_latency = sc_core::sc_time(20, sc_core::SC_NS);
    c.write_latency = sc_core::sc_time(10, sc_core::SC_NS);
    return c;
  }
  // Same access on both; returns 1 if the responses or (for reads) the values differ.
  unsigned both(bool write, std::uint32_t off, std::uint32_t v, bool compare_value = true) {
    std::uint32_t a = v, b = v;
    const auto ra = access(host.tlm_mmio, write, off, a);
    const auto rb = access(host.rtl_mmio, write, off, b);
    return (ra != rb || (!write && compare_value && a != b)) ? 1u : 0u;
  }
};

MonitorLockstep::MonitorLockstep(const std::string& name, double clock_mhz)
    : impl_(std::make_unique<Impl>(name, clock_mhz)) {}
MonitorLockstep::~MonitorLockstep() = default;

void MonitorLockstep::set_completion(std::uint64_t ptr) {
  if (ptr % 4 != 0) throw std::invalid_argument("monitor lockstep: COMPL_PTR must be 4-byte aligned");
  impl_->compl_ptr = ptr;
}

void MonitorLockstep::wave(const std::string& path, std::uint64_t from, std::uint64_t to) {
  const std::uint64_t c0 = impl_->rtl.pins().cycle();
  // Saturated: a window end near 2^64 ("to the end") wrapped below c0 and dumped nothing (new-user review).
  const std::uint64_t max = ~std::uint64_t(0);
  auto at = [&](std::uint64_t k) { return k > max - c0 ? max : c0 + k; };
  impl_->rtl.pins().open_wave(path, at(from), at(to), 1e6 / impl_->clock_mhz);
}

LockstepResult MonitorLockstep::run(const LockstepMatrix& m, unsigned sample_shift, LockstepStimulus stimulus,
                                     std::uint64_t seed, const std::vector<LockstepRequest>& given) {
  auto& I = *impl_;
  LockstepResult res;
  const auto wall0 = std::chrono::steady_clock::now();
  const std::uint64_t rtl_c0 = I.rtl.pins().cycle();
  const unsigned eb = m.dtype == 0 ? 4 : 2;
  const std::uint64_t base = 0x100000000ull + 0x10000000ull * (I.job % 4);
  const std::uint64_t ct = 0x800000000ull + 0x1000000ull * I.job;
  ++I.job;
  const std::uint64_t size = std::uint64_t(m.rows) * m.row_pitch_bytes;
  unsigned bad = 0;
  bad += I.both(true, mon::region_reg(0, mon::R_CFG), 0);
  bad += I.both(true, mon::region_reg(0, mon::R_TILE), m.tile_rows | (m.tile_cols << 16));
  bad += I.both(true, mon::region_reg(0, mon::R_BASE_LO), static_cast<std::uint32_t>(base));
  bad += I.both(true, mon::region_reg(0, mon::R_BASE_HI), static_cast<std::uint32_t>(base >> 32));
  bad += I.both(true, mon::region_reg(0, mon::R_ROWS), m.rows);
  bad += I.both(true, mon::region_reg(0, mon::R_COLS), m.cols);
  bad += I.both(true, mon::region_reg(0, mon::R_ROW_PITCH), m.row_pitch_bytes);
  bad += I.both(true, mon::region_reg(0, mon::R_CNT_OFFSET), 0);
  bad += I.both(true, mon::region_reg(0, mon::R_CT_BASE_LO), static_cast<std::uint32_t>(ct));
  bad += I.both(true, mon::region_reg(0, mon::R_CT_BASE_HI), static_cast<std::uint32_t>(ct >> 32));
  bad += I.both(true, mon::region_reg(0, mon::R_CFG), 1u | (m.dtype << mon::R_CFG_DTYPE_LSB));
  {
    // Both must have taken the region (CFG.EN read back set): two models that refuse it alike (e.g. more tiles
    // than counters) would otherwise agree on a flush that counted nothing. A refusal counts as a mismatch.
    std::uint32_t tcfg = 0, rcfg = 0;
    access(I.host.tlm_mmio, false, mon::region_reg(0, mon::R_CFG), tcfg);
    access(I.host.rtl_mmio, false, mon::region_reg(0, mon::R_CFG), rcfg);
    bad += !(tcfg & 1u) || !(rcfg & 1u);
  }
  bad += I.both(true, mon::SAMPLE_SHIFT, sample_shift);
  if (I.compl_ptr != 0 || I.compl_programmed) {  // (never programmed: a run as before COMPL_PTR existed)
    bad += I.both(true, mon::COMPL_PTR_LO, static_cast<std::uint32_t>(I.compl_ptr));
    bad += I.both(true, mon::COMPL_PTR_HI, static_cast<std::uint32_t>(I.compl_ptr >> 32));
    I.compl_programmed = I.compl_ptr != 0;
  }
  std::uint32_t counter0[2] = {0, 0};  // the completion counter before the flush (TLM, RTL)
  if (I.compl_ptr != 0) {
    I.tlm_mem.read_bytes(I.compl_ptr, &counter0[0], 4);
    I.rtl_mem.read_bytes(I.compl_ptr, &counter0[1], 4);
  }
  bad += I.both(true, mon::CTRL, 0x3);  // ENABLE + CLEAR
  // let the RTL finish its counter clear before the producer starts (the TLM clear is instantaneous)
  const sc_core::sc_time ready = I.rtl.drain(sc_core::sc_time_stamp());
  if (ready > sc_core::sc_time_stamp()) sc_core::wait(ready - sc_core::sc_time_stamp());

  const sc_core::sc_time t0 = sc_core::sc_time_stamp();
  const sc_core::sc_time T = I.rtl.period();
  sc_core::sc_time d = sc_core::SC_ZERO_TIME;
  std::vector<std::uint8_t> line(128);
  // The requests, as (offset, length) in the region: lines (or sectors) of the address space, cut at its ends.
  const std::uint64_t unit = stimulus == LockstepStimulus::kLines ? 128 : 32;
  std::vector<std::pair<std::uint64_t, std::uint32_t>> reqs;
  if (stimulus == LockstepStimulus::kGiven) {
    for (const LockstepRequest& q : given) {
      if (q.len == 0 || q.offset + q.len > size || ((base + q.offset) & ~127ull) != ((base + q.offset + q.len - 1) & ~127ull))
        throw std::invalid_argument("monitor lockstep: a given request (offset " + std::to_string(q.offset) + ", " +
                                    std::to_string(q.len) + " bytes) is not inside the region and one line");
      reqs.emplace_back(q.offset, q.len);
    }
  }
  for (std::uint64_t a = 0; stimulus != LockstepStimulus::kGiven && a < size;) {
    const std::uint64_t end = std::min<std::uint64_t>(((base + a) & ~(unit - 1)) + unit - base, size);
    reqs.emplace_back(a, static_cast<std::uint32_t>(end - a));
    a = end;
  }
  if (stimulus == LockstepStimulus::kShuffledSectors) {  // Fisher-Yates on mt19937_64: the same order everywhere
    std::mt19937_64 rng(seed);
    for (std::size_t i = reqs.size(); i > 1; --i) std::swap(reqs[i - 1], reqs[rng() % i]);
  }
  for (const auto& [a, len] : reqs) {
    const sc_core::sc_time when = t0 + T * static_cast<double>(res.requests);
    I.tlm.observe_write(base + a, m.data + a, len, when);
    tlm::tlm_generic_payload p;
    std::memcpy(line.data(), m.data + a, len);
    spartan::hw::prepare_payload(p, tlm::TLM_WRITE_COMMAND, base + a, line.data(), len);
    sc_core::sc_time dl = when - sc_core::sc_time_stamp();
    if (d > dl) dl = d;
    I.host.rtl_wr->b_transport(p, dl);
    d = dl;
    ++res.requests;
  }
  res.rtl_count_cycles = (sc_core::sc_time_stamp() + d - t0) / T;
  res.tlm_count_cycles = (I.tlm.last_accept() - t0) / T + 1.0;  // up to and including the last request's acceptance
  sc_core::wait(d + T * 8.0);  // both pipelines drained (latency: TLM 3, RTL 4 cycles)
  const sc_core::sc_time drained = I.rtl.drain(sc_core::sc_time_stamp());
  if (drained > sc_core::sc_time_stamp()) sc_core::wait(drained - sc_core::sc_time_stamp());
  // Every write either model makes during the flush must fall in the count table (the scoreboard compares the
  // table only; the engine lockstep already checks its writes so).
  const std::uint64_t table_bytes = 4 * ((std::uint64_t(m.rows) + m.tile_rows - 1) / m.tile_rows) *
                                    ((std::uint64_t(m.cols) + m.tile_cols - 1) / m.tile_cols);
  // The atomic adds write whole 32 B groups of the table (byte-enabled): the table's groups are the bounds.
  const std::uint64_t lo = ct & ~std::uint64_t(31), hi = (ct + table_bytes + 31) & ~std::uint64_t(31);
  // The completion counter's add writes into its own 32 B group (the RTL transactor writes the whole group back).
  const std::uint64_t cg = I.compl_ptr & ~std::uint64_t(31);
  auto stray = [&res, lo, hi, cg, &I](std::uint64_t a, const std::uint8_t*, std::uint32_t n, const sc_core::sc_time&) {
    const bool in_counter = I.compl_ptr != 0 && a >= cg && a + n <= cg + 32;
    if ((a < lo || a + n > hi) && !in_counter) ++res.stray_writes;
  };
  I.tlm_mem.set_write_hook(stray);
  I.rtl_mem.set_write_hook(stray);
  bad += I.both(true, mon::FLUSH, 1);
  const sc_core::sc_time rtl_done = I.rtl.drain(sc_core::sc_time_stamp());
  if (I.tlm.flush_busy()) sc_core::wait(I.tlm.flush_done_event());
  if (rtl_done > sc_core::sc_time_stamp()) sc_core::wait(rtl_done - sc_core::sc_time_stamp());
  for (std::uint32_t reg : {mon::LINES_SEEN, mon::LINES_MATCHED, mon::LINES_SAMPLED, mon::STATUS,
                            mon::region_reg(0, mon::R_TILES), mon::region_reg(0, mon::R_MATCHED),
                            mon::region_reg(0, mon::R_SIZE_LO), mon::COMPL_PTR_LO, mon::COMPL_PTR_HI})
    bad += I.both(false, reg, 0);
  std::uint32_t a = 0, b = 0;
  access(I.host.tlm_mmio, false, mon::FLUSH_CYCLES, a);
  access(I.host.rtl_mmio, false, mon::FLUSH_CYCLES, b);
  res.tlm_flush_cycles = a;
  res.rtl_flush_cycles = b;
  const std::uint64_t tpr = (m.cols + m.tile_cols - 1) / m.tile_cols;
  res.tiles = ((m.rows + m.tile_rows - 1) / m.tile_rows) * tpr;
  for (std::uint64_t t = 0; t < res.tiles; ++t) {
    std::uint32_t x = 0, y = 0;
    I.tlm_mem.read_bytes(ct + 4 * t, &x, 4);
    I.rtl_mem.read_bytes(ct + 4 * t, &y, 4);
    if (t == 0 && I.fault == TestFault::kCount) y ^= 1u;  // test hook: the RTL's first count off by one
    res.count_mismatches += x != y;
  }
  if (I.fault == TestFault::kFlushCycles) res.rtl_flush_cycles += 100;  // test hook: the RTL's flush 100 cycles slower
  if (I.compl_ptr != 0) {
    res.completion_counted = true;
    I.tlm_mem.read_bytes(I.compl_ptr, &res.tlm_counter, 4);
    I.rtl_mem.read_bytes(I.compl_ptr, &res.rtl_counter, 4);
    if (I.fault == TestFault::kMonitorCounter) res.rtl_counter += 1;  // test hook: the RTL's counter one too high
    res.completion_mismatches = (res.tlm_counter != counter0[0] + 1) + (res.rtl_counter != counter0[1] + 1) +
                                (res.tlm_counter != res.rtl_counter);
  }
  res.register_mismatches = bad;
  I.tlm_mem.set_write_hook(nullptr);
  I.rtl_mem.set_write_hook(nullptr);
  (void)eb;
  res.rtl_cycles_total = I.rtl.pins().cycle() - rtl_c0;
  res.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return res;
}

}  // namespace spartan::rtl
