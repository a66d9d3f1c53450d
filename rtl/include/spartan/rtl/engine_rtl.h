// Pin-level driver of the Verilated compaction engine (rtl/src/compaction_engine.v): programs a descriptor
// over the MMIO pins, serves its line reads from a caller-supplied memory and collects its line writes.
// Reads complete `read_latency_cycles` after acceptance, writes are acknowledged `write_latency_cycles` after
// acceptance; no back-pressure (the test bench test_rtl_engine covers that).
#pragma once
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <memory>

#include "spartan/hw/regmap.h"

namespace spartan::rtl {

struct EngineRtlResult {
  std::uint32_t status = 0;        ///< LAST_STATUS
  std::uint32_t out_bytes = 0;     ///< LAST_OUT_BYTES
  std::uint32_t job_cycles = 0;    ///< LAST_CYCLES
  std::uint64_t rtl_cycles = 0;    ///< clock cycles simulated (incl. MMIO programming)
  bool finished = false;
  /// MmioError code (hw::regmap) that SUBMIT answered: 0 = accepted; otherwise the RTL refused the
  /// descriptor (BadValue: regmap::descriptor_valid fails or a tile exceeds EngineRtl::kReadBufferBytes),
  /// no job ran and run() returned at once (finished stays false).
  std::uint32_t submit_error = 0;
  std::uint64_t tiles_compacted = 0;        ///< tiles that went through fetch + emit
  /// Summed cycles from the start of each compacted tile's fetch to its header issue (fetch + count + emit):
  /// sequential build, from the job FSM entering FETCH; pipelined build, from the prefetcher starting the
  /// tile's fetch (before the twelfth session: from the job FSM's decision, which left out the prefetch time
  /// and so fell with more tile buffers).
  std::uint64_t compacted_tile_cycles = 0;
  /// Most line reads issued on the rd_* pins and not yet answered at any time of the job (the RTL keeps at
  /// most EngineRtl::kReadsInFlight; a test can check that the bound is reached and holds).
  std::uint64_t max_reads_in_flight = 0;
  /// run_fetched(): cycles from the cycle that takes the FETCH write to the job FSM leaving IDLE (CTRL.ENABLE is
  /// set before the FETCH); 0 otherwise.
  std::uint64_t fetch_to_start_cycles = 0;
  /// Cycles the completion record (set_completion) added to the job: from the cycle LAST_CYCLES counts to, to the
  /// job FSM's return to IDLE (0 for a job without a record, which returns to IDLE in that cycle).
  std::uint64_t record_cycles = 0;
  /// ERR_CODE after the job when a completion record was set (code ComplWrite, offset COMPL_PTR_LO and the write
  /// bit after a failed record write; the register is cleared before COMPL_PTR is written), else 0.
  std::uint32_t completion_error = 0;
};

/// The bytes a run wrote, kept per 128 B line (data + byte-written mask).
class WrittenLines {
 public:
  /// The byte at `addr`, or -1 if the run did not write it.
  int at(std::uint64_t addr) const {
    auto it = lines_.find(addr >> 7);
    if (it == lines_.end()) return -1;
    const unsigned i = addr & 127u;
    return (it->second.mask[i >> 6] >> (i & 63)) & 1u ? it->second.data[i] : -1;
  }
  /// Merges a line write (`strb` bit i: byte i written).
  void write(std::uint64_t line_addr, const std::uint8_t* data, const std::uint64_t strb[2]) {
    Line& l = lines_[line_addr >> 7];
    for (unsigned i = 0; i < 128; ++i)
      if ((strb[i >> 6] >> (i & 63)) & 1u) l.data[i] = data[i];
    l.mask[0] |= strb[0];
    l.mask[1] |= strb[1];
  }
  void clear() { lines_.clear(); }
  std::size_t lines() const { return lines_.size(); }
  /// Calls f(addr) for every byte written (lines in no particular order).
  template <class F>
  void for_each_written(F&& f) const {
    for (const auto& [line, l] : lines_)
      for (unsigned i = 0; i < 128; ++i)
        if ((l.mask[i >> 6] >> (i & 63)) & 1u) f((line << 7) + i);
  }

