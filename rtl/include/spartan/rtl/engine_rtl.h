// Pin-level driver of the Verilated compaction engine (rtl/src/compaction_engine.v): programs a descriptor
// over the MMIO pins, serves its line reads from a caller-supplied memory and collects its line writes.
// Reads complete `read_latency_cycles` after acceptance, writes are acknowledged `write_latency_cycles` after
// acceptance; no back-pressure (the test bench test_rtl_engine covers that).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>

#include "spartan/hw/regmap.h"

namespace spartan::rtl {

struct EngineRtlResult {
  std::uint32_t status = 0;        ///< LAST_STATUS
  std::uint32_t out_bytes = 0;     ///< LAST_OUT_BYTES
  std::uint32_t job_cycles = 0;    ///< LAST_CYCLES
  std::uint64_t rtl_cycles = 0;    ///< clock cycles simulated (incl. MMIO programming)
  bool finished = false;
};

class EngineRtl {
 public:
  /// `read_line(addr, dst)`: fills the 128 bytes of the line at `addr` (128 B-aligned).
  using LineReader = std::function<void(std::uint64_t addr, std::uint8_t* dst)>;
  EngineRtl(unsigned read_latency_cycles = 20, unsigned write_latency_cycles = 10);
  ~EngineRtl();
  /// Runs one job to completion (or `max_cycles`); the bytes it wrote are in written().
  EngineRtlResult run(const hw::regmap::Descriptor& d, const LineReader& read_line,
                      std::uint64_t max_cycles = 2000000000ull);
  /// Bytes written by the last run, by address.
  const std::map<std::uint64_t, std::uint8_t>& written() const { return written_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::map<std::uint64_t, std::uint8_t> written_;
};

}  // namespace spartan::rtl
