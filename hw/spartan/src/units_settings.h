// Internal: the one list of the settings a --units file can give (docs/hw-units.md, "The --units file: every
// key"). Both the loader (load_units_config, replay_report.cpp) and the record of the settings a run used
// (stats.json options.units, replay.cpp) walk this list, so a setting added here is read, range-checked and
// recorded under the same section and key.
#pragma once
#include <cstdint>

#include "spartan/hw/replay.h"

namespace spartan::hw::detail {

/// Calls, in file order, v.section(name) for each section and then, for each of its keys, one of
///   v.u32(key, field, lo, hi, message)  v.u64(key, field, lo, hi, message)  (integers, valid in [lo, hi])
///   v.ns(key, field)     an assumed overhead in ns, 0 .. 1e9
///   v.mhz(key, field)    a unit clock: 0 (the preset's L2 clock) or 1 .. 100000 MHz
///   v.flag(key, field)   true / false
/// with `field` the ReplayOptions member (const when `Opt` is const). `message` is the error for a value
/// outside [lo, hi].
template <class Opt, class V>
void visit_units_settings(Opt& o, V& v) {
  constexpr std::uint32_t kU32Max = 0xFFFFFFFFu;
  const char* const kPositive = "must be >= 1";
  auto& m = o.monitor;
  v.section("monitor");
  v.u32("lines_per_cycle", m.lines_per_cycle, 1, kU32Max, kPositive);
  // Upper bound: 2^22 u32 counters = 16 MiB per monitor (1 GiB for a 64-slice GPU); the default is 8192.
  v.u32("counter_entries", m.counter_entries, 1, 1u << 22, "must be 1..4194304");
  v.u32("flush_groups_per_cycle", m.flush_groups_per_cycle, 1, kU32Max, kPositive);
  v.u32("flush_outstanding", m.flush_outstanding, 1, kU32Max, kPositive);
  v.u32("mmio_latency_cycles", m.mmio_latency_cycles, 0, kU32Max, "");
  v.mhz("clock_mhz", o.monitor_clock_mhz);
  auto& e = o.engine;
  v.section("engine");
  v.u32("outstanding_reads", e.outstanding_reads, 1, kU32Max, kPositive);
  v.u32("outstanding_writes", e.outstanding_writes, 1, kU32Max, kPositive);
  v.u32("read_buffer_bytes", e.read_buffer_bytes, 1, kU32Max, "must be >= 1 (a tile must fit in it)");
  v.u32("queue_depth", e.queue_depth, 1, kU32Max, kPositive);
  v.u32("tile_buffers", e.tile_buffers, 1, 64, "must be 1..64");
  v.mhz("clock_mhz", o.engine_clock_mhz);
  v.u32("decision_queue_depth", e.decision_queue_depth, 1, 4096, "must be 1..4096");
  v.u32("job_setup_cycles", e.job_setup_cycles, 0, kU32Max, "");
  v.u32("job_tail_cycles", e.job_tail_cycles, 0, kU32Max, "");
  v.u32("mmio_latency_cycles", e.mmio_latency_cycles, 0, kU32Max, "");
  v.u64("max_job_bytes", e.max_job_bytes, 1, ~std::uint64_t(0), kPositive);
  v.u32("port_bytes_per_cycle", e.port_bytes_per_cycle, 0, 4096, "must be 0 (one line + header) or 1..4096");
  v.u32("count", o.engine_count, 1, ReplayOptions::kMaxEngineCount, "must be 1..16");
  auto& b = o.baseline;
  v.section("baseline");
  v.ns("kernel_launch_ns", b.kernel_launch_ns);
  v.u32("issue_width", b.issue_width, 1, kU32Max, kPositive);
  v.u32("tiles_in_flight_per_sm", b.tiles_in_flight_per_sm, 1, kU32Max, kPositive);
  v.u32("profile_cycles_per_line", b.profile_cycles_per_line, 0, kU32Max, "");
  v.u32("profile_cycles_per_tile", b.profile_cycles_per_tile, 0, kU32Max, "");
  v.u32("count_cycles_per_line", b.count_cycles_per_line, 0, kU32Max, "");
  v.u32("count_cycles_per_tile", b.count_cycles_per_tile, 0, kU32Max, "");
  v.u32("scan_cycles_per_tile", b.scan_cycles_per_tile, 0, kU32Max, "");
  v.u32("scatter_cycles_per_line", b.scatter_cycles_per_line, 0, kU32Max, "");
  v.u32("scatter_cycles_per_tile", b.scatter_cycles_per_tile, 0, kU32Max, "");
  v.u32("consumer_cycles_per_line", b.consumer_cycles_per_line, 0, kU32Max, "");
  v.section("host");
  v.ns("mmio_read_ns", o.host_mmio_read_ns);
  v.ns("mmio_write_ns", o.host_mmio_write_ns);
  v.flag("monitor_broadcast", o.host_monitor_broadcast);
  v.flag("engine_broadcast", o.host_engine_broadcast);
  v.flag("engine_fetch", o.host_engine_fetch);
  v.flag("engine_record", o.host_engine_record);
  v.flag("monitor_completion", o.host_monitor_completion);
  v.ns("poll_interval_ns", o.host_poll_interval_ns);
}

}  // namespace spartan::hw::detail
