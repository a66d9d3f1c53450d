// Memory controller of one DRAM channel: a TLM target for the L2 slices that share the channel (socket
// index k = slice % slices_per_channel, bound in that order by GpuSystem). A request carries the
// slice-local address and a length (whole sectors); it is split into bursts, each timed by DramChannel.
// No data moves here (data lives in the BackingStore; see l2_slice.h). Annotated delay in: arrival
// offset; out: offset at which the last beat is back at the slice, including the fixed controller/PHY
// latency (half on the way in, half on the way out).
#pragma once
#include <cstdint>

#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_target_socket.h>

#include "spartan/hw/address_map.h"
#include "spartan/hw/gpu/dram_channel.h"

namespace spartan::hw::gpu {

class MemoryController : public sc_core::sc_module {
 public:
  tlm_utils::multi_passthrough_target_socket<MemoryController> socket;

  MemoryController(sc_core::sc_module_name name, const GpuConfig& cfg, const AddressMap& map,
                   std::uint32_t channel, StatsRegistry& stats);

  /// Timing-only access without TLM (for unit tests and the L2's posted writebacks): `slice`, slice-local
  /// address, bytes, arrival time; returns completion time (ps).
  ps_t access(std::uint32_t slice, std::uint64_t local, std::uint32_t bytes, bool write, ps_t t_ps);
  /// The write-back of a line's dirty sectors: the same as calling access(slice, line_local + s *
  /// sector_bytes, sector_bytes, true, t_ps) for every set bit s of `dirty_mask` in ascending order (one
  /// request per sector, same timing and stats), with the DRAM addresses of consecutive bursts decoded
  /// incrementally. Returns the latest completion time (t_ps when the mask is empty).
  ps_t write_sectors(std::uint32_t slice, std::uint64_t line_local, std::uint32_t sector_bytes,
                     std::uint32_t dirty_mask, ps_t t_ps);
  DramChannel& channel() { return chan_; }

 private:
  void b_transport(int id, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
  /// DRAM coordinates of slice-local burst address `a`, from the previous burst decoded (`prev`, at
  /// `prev_a`; valid when `have_prev`) when `a` is that burst or the next one; else a full decode.
  DramAddress decode(std::uint32_t slice, std::uint64_t a, bool have_prev, std::uint64_t prev_a,
                     const DramAddress& prev) const {
    if (have_prev && a == prev_a) return prev;
    if (have_prev && a == prev_a + burst_bytes_) return map_.next_burst(prev, slice, prev_a, a);
    return map_.to_dram(slice, a);
  }
  static constexpr std::size_t kMaxBursts = 16;
  DramAddress bursts_[kMaxBursts]{};  ///< scratch: the decoded bursts of the request being timed
  const AddressMap& map_;
  std::uint32_t channel_, slices_per_channel_, burst_bytes_;
  FastDiv burst_div_;
  ps_t half_ctrl_ps_;
  DramChannel chan_;
};

}  // namespace spartan::hw::gpu
