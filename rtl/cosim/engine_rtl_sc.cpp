// SystemC/TLM wrapper and transactors of the Verilated compaction engine (see engine_rtl_sc.h).
// The Verilated model's headers come before any SystemC header: the model is built without SystemC (--cc),
// and verilated.h switches its time source to sc_time_stamp() when it sees SystemC already included.
#include "engine_pins.h"

#include "spartan/rtl/engine_rtl_sc.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <deque>
#include <map>
#include <stdexcept>

#include "mmio_response.h"
#include "spartan/hw/payload.h"

namespace spartan::rtl {

using detail::mmio_response_for;
using detail::pin_mmio_structural_error;

struct EngineRtlSc::Impl {
  detail::EngineModel m;
  std::uint64_t cycle = 0;  ///< RTL cycles since the end of reset
  struct Rd {
    std::array<std::uint8_t, 128> data;
    std::uint64_t due;  ///< cycle from which the response is presented
    bool err;
  };
  std::deque<Rd> reads;                        ///< in order (the pins return responses in request order)
  std::multimap<std::uint64_t, bool> wresp;    ///< due cycle -> error, one pulse per completed write
};

namespace {
sc_core::sc_time period_of(double clock_mhz) {
  if (!(clock_mhz > 0.0) || !std::isfinite(clock_mhz)) throw std::invalid_argument("EngineRtlSc: clock_mhz must be > 0");
  return sc_core::sc_time(static_cast<double>(std::llround(1.0e6 / clock_mhz)), sc_core::SC_PS);
}
}  // namespace

EngineRtlSc::EngineRtlSc(sc_core::sc_module_name name, const EngineRtlScConfig& cfg)
    : sc_core::sc_module(name), mmio("mmio"), mem("mem"), cfg_(cfg),
      period_(period_of(cfg.clock_mhz)), impl_(std::make_unique<Impl>()) {
  mmio.register_b_transport(this, &EngineRtlSc::b_transport_mmio);
}
EngineRtlSc::~EngineRtlSc() = default;

std::uint64_t EngineRtlSc::cycles() const { return impl_->cycle; }
bool EngineRtlSc::busy() const { return impl_->m.top->busy; }
sc_core::sc_time EngineRtlSc::time_of(std::uint64_t c) const { return period_ * static_cast<double>(c); }
std::uint64_t EngineRtlSc::cycles_of(const sc_core::sc_time& t) const {
  const std::uint64_t p = period_.value();
  return (t.value() + p - 1) / p;
}

void EngineRtlSc::sync_to(const sc_core::sc_time& t) {
  const std::uint64_t target = cycles_of(t);
  while (impl_->cycle < target) tick();
}

sc_core::sc_time EngineRtlSc::transact(tlm::tlm_command cmd, std::uint64_t addr, std::uint8_t* data,
                                       std::uint32_t len, std::uint64_t at, bool& ok) {
  const sc_core::sc_time t = time_of(at), now = sc_core::sc_time_stamp();
  const sc_core::sc_time d0 = t > now ? t - now : sc_core::SC_ZERO_TIME;
  sc_core::sc_time d = d0;
  tlm::tlm_generic_payload p;
  spartan::hw::prepare_payload(p, cmd, addr, data, len);
  mem->b_transport(p, d);
  ok = p.is_response_ok();
  if (!ok) ++stats_.bus_errors;
  return d > d0 ? d - d0 : sc_core::SC_ZERO_TIME;
}

void EngineRtlSc::tick() {
  Impl& I = *impl_;
  auto& t = *I.m.top;
  // Inputs of this cycle: no back-pressure; the oldest read response once due; one write ack per cycle.
  t.rd_ready = 1;
  t.wr_ready = 1;
  t.rd_resp_valid = 0;
  t.rd_resp_err = 0;
  if (!I.reads.empty() && I.reads.front().due <= I.cycle) {
    I.m.put_read_data(I.reads.front().data.data());
    t.rd_resp_err = I.reads.front().err;
    t.rd_resp_valid = 1;
  }
  t.wr_resp_valid = 0;
  t.wr_resp_err = 0;
  if (!I.wresp.empty() && I.wresp.begin()->first <= I.cycle) {
    t.wr_resp_valid = 1;
    t.wr_resp_err = I.wresp.begin()->second;
    I.wresp.erase(I.wresp.begin());
  }
  // The sampled outputs come from registers (see engine_rtl.cpp): no settle eval needed before sampling.
  const bool rd_fire = t.rd_valid && t.rd_ready;
  const std::uint64_t rd_a = t.rd_addr;
  const bool resp_fire = t.rd_resp_valid && t.rd_resp_ready;
  if (t.wr_valid && t.wr_ready) {
    std::uint8_t bytes[128];
    std::uint64_t strb[2];
    I.m.take_write(bytes, strb);
    const std::uint64_t line = t.wr_addr;
    ++stats_.line_writes;
    bool all_ok = true;
    sc_core::sc_time lat = sc_core::SC_ZERO_TIME;
    for (unsigned i = 0; i < 128;) {
      auto on = [&](unsigned k) { return ((strb[k >> 6] >> (k & 63)) & 1u) != 0; };
      if (!on(i)) {
        ++i;
        continue;
      }
      unsigned j = i;
      while (j < 128 && on(j)) ++j;
      bool ok = true;
      lat = std::max(lat, transact(tlm::TLM_WRITE_COMMAND, line + i, bytes + i, j - i, I.cycle, ok));
      all_ok = all_ok && ok;
      ++stats_.tlm_writes;
      stats_.bytes_written += j - i;
      i = j;
    }
    I.wresp.emplace(I.cycle + cycles_of(lat), !all_ok);
  }
  I.m.clock();
  if (resp_fire) I.reads.pop_front();
  if (rd_fire) {
    Impl::Rd r{};
    bool ok = true;
    const sc_core::sc_time lat = transact(tlm::TLM_READ_COMMAND, rd_a, r.data.data(), 128, I.cycle, ok);
    r.err = !ok;
    // in-order responses: a response is never presented before the one ahead of it
    r.due = std::max(I.cycle + cycles_of(lat), I.reads.empty() ? 0 : I.reads.back().due);
    I.reads.push_back(r);
    ++stats_.line_reads;
  }
  ++I.cycle;
}

sc_core::sc_time EngineRtlSc::drain(const sc_core::sc_time& from, std::uint64_t max_cycles) {
  sync_to(from);
  Impl& I = *impl_;
  std::uint64_t n = 0;
  while (I.m.top->busy || I.m.job_pending() || !I.reads.empty() || !I.wresp.empty()) {
    tick();
    if (++n > max_cycles) throw std::runtime_error("compaction_engine RTL: no idle within the cycle limit");
  }
  tick();  // the job's completion registers (DONE_COUNT, LAST_*) update one cycle after the FSM is idle
  return time_of(I.cycle);
}

void EngineRtlSc::b_transport_mmio(tlm::tlm_generic_payload& p, sc_core::sc_time& delay) {
  if (p.get_command() == tlm::TLM_IGNORE_COMMAND) {
    p.set_response_status(tlm::TLM_OK_RESPONSE);
    return;
  }
  std::uint32_t err = pin_mmio_structural_error(p);
  if (err != 0) {
    p.set_response_status(mmio_response_for(err));
    return;
  }
  sync_to(sc_core::sc_time_stamp() + delay);
  auto& t = *impl_->m.top;
  // mmio_ready is 1 (the register block accepts every cycle); the response is registered: accept, respond.
  t.mmio_valid = 1;
  t.mmio_we = p.is_write();
  t.mmio_addr = static_cast<std::uint32_t>(p.get_address());
  std::uint32_t v = 0;
  if (p.is_write()) std::memcpy(&v, p.get_data_ptr(), 4);
  t.mmio_wdata = v;
  tick();
  t.mmio_valid = 0;
  err = t.mmio_err;
  if (!p.is_write() && err == 0) {
    v = t.mmio_rdata;
    std::memcpy(p.get_data_ptr(), &v, 4);
  }
  tick();
  ++stats_.mmio_accesses;
  p.set_response_status(mmio_response_for(err));
  delay = time_of(impl_->cycle) - sc_core::sc_time_stamp();
}

}  // namespace spartan::rtl
