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
  const std::uint64_t first = burst_div_.div(local) * burst_bytes_;
  // Decode every burst once (a line has a handful), start the host-cache misses of their bank records,
  // then time them in address order.
  DramAddress* ds = bursts_;
  std::size_t n = 0;
  for (std::uint64_t a = first; a < local + bytes; a += burst_bytes_, ++n) {
    if (n == kMaxBursts) break;  // longer requests: the rest is decoded again below
    ds[n] = n ? map_.next_burst(ds[n - 1], slice, a - burst_bytes_, a) : map_.to_dram(slice, a);
    chan_.prefetch(ds[n]);
  }
  end = std::max(end, chan_.bursts(arrive, ds, n, write));  // one call for the decoded bursts
  DramAddress d = n ? ds[n - 1] : DramAddress{};
  for (std::uint64_t a = first + n * burst_bytes_; a < local + bytes; a += burst_bytes_) {  // beyond kMaxBursts
    d = map_.next_burst(d, slice, a - burst_bytes_, a);
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

ps_t MemoryController::write_sectors(std::uint32_t slice, std::uint64_t line_local, std::uint32_t sector_bytes,
                                     std::uint32_t mask, ps_t t) {
  auto& st = chan_.stats();
  const ps_t arrive = t + half_ctrl_ps_;
  // Every request arrives at `arrive`, so the bursts of all dirty sectors are timed in one bursts() call
  // per kMaxBursts (same order, timing and stats as one request per sector); the completion is the
  // latest burst end plus the controller latency, as the maximum over the sectors' completions was.
  DramAddress* ds = bursts_;
  std::size_t n = 0;
  ps_t end = arrive;
  bool have_prev = false;
  std::uint64_t prev_a = 0;
  DramAddress prev{};
  for (std::uint32_t s = 0; mask >> s; ++s) {
    if (!(mask >> s & 1)) continue;
    const std::uint64_t local = line_local + std::uint64_t(s) * sector_bytes;
    for (std::uint64_t a = burst_div_.div(local) * burst_bytes_; a < local + sector_bytes; a += burst_bytes_) {
      if (have_prev && a == prev_a) continue;  // a burst wider than a sector: written once for all its sectors
      prev = decode(slice, a, have_prev, prev_a, prev);
      have_prev = true, prev_a = a;
      if (n == kMaxBursts) end = std::max(end, chan_.bursts(arrive, ds, n, true)), n = 0;
      ds[n++] = prev;
    }
    ++st.writes;
    st.write_bytes += sector_bytes;
  }
  if (!mask) return t;
  end = std::max(end, chan_.bursts(arrive, ds, n, true));
  return std::max(t, end + half_ctrl_ps_);
}

void MemoryController::b_transport(int id, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
  ps_t now = sc_core::sc_time_stamp().value();
  std::uint32_t slice = channel_ * slices_per_channel_ + std::uint32_t(id);
  ps_t done = access(slice, gp.get_address(), gp.get_data_length(), gp.is_write(), now + delay.value());
  delay = sc_core::sc_time::from_value(done - now);
  gp.set_response_status(tlm::TLM_OK_RESPONSE);
}

}  // namespace spartan::hw::gpu
