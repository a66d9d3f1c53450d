// Lockstep scoreboard of the compaction engine: one descriptor runs on the TLM CompactionEngine (hw/spartan,
// behind a FlatMemory with fixed latencies) and on the Verilated engine RTL (EngineRtl, the same latencies in
// cycles), over the same source matrix and count table. Every header and payload byte the RTL writes is
// compared with the TLM engine's, and the job cycles (LAST_CYCLES) are reported side by side: the TLM timing
// rule is calibrated from the RTL (docs/hw-units.md "Calibration from the RTL"; goal within +-5 %).
// Requires the TLM units (spartan_hw_units). run() must be called from an SC_THREAD.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <systemc>

#include "spartan/hw/compaction_engine.h"
#include "spartan/hw/regmap.h"
#include "spartan/rtl/engine_rtl.h"

namespace spartan::rtl {

struct EngineLockstepConfig {
  double clock_mhz = 1000.0;           ///< engine clock (the L2 clock of the GPU preset)
  unsigned read_latency_cycles = 20;   ///< memory read latency, request accepted -> response (both models)
  unsigned write_latency_cycles = 10;  ///< write acceptance -> write response
  /// Tile buffers of both models (EngineConfig::tile_buffers and the RTL build's TILE_BUFFERS): 1 or
  /// EngineRtl::kPipelinedTileBuffers.
  unsigned tile_buffers = EngineRtl::kPipelinedTileBuffers;
  /// Fault injection, the same in both models: every access to a 128 B line for which `fail_line(line_addr,
  /// is_write)` returns true is answered with an error (TLM_ADDRESS_ERROR_RESPONSE / rd_resp_err, wr_resp_err)
  /// and moves no data. Empty: no faults.
  std::function<bool(std::uint64_t line_addr, bool is_write)> fail_line;
  /// Nonzero: both models fetch the descriptor (regmap engine::FETCH) instead of taking it through SUBMIT; run()
  /// puts its 64 bytes at fetch_desc_ptr + 64 * fetch_engine_index (fetch_desc_ptr 64-byte aligned, outside
  /// the job's areas), programs DESC_PTR and ENGINE_INDEX and writes FETCH with N = fetch_engine_index + 1.
  std::uint64_t fetch_desc_ptr = 0;
  /// ENGINE_INDEX of both models: the engine whose descriptor is fetched and whose completion record is written.
  std::uint32_t fetch_engine_index = 0;
  /// Nonzero: both models write a completion record (regmap engine::COMPL_PTR) at completion_ptr + 32 *
  /// fetch_engine_index (32-byte aligned, outside the job's areas); its bytes are compared with the others.
  std::uint64_t completion_ptr = 0;
};

struct EngineLockstepResult {
  bool rtl_finished = false;
  std::uint32_t rtl_status = 0, tlm_status = 0;   ///< LAST_STATUS (regmap::engine::JobStatus)
  std::uint64_t rtl_out_bytes = 0, tlm_out_bytes = 0;
  std::uint64_t rtl_cycles = 0, tlm_cycles = 0;   ///< job cycles (LAST_CYCLES)
  std::uint64_t bytes_compared = 0;               ///< header + payload bytes compared
  /// Bytes that differ or that the RTL did not write (must be 0), in every job: the headers both models wrote
  /// (all tiles' unless the job stopped at a tile) and the payload up to the smaller LAST_OUT_BYTES, without
  /// the lines whose writes fail (fault injection); plus bytes the RTL wrote in the header table or the
  /// payload area beyond what the TLM engine wrote.
  std::uint64_t byte_mismatches = 0;
  std::uint64_t tlm_headers_written = 0;          ///< EngineJob::headers_written
  /// Header slots the RTL wrote: the longest prefix of slots written in full (a slot in a line whose writes
  /// fail counts as written). Must equal tlm_headers_written.
  std::uint64_t rtl_headers_written = 0;
  /// Bytes the RTL wrote outside the header table (16 x tiles at HDR_BASE) and [OUT_BASE, OUT_BASE +
  /// OUT_CAPACITY), in every job, failed ones included (must be 0).
  std::uint64_t stray_write_bytes = 0;
  std::uint64_t rtl_cycles_simulated = 0;         ///< RTL clock cycles (incl. MMIO programming)
  double wall_seconds = 0;                        ///< wall time of the RTL part
  std::uint64_t tiles = 0;                        ///< tiles of the job
  std::uint64_t rtl_tiles_compacted = 0, rtl_compacted_tile_cycles = 0;  ///< see EngineRtlResult
  std::uint64_t rtl_max_reads_in_flight = 0;      ///< EngineRtlResult::max_reads_in_flight
  /// With fetch_desc_ptr: the FETCH write's error code, else the code the fetch latched in ERR_CODE (BadValue,
  /// DescFetch), per model; 0 = the job was queued. Compared by mismatches() in that mode.
  bool fetched = false;
  std::uint32_t rtl_fetch_error = 0, tlm_fetch_error = 0;
  /// With fetch_desc_ptr and the job queued: engine cycles from the FETCH write to the job's start (descriptor
  /// pop), per model (RTL: EngineRtlResult::fetch_to_start_cycles; TLM: EngineJob::started minus the time the
  /// FETCH access began, in engine cycles, rounded). The TLM rule's fetch timing against the RTL's.
  std::uint64_t rtl_fetch_to_start_cycles = 0, tlm_fetch_to_start_cycles = 0;
  /// With completion_ptr and a job run: ERR_CODE after the job per model (code ComplWrite, offset COMPL_PTR_LO,
  /// write bit when the record's write failed, else 0; the whole register compared by mismatches()). In every run that finished: the engine cycles the record
  /// added to the job's busy time (0 without one; RTL: EngineRtlResult::record_cycles; TLM: EngineJob::finished
  /// - started, in cycles, less LAST_CYCLES). The record's own bytes are in bytes_compared / byte_mismatches.
  bool recorded = false;
  std::uint32_t rtl_completion_error = 0, tlm_completion_error = 0;
  std::uint64_t rtl_record_cycles = 0, tlm_record_cycles = 0;
  /// Mismatches of any kind: bytes, status, out bytes, headers, RTL not finished, (fetched) the fetch's error
  /// codes, and (recorded) the completion record's error codes.
  std::uint64_t mismatches() const {
    return byte_mismatches + stray_write_bytes + (rtl_finished ? 0 : 1) + (rtl_status != tlm_status) +
           (rtl_out_bytes != tlm_out_bytes) + (rtl_headers_written != tlm_headers_written) +
           (fetched && rtl_fetch_error != tlm_fetch_error) + (recorded && rtl_completion_error != tlm_completion_error);
  }
  double deviation_percent() const { return tlm_cycles ? 100.0 * (double(rtl_cycles) - double(tlm_cycles)) / double(tlm_cycles) : 0.0; }
};

class EngineLockstep {
 public:
  /// `read(addr, dst, n)`: source of the matrix and count-table bytes (e.g. the GPU's functional memory).
  using Reader = std::function<void(std::uint64_t addr, std::uint8_t* dst, std::size_t n)>;
  /// Elaborates the TLM engine and its memory (call before sc_start).
  EngineLockstep(const std::string& name, const EngineLockstepConfig& cfg = {});
  ~EngineLockstep();
  /// The configuration of the TLM engine the RTL is compared with: the RTL's parameters (the EngineConfig
  /// defaults), at `cfg`'s clock and tile buffers. A replay whose engine differs in a field the RTL implements
  /// is not the model this lockstep validates (`spartan-sim run --rtl` refuses it).
  static hw::EngineConfig tlm_config(const EngineLockstepConfig& cfg);
  /// Runs `d` on both (source matrix and count table copied from `read`); call from an SC_THREAD.
  EngineLockstepResult run(const hw::regmap::Descriptor& d, const Reader& read);
  /// EngineLockstepConfig::fetch_engine_index of the next runs (the engine whose descriptor is fetched).
  void set_fetch_engine_index(std::uint32_t index);
  /// Bytes the RTL wrote in the last run, by address.
  const WrittenLines& rtl_written() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace spartan::rtl
