// SystemC/TLM-2.0 wrapper of the Verilated sparsity-monitor RTL: one SC_MODULE with the same sockets as the
// TLM SparsityMonitor (hw/spartan), and transactors that turn TLM transactions into pin activity and back.
//
//   mmio (target)       4-byte register accesses -> mmio_* pins; the RTL's error code comes back as the TLM
//                       response of docs/hw-units.md ("Bad MMIO accesses"); byte-enable/size errors are
//                       decided here (the pins carry only 4-byte accesses).
//   wr (target)         write requests the L2 slice accepted (TLM_WRITE_COMMAND, <= 128 B inside one line)
//                       -> s_* pins; the annotated delay grows by the cycles s_ready was low.
//   mem (initiator)     flush atomic adds from the m_* pins -> a 32 B read (functional) + 32 B write through the L2
//                       (as the TLM model); the add completes (m_done) one cycle + the write latency after issue.
// Timing is loosely timed and in lockstep: before each transaction the RTL is clocked up to the
// transaction's local time (sc_time_stamp() + delay) in cycles of `clock_mhz`, so RTL cycle n = time n*T
// (cycles counted from the end of the post-reset counter clear).
#pragma once
#include <cstdint>
#include <memory>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include "spartan/rtl/monitor_rtl.h"

namespace spartan::rtl {

/// FLUSH_OUTSTANDING of the Verilated monitor (sparsity_monitor.v's default); the TLM model in a lockstep must
/// use the same window (MonitorConfig::flush_outstanding).
inline constexpr unsigned kMonitorFlushOutstanding = 32;

struct MonitorRtlScConfig {
  double clock_mhz = 1000.0;      ///< unit clock (the L2 clock of the GPU preset)
  MonitorRtlConfig pins;          ///< slice id, back-pressure test options
};

class MonitorRtlSc : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<MonitorRtlSc> mmio;
  tlm_utils::simple_target_socket<MonitorRtlSc> wr;
  tlm_utils::simple_initiator_socket<MonitorRtlSc> mem;

  MonitorRtlSc(sc_core::sc_module_name name, const MonitorRtlScConfig& cfg);

  MonitorRtl& pins() { return *rtl_; }
  /// Clocks the RTL until idle (flush finished); returns the time at which it became idle.
  sc_core::sc_time drain(const sc_core::sc_time& from);
  sc_core::sc_time period() const { return period_; }

 private:
  void b_transport_mmio(tlm::tlm_generic_payload& p, sc_core::sc_time& delay);
  void b_transport_wr(tlm::tlm_generic_payload& p, sc_core::sc_time& delay);
  void sync_to(const sc_core::sc_time& t);
  sc_core::sc_time now_of_rtl() const;
  std::uint32_t flush_add(const AtomicAdd32B& a);

  MonitorRtlScConfig cfg_;
  sc_core::sc_time period_;
  std::unique_ptr<MonitorRtl> rtl_;
  std::uint64_t cycle0_ = 0;  ///< RTL cycle at time 0 (after the post-reset counter clear)
};

}  // namespace spartan::rtl