 private:
  struct Line {
    std::uint8_t data[128] = {};
    std::uint64_t mask[2] = {0, 0};
  };
  std::unordered_map<std::uint64_t, Line> lines_;
};

class EngineRtl {
 public:
  /// The Verilated RTL's tile read buffer (compaction_engine.v parameter READ_BUFFER_BYTES, left at its
  /// default): SUBMIT refuses (BadValue) a descriptor whose tile (TR x TC x element bytes) is larger.
  static constexpr std::uint32_t kReadBufferBytes = 16384;
  /// TILE_BUFFERS of the default (pipelined) build, compaction_engine.v's default; the other build is 1.
  static constexpr unsigned kPipelinedTileBuffers = 4;
  /// RD_OUTS of both builds (compaction_engine.v's default): line reads in flight at most.
  static constexpr unsigned kReadsInFlight = 256;
  /// Whether an RTL build with this TILE_BUFFERS exists (1 or kPipelinedTileBuffers): the one check the
  /// constructor and the tools (spartan-sim run --rtl, spartan-rtl-bench) apply before using one.
  static constexpr bool has_build(unsigned tile_buffers) {
    return tile_buffers == 1 || tile_buffers == kPipelinedTileBuffers;
  }
  /// `read_line(addr, dst)`: fills the 128 bytes of the line at `addr` (128 B-aligned).
  using LineReader = std::function<void(std::uint64_t addr, std::uint8_t* dst)>;
  /// `tile_buffers`: which build of the RTL (its TILE_BUFFERS parameter): 1 (sequential) or
  /// kPipelinedTileBuffers (the default); any other value throws std::invalid_argument.
  EngineRtl(unsigned read_latency_cycles = 20, unsigned write_latency_cycles = 10,
            unsigned tile_buffers = kPipelinedTileBuffers);
  ~EngineRtl();
  /// Runs one job to completion (or `max_cycles`); the bytes it wrote are in written().
  EngineRtlResult run(const hw::regmap::Descriptor& d, const LineReader& read_line,
                      std::uint64_t max_cycles = 2000000000ull);
  /// Descriptor fetch (regmap engine::FETCH): DESC_PTR and ENGINE_INDEX to program.
  struct Fetch {
    std::uint64_t desc_ptr = 0;
    std::uint32_t engine_index = 0;
  };
  /// As run(), but the engine reads its descriptor from memory: DESC_PTR, ENGINE_INDEX, CTRL.ENABLE, FETCH
  /// (N = index + 1). `read_line` must serve the descriptor's line too (`d` is not
  /// written to the pins). EngineRtlResult::submit_error: the FETCH write's error, else ERR_CODE[7:0] latched
  /// by the fetch (BadValue, DescFetch); no job ran when it is not 0.
  EngineRtlResult run_fetched(const Fetch& f, const LineReader& read_line, std::uint64_t max_cycles = 2000000000ull);
  /// Completion record (regmap engine::COMPL_PTR) of the next runs: each run programs COMPL_PTR = `compl_ptr`
  /// (32-byte aligned; 0: no record) and, for run(), ENGINE_INDEX = `engine_index` (run_fetched() programs its
  /// own), and clears ERR_CODE. The record's 32 bytes are in written() with the job's other writes.
  void set_completion(std::uint64_t compl_ptr, std::uint32_t engine_index) {
    compl_ptr_ = compl_ptr;
    compl_index_ = engine_index;
  }
  /// Bytes written by the last run, by line (128 B-aligned address).
  const WrittenLines& written() const { return written_; }
  /// Fault injection: a line read or write for which `f(line_addr, is_write)` returns true is answered with
  /// rd_resp_err / wr_resp_err (a failed write is not recorded in written()); none by default.
  using LineFault = std::function<bool(std::uint64_t line_addr, bool is_write)>;
  void set_line_fault(LineFault f) { fault_ = std::move(f); }
  /// Write tap: called with every line write the RTL issues (128 B-aligned `line_addr`, its 128 data bytes,
  /// `strb` bit i: byte i written) before it is recorded in written(); it may alter `data` (the scoreboard's
  /// negative controls, rtl/cosim/test_fault.h). None by default.
  using WriteTap = std::function<void(std::uint64_t line_addr, std::uint8_t* data, const std::uint64_t strb[2])>;
  void set_write_tap(WriteTap f) { tap_ = std::move(f); }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  WrittenLines written_;
  LineFault fault_;
  WriteTap tap_;
  std::uint64_t compl_ptr_ = 0;
  std::uint32_t compl_index_ = 0;
};

}  // namespace spartan::rtl
