#include "spartan/hw/gpu/memory_controller.h"

#include <algorithm>

namespace spartan::hw::gpu {

MemoryController::MemoryController(sc_core::sc_module_name name, const GpuConfig& cfg, const AddressMap& map,
                                   std::uint32_t channel, StatsRegistry& stats)
    : sc_module(name),
      socket("socket"),
      map_(map),
      channel_(channel),
      slices_per_channel_(map.slices_per_channel()),
      burst_bytes_(cfg.dram.burst_bytes()),
      burst_div_(burst_bytes_),
      half_ctrl_ps_(cfg.dram_clock().cycles_to_ps(cfg.dram.controller_latency_cycles) / 2),
      chan_(cfg.dram, cfg.dram_clock(), channel, cfg.dram.channels) {
  socket.register_b_transport(this, &MemoryController::b_transport);
  chan_.stats().register_with(stats.add_group("mc[" + std::to_string(channel) + "]", "memory_controller"));
}

ps_t MemoryController::access(std::uint32_t slice, std::uint64_t local, std::uint32_t bytes, bool write, ps_t t) {
  auto& st = chan_.stats();
  ps_t arrive = t + half_ctrl_ps_, end = arrive;
  std::uint64_t first = burst_div_.div(local) * burst_bytes_;
  DramAddress d = map_.to_dram(slice, first);
  {  // start the host-cache misses of every burst's bank record before timing the first one
    DramAddress p = d;
    for (std::uint64_t a = first; a < local + bytes; a += burst_bytes_) {
      if (a != first) p = map_.next_burst(p, slice, a - burst_bytes_, a);
      chan_.prefetch(p);
    }
  }
  for (std::uint64_t a = first; a < local + bytes; a += burst_bytes_) {
    if (a != first) d = map_.next_burst(d, slice, a - burst_bytes_, a);
    end = std::max(end, chan_.burst(arrive, d, write));
  }
  if (write) {
    ++st.writes;
    st.write_bytes += bytes;
  } else {
    ++st.reads;
    st.read_bytes += bytes;
    st.read_latency_ps.add(end - arrive);
  }
  return end + half_ctrl_ps_;
}

void MemoryController::b_transport(int id, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
  ps_t now = sc_core::sc_time_stamp().value();
  std::uint32_t slice = channel_ * slices_per_channel_ + std::uint32_t(id);
  ps_t done = access(slice, gp.get_address(), gp.get_data_length(), gp.is_write(), now + delay.value());
  delay = sc_core::sc_time::from_value(done - now);
  gp.set_response_status(tlm::TLM_OK_RESPONSE);
}

}  // namespace spartan::hw::gpu
