// Crossbar between the SMs (and extra initiators such as the CompactionEngine) and the L2 slices.
// Each input port and each slice-side port has a request and a response direction, each moving
// port_bytes_per_cycle bytes per crossbar cycle (a BandwidthCalendar per port and direction: the
// busy-until reservation generalised to out-of-time-order requests); a message of
// header_bytes + payload, rounded up to whole flits, crosses both ports it uses plus latency_cycles. Writes carry their data on the request path, reads on the response path. The slice is
// chosen by the AddressMap (address-slice hashing); a request must lie inside one L2 line.
#pragma once
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_initiator_socket.h>
#include <tlm_utils/multi_passthrough_target_socket.h>

#include "spartan/hw/address_map.h"
#include "spartan/hw/reservation.h"
#include "spartan/hw/stats.h"

namespace spartan::hw::gpu {

class L2Slice;

struct CrossbarPortStats {
  std::uint64_t requests = 0, request_bytes = 0, response_bytes = 0;
  Average queue_delay_ps;  ///< waiting for busy ports (both directions) per request
  /// Reservations older than a port calendar's horizon, timed without contention (BandwidthCalendar, both
  /// directions; for the slice-side ports, all of them in the group xbar.slice_ports).
  std::uint64_t stale_reservations = 0;
  void register_with(StatsGroup& g) const;
};

class Crossbar : public sc_core::sc_module {
 public:
  tlm_utils::multi_passthrough_target_socket<Crossbar> in;      ///< port i = SM i, then extra initiators
  tlm_utils::multi_passthrough_initiator_socket<Crossbar> out;  ///< port s = L2 slice s

  Crossbar(sc_core::sc_module_name name, const GpuConfig& cfg, const AddressMap& map, StatsRegistry& stats);
  /// Declares the next input port (call once per binding of `in`, in binding order); `name` labels stats.
  /// `bytes_per_cycle`: the port's width in both directions; 0 = the preset's port_bytes_per_cycle (an SM
  /// port). The slice-side ports keep the preset's width.
  void add_input_port(const std::string& name, std::uint32_t bytes_per_cycle = 0);
  std::size_t input_ports() const { return ports_.size(); }
  /// Fast path used by the builder (GpuSystem): the L2 slices `out` is bound to, in port order, called
  /// directly (L2Slice::access, integer ps) instead of through b_transport. Same timing.
  void set_direct_targets(const std::vector<L2Slice*>& slices) { direct_ = slices; }
  /// The crossbar's b_transport without sc_time (fast path of the SMs' TrafficGenerators, wired by the
  /// builder): request `gp` entering input port `port` at `t_ps` (>= `now_ps`, the current simulation
  /// time); returns the time (ps) its response is back at the port. b_transport wraps it. Same timing.
  ps_t access(std::size_t port, tlm::tlm_generic_payload& gp, ps_t now_ps, ps_t t_ps);
  /// Every port calendar forgets its reservations and counts bins from `origin` (BandwidthCalendar::rebase;
  /// nothing may be reserved at or after `origin`).
  void rebase(ps_t origin);

 private:
  /// A message on a port: its whole flits (header + payload, port width each) and their time at one flit per cycle.
  struct Message { std::uint64_t flits; ps_t min_ps; };
  struct Port {
    // 8-cycle bins over a 16K-cycle horizon: 4 KiB of ring blocks per calendar, of which a reservation
    // touches one or two.
    Port(const ClockDomain& clk, std::uint32_t bw) : req(clk, bw, 8, 2048), rsp(clk, bw, 8, 2048) {}
    BandwidthCalendar req, rsp;
    CrossbarPortStats stats;
    /// Input ports of another width than the preset's (extra initiators; `wide` for the usual case): their
    /// own message table (payload 0..line), else nullptr (the crossbar's msg_).
    const std::vector<Message>* wide_msg = nullptr;
    std::uint32_t bw = 0;  ///< bytes per cycle
  };
  void b_transport(int id, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
  /// access() on input port `p`; Wide: a port with its own width (wide_msg), else the preset's width.
  template <bool Wide>
  ps_t access_on(Port& p, tlm::tlm_generic_payload& gp, ps_t now, ps_t t);
  unsigned int transport_dbg(int id, tlm::tlm_generic_payload& gp);
  /// Whole flits of a message with `payload` bytes on a port of `bw` bytes per cycle (the preset's width by
  /// default): header + payload, rounded up.
  std::uint64_t flits(std::uint32_t payload, std::uint32_t bw) const {
    return (std::uint64_t(header_) + payload + bw - 1) / bw;
  }
  std::uint64_t flits(std::uint32_t payload) const { return flits(payload, bw_); }
  ps_t cycles_ps(std::uint64_t cycles) const {  // table of cycles_to_ps for short messages (no lround)
    return cycles < cycle_ps_.size() ? cycle_ps_[cycles] : clk_.cycles_to_ps(double(cycles));
  }
  /// A message with `payload` bytes: its flits on a port (header + payload in whole flits of bw bytes) and
  /// its minimum transfer time (cycles_ps(flits)). Tabled for payloads up to a line: no divide per call.
  Message message(std::uint32_t payload) const {
    if (payload < msg_.size()) return msg_[payload];
    const std::uint64_t f = flits(payload);
    return {f, cycles_ps(f)};
  }
  /// message() on input port `p`'s own width (the same as message() for a port of the preset's width).
  Message port_message(const Port& p, std::uint32_t payload) const {
    if (!p.wide_msg) return message(payload);
    if (payload < p.wide_msg->size()) return (*p.wide_msg)[payload];
    const std::uint64_t f = flits(payload, p.bw);
    return {f, clk_.cycles_to_ps(double(f))};
  }
  const AddressMap& map_;
  StatsRegistry& registry_;
  ClockDomain clk_;
  std::uint32_t bw_, header_;
  ps_t latency_ps_;
  std::deque<Port> ports_;  // deque: stats references stay valid as ports are added
  std::vector<Port*> port_ptr_;  // ports_[i] without the deque's index arithmetic
  std::deque<Port> slice_ports_;
  std::vector<Port*> slice_port_ptr_;
  std::vector<L2Slice*> direct_;
  std::vector<ps_t> cycle_ps_;
  std::vector<Message> msg_;  ///< message(p) for p = 0..line_bytes
  std::deque<std::vector<Message>> wide_msg_;  ///< the tables of wider input ports
  std::uint32_t line_bytes_;
  std::uint64_t slice_ports_stale_ = 0;  ///< the slice-side ports' stale reservations (group xbar.slice_ports)
};

}  // namespace spartan::hw::gpu
