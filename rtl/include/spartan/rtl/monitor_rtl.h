// Cycle-level driver of the Verilated sparsity-monitor RTL (rtl/src/sparsity_monitor.v).
//
// MonitorRtl owns one Verilated model and turns high-level operations into pin activity, one clock at a
// time: MMIO accesses (mmio_* pins, 4-byte registers of regmap.h namespace monitor), write requests
// (s_* valid/ready stream: byte address, length <= 128 inside one line, line-aligned data) and flush
// atomic adds (m_* valid/ready: 32 B-aligned group of up to 8 u32 words, posted). Each accepted add is
// handed to a callback that performs it in memory and returns its latency in cycles; its completion is
// signalled on m_done that many cycles later (the RTL keeps at most FLUSH_OUTSTANDING in flight). Optional
// random back-pressure on m_ready tests the protocol.
// Waveforms: VCD of a cycle window only (open_wave()).
// Errors: std::invalid_argument for requests the pins cannot carry (crossing a line, len 0 or > 128).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>

namespace spartan::rtl {

/// One flush request seen on the m_* pins: atomic add of `words` at `addr` where `mask` bit i is set.
struct AtomicAdd32B {
  std::uint64_t addr = 0;          ///< 32 B-aligned byte address
  std::uint32_t words[8] = {};     ///< little-endian u32 addends
  std::uint8_t mask = 0;           ///< word enables
};

struct MonitorRtlConfig {
  std::uint32_t slice_id = 0;
  std::uint32_t flush_ready_stall_pct = 0;  ///< % of cycles m_ready is forced low (protocol tests)
  std::uint64_t seed = 1;                   ///< seed of the back-pressure generator
};

class MonitorRtl {
 public:
  /// Performs the add; returns its latency in monitor cycles (completion reported on m_done then).
  using FlushSink = std::function<std::uint32_t(const AtomicAdd32B&)>;

  /// Builds the model and applies reset (the counter-table clear after reset is run to completion).
  MonitorRtl(const MonitorRtlConfig& cfg, FlushSink sink);
  ~MonitorRtl();
  MonitorRtl(const MonitorRtl&) = delete;
  MonitorRtl& operator=(const MonitorRtl&) = delete;

  /// Register access through the pins; returns the MmioError code (0 = ok). Takes 2 cycles.
  std::uint32_t mmio_write(std::uint32_t offset, std::uint32_t value);
  std::uint32_t mmio_read(std::uint32_t offset, std::uint32_t& value);
  /// Presents one write request and clocks until the monitor accepts it; returns the cycles it waited.
  std::uint64_t write_request(std::uint64_t addr, const std::uint8_t* data, std::uint32_t len);
  /// Clocks until the monitor is idle (pipeline drained, no flush or clear running).
  void run_until_idle(std::uint64_t max_cycles = 100000000ull);
  /// Clocks n idle cycles.
  void idle(std::uint64_t n);
  /// Synchronous reset in the middle of anything (pins), then the post-reset clear to completion.
  void reset();
  bool busy() const;

  std::uint64_t cycle() const { return cycle_; }
  /// Cycles during which a write request was presented but not accepted (back-pressure on s_ready).
  std::uint64_t stall_cycles() const { return stall_cycles_; }
  /// Most flush atomic adds issued on the m_* pins and not yet completed at any time since construction (the
  /// RTL keeps at most FLUSH_OUTSTANDING; a test can check that the bound is reached and holds).
  std::size_t max_adds_in_flight() const { return max_adds_in_flight_; }

  /// VCD of absolute cycles [from, to) only (Verilator --trace), written as the run passes the window and
  /// closed at its end. VCD time in ps (the file's $timescale 1ps): cycle k (counted from the cycle this is
  /// called at) is sampled after its rising edge at (k + 0.5) x period_ps and after its falling edge at
  /// (k + 1) x period_ps, so a viewer shows real time at the unit's clock (period_ps = 1e6 / MHz; >= 2).
  void open_wave(const std::string& path, std::uint64_t from, std::uint64_t to, double period_ps = 1000.0);

 private:
  void tick();
  struct Impl;
  std::unique_ptr<Impl> impl_;
  MonitorRtlConfig cfg_;
  FlushSink sink_;
  std::uint64_t cycle_ = 0, stall_cycles_ = 0;
  std::multiset<std::uint64_t> done_at_;  ///< completion cycles of posted atomic adds
  std::size_t max_adds_in_flight_ = 0;
};

}  // namespace spartan::rtl
