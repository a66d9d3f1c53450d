// SystemC/TLM wrapper and transactors of the Verilated sparsity monitor (see monitor_rtl_sc.h).
#include "spartan/rtl/monitor_rtl_sc.h"

#include <cmath>
#include <cstring>

#include "mmio_response.h"
#include "spartan/hw/payload.h"

namespace spartan::rtl {

using detail::mmio_response_for;
using detail::pin_mmio_structural_error;

MonitorRtlSc::MonitorRtlSc(sc_core::sc_module_name name, const MonitorRtlScConfig& cfg)
    : sc_core::sc_module(name), mmio("mmio"), wr("wr"), mem("mem"), cfg_(cfg),
      period_(sc_core::sc_time(std::llround(1.0e6 / cfg.clock_mhz), sc_core::SC_PS)) {
  mmio.register_b_transport(this, &MonitorRtlSc::b_transport_mmio);
  wr.register_b_transport(this, &MonitorRtlSc::b_transport_wr);
  rtl_ = std::make_unique<MonitorRtl>(cfg.pins, [this](const AtomicAdd32B& a) { return flush_add(a); });
  cycle0_ = rtl_->cycle();
}

sc_core::sc_time MonitorRtlSc::now_of_rtl() const { return period_ * static_cast<double>(rtl_->cycle() - cycle0_); }

void MonitorRtlSc::sync_to(const sc_core::sc_time& t) {
  const auto target = cycle0_ + static_cast<std::uint64_t>(std::ceil(t / period_));
  if (target > rtl_->cycle()) rtl_->idle(target - rtl_->cycle());
}

sc_core::sc_time MonitorRtlSc::drain(const sc_core::sc_time& from) {
  sync_to(from);
  rtl_->run_until_idle();
  return now_of_rtl();
}

void MonitorRtlSc::b_transport_mmio(tlm::tlm_generic_payload& p, sc_core::sc_time& delay) {
  if (p.get_command() == tlm::TLM_IGNORE_COMMAND) {
    p.set_response_status(tlm::TLM_OK_RESPONSE);
    return;
  }
  const sc_core::sc_time start = sc_core::sc_time_stamp() + delay;
  sync_to(start);
  std::uint32_t err = pin_mmio_structural_error(p);
  if (err != 0) {
    // Structural errors are decided here and never reach the pins, so unlike the TLM model they are not
    // latched in the RTL's ERR_CODE (documented difference of the transactor).
    p.set_response_status(mmio_response_for(err));
    return;
  }
  const auto off = static_cast<std::uint32_t>(p.get_address());
  if (p.is_write()) {
    std::uint32_t v;
    std::memcpy(&v, p.get_data_ptr(), 4);
    err = rtl_->mmio_write(off, v);
  } else {
    std::uint32_t v = 0;
    err = rtl_->mmio_read(off, v);
    if (err == 0) std::memcpy(p.get_data_ptr(), &v, 4);
  }
  p.set_response_status(mmio_response_for(err));
  delay = now_of_rtl() - sc_core::sc_time_stamp();
}

void MonitorRtlSc::b_transport_wr(tlm::tlm_generic_payload& p, sc_core::sc_time& delay) {
  if (!p.is_write()) {
    p.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
    return;
  }
  sync_to(sc_core::sc_time_stamp() + delay);
  const std::uint64_t addr = p.get_address();
  const std::uint32_t len = p.get_data_length();
  if (len == 0 || len > 128 || (addr & 127) + len > 128) {
    p.set_response_status(tlm::TLM_BURST_ERROR_RESPONSE);
    return;
  }
  rtl_->write_request(addr, p.get_data_ptr(), len);
  p.set_response_status(tlm::TLM_OK_RESPONSE);
  delay = now_of_rtl() - sc_core::sc_time_stamp();
}

std::uint32_t MonitorRtlSc::flush_add(const AtomicAdd32B& a) {
  // As the TLM model (docs/hw-units.md, "Count table and flush"): the add happens at the L2 (ROP atomic),
  // modelled as one write message of the group whose completion is the atomic's completion, issued one
  // cycle after the request; the group is also read functionally first (that read's timing is not on the
  // path, as in the TLM model).
  std::uint8_t buf[32] = {};
  const sc_core::sc_time d0 = now_of_rtl() - sc_core::sc_time_stamp();
  sc_core::sc_time d = d0;
  tlm::tlm_generic_payload p;
  spartan::hw::prepare_payload(p, tlm::TLM_READ_COMMAND, a.addr, buf, 32);
  mem->b_transport(p, d);
  for (unsigned i = 0; i < 8; ++i) {
    if (!(a.mask & (1u << i))) continue;
    std::uint32_t v;
    std::memcpy(&v, buf + 4 * i, 4);
    v += a.words[i];  // u32 add of the L2 ROP (wraps)
    std::memcpy(buf + 4 * i, &v, 4);
  }
  p.set_command(tlm::TLM_WRITE_COMMAND);
  p.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  d = d0 + period_;
  mem->b_transport(p, d);
  const sc_core::sc_time elapsed = (sc_core::sc_time_stamp() + d) - now_of_rtl();
  return static_cast<std::uint32_t>(std::llround(elapsed / period_));
}

}  // namespace spartan::rtl
