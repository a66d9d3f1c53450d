// SystemC/TLM-2.0 wrapper of the Verilated compaction-engine RTL (rtl/src/compaction_engine.v): one SC_MODULE
// with the same sockets as the TLM CompactionEngine (hw/spartan), and transactors that turn TLM transactions
// into pin activity and back.
//
//   mmio (target)      4-byte register accesses (regmap.h namespace engine) -> mmio_* pins, 2 unit cycles
//                      (accept + registered response, = the TLM model's mmio_latency_cycles); the RTL's error
//                      code comes back as the TLM response of docs/hw-units.md ("Bad MMIO accesses").
//                      Byte-enable / size / outside-the-4-KiB-window errors are decided here (the pins carry
//                      only 4-byte accesses with a 12-bit offset), so unlike the TLM model they are not
//                      latched in the RTL's ERR_CODE. TLM_IGNORE_COMMAND: OK, no effect.
//   mem (initiator)    each line read the RTL issues (rd_valid & rd_ready) -> one 128 B TLM read at the RTL
//                      cycle's time; its response goes back on rd_resp_* (in order, as the pins require) after
//                      the annotated delay rounded up to whole cycles; a TLM error response -> rd_resp_err.
//                      Each line write (wr_valid & wr_ready) -> one TLM write per contiguous run of strobed
//                      bytes; wr_resp_valid pulses after the (largest) annotated delay in cycles; a TLM error
//                      -> wr_resp_err. Requests are never back-pressured (rd_ready = wr_ready = 1).
// Timing is loosely timed and in lockstep, as MonitorRtlSc: before each MMIO access the RTL is clocked up to
// the access's local time (sc_time_stamp() + delay) in cycles of `clock_mhz` (RTL cycle n = time n*T, counted
// from the end of reset); the RTL only runs when a transaction arrives or in drain(). Memory transactions
// are issued with the RTL cycle's time as their local time; when the RTL lags behind sc_time_stamp()
// (the caller waited without touching the unit), they are issued at sc_time_stamp() and only their latency
// is used, which is exact for a fixed-latency memory (hw::FlatMemory without a bandwidth limit).
// Errors: the constructor throws std::invalid_argument for clock_mhz <= 0; drain() throws std::runtime_error
// if the engine is not idle within its cycle limit.
#pragma once
#include <cstdint>
#include <memory>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

namespace spartan::rtl {

struct EngineRtlScConfig {
  double clock_mhz = 1000.0;  ///< unit clock (the L2 clock of the GPU preset)
};

/// Transactor counters.
struct EngineRtlScStats {
  std::uint64_t mmio_accesses = 0;
  std::uint64_t line_reads = 0, line_writes = 0;  ///< RTL requests (pins)
  std::uint64_t tlm_writes = 0;                   ///< TLM writes (contiguous strobe runs)
  std::uint64_t bytes_written = 0;
  std::uint64_t bus_errors = 0;                   ///< TLM error responses passed to rd_resp_err / wr_resp_err
};

class EngineRtlSc : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<EngineRtlSc> mmio;
  tlm_utils::simple_initiator_socket<EngineRtlSc> mem;

  EngineRtlSc(sc_core::sc_module_name name, const EngineRtlScConfig& cfg = {});
  ~EngineRtlSc() override;

  /// Clocks the RTL from `from` on until no job runs or can start (CTRL.ENABLE clear or the descriptor queue
  /// empty) and no memory response is outstanding; returns the time at which it became idle (the completion
  /// registers DONE_COUNT / LAST_* are updated by then). Call from a process; it does not wait().
  sc_core::sc_time drain(const sc_core::sc_time& from, std::uint64_t max_cycles = 1000000000ull);
  sc_core::sc_time period() const { return period_; }
  /// RTL clock cycles since the end of reset.
  std::uint64_t cycles() const;
  /// True while a job runs (the RTL's busy pin).
  bool busy() const;
  const EngineRtlScStats& stats() const { return stats_; }

 private:
  void b_transport_mmio(tlm::tlm_generic_payload& p, sc_core::sc_time& delay);
  void sync_to(const sc_core::sc_time& t);
  void tick();
  sc_core::sc_time time_of(std::uint64_t cycle) const;
  std::uint64_t cycles_of(const sc_core::sc_time& latency) const;  ///< rounded up
  /// One TLM transaction through `mem` at RTL cycle `at`; returns its latency (annotated delay growth).
  sc_core::sc_time transact(tlm::tlm_command cmd, std::uint64_t addr, std::uint8_t* data, std::uint32_t len,
                            std::uint64_t at, bool& ok);

  struct Impl;
  EngineRtlScConfig cfg_;
  sc_core::sc_time period_;
  std::unique_ptr<Impl> impl_;
  EngineRtlScStats stats_;
};

}  // namespace spartan::rtl
