// CompactionEngine: converts a dense activation matrix in memory into the project's tile-sparse format,
// near the L2, driven by descriptors pushed through MMIO (SUBMIT) or read from memory (FETCH).
//
// Per descriptor (docs/hw-units.md "CompactionEngine"): read the monitor's per-tile count table, keep
// tiles at or above the density threshold as DENSE (not read), skip all-zero tiles (exact counts only),
// read the remaining tiles line by line, compact them (zero detect + prefix sum) into ELL or BITMAP with
// the byte layout of sw/format/include/spartan/format/tile_format.h (the one definition; this model calls
// its functions for the bytes), and write the payload and the 16-byte tile headers through the L2.
// Source: Spartan (Dong et al., IEEE TPDS 32(10), 2021) for the function; descriptor, registers and
// timing are this project's design.
//
// Timing (loosely timed), calibrated from the RTL (rtl/src/compaction_engine.v; docs/hw-units.md
// "Calibration from the RTL"): a compacted tile is fetched (one line read per cycle, at most
// `outstanding_reads` in flight) into a tile buffer of `read_buffer_bytes`, counted as the lines arrive, then
// emitted one 128 B line per cycle per pass; one write per cycle with at most `outstanding_writes` in flight.
// `tile_buffers` = 1: tiles one after another; >= 2 (default 4): a prefetcher decides ahead and fetches the
// next compacted tiles into free buffers while the current one is emitted (same output bytes). A job that
// aborts (OutOverflow, bus error) ends after every read issued has been answered: with tile_buffers >= 2 also
// the reads the prefetcher issued for the tiles after the one it stopped at, up to the cycle the abort stops
// it (docs/hw-units.md "State machine").
#pragma once
#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include "spartan/hw/mmio.h"
#include "spartan/hw/regmap.h"
#include "spartan/hw/unit_timing.h"

namespace spartan::hw {

/// Parameters (defaults: docs/hw-units.md "Timing parameters"; the cycle rule is calibrated from the RTL).
struct EngineConfig {
  std::uint32_t engine_id = 0;
  double clock_mhz = 1000.0;              ///< the L2 clock of the GPU preset
  /// Line reads in flight (RTL `RD_OUTS`). Little's law: one line per cycle over the L2 round trip (178
  /// core cycles in the V100 preset's L2-hit pointer chase) needs >= 178; 256 is the next power of two (64,
  /// the earlier default, allowed ~0.36 lines per cycle: review finding F3, docs/bench/units.md).
  std::uint32_t outstanding_reads = 256;
  std::uint32_t outstanding_writes = 32;
  std::uint32_t read_buffer_bytes = 16384;  ///< a tile must fit (TR*TC*elem bytes), else SUBMIT is BadValue
  std::uint32_t queue_depth = 8;
  /// Tile buffers of `read_buffer_bytes` each (RTL `TILE_BUFFERS`). 1: the sequential engine (decide, fetch,
  /// count, emit, one tile after another); >= 2: a prefetcher decides ahead of the emitter and fetches the next
  /// compacted tiles into free buffers while the current one is emitted (docs/hw-units.md "State machine").
  /// Default 4: a buffer is allocated per tile, so the reads in flight belong to at most tile_buffers tiles
  /// (fetched, not yet emitted; a 32 x 32 F32 tile is 32-64 line reads); with 2 the 256-read window could not fill.
  std::uint32_t tile_buffers = 4;
  /// Decisions the prefetcher may be ahead of the emitter (RTL `DQ_DEPTH`; used when tile_buffers >= 2).
  std::uint32_t decision_queue_depth = 16;
  std::uint32_t job_setup_cycles = 1;     ///< descriptor pop to the first tile decision (RTL)
  std::uint32_t job_tail_cycles = 2;     ///< last write response to LAST_CYCLES (RTL)
  std::uint32_t mmio_latency_cycles = 2;
  std::uint32_t line_bytes = 128;           ///< request granularity (L2 line)
  /// Width of the engine's crossbar port, bytes per crossbar cycle in each direction (used by the builder
  /// that attaches the engine, GpuSystem::bind_extra_initiator; 1..4096). 0 = one L2 line plus the
  /// crossbar's message header (136 B on the presets with 128 B lines, 72 B on r9nano): one line message per cycle, as the datapath reads
  /// and writes one line per cycle (RTL: 1024-bit rd_resp_data / wr_data); a port as wide as an SM's (32 B:
  /// a 128 B line + header in 5 flits) would starve it (review finding F3). An assumption of this design
  /// (not in the area figures); the L2 slices' own crossbar ports keep the preset's width.
  std::uint32_t port_bytes_per_cycle = 0;
  /// Largest source matrix a descriptor may name: ROWS x ROW_PITCH bytes above it make SUBMIT answer
  /// BadValue. Stands for the device memory the engine can address (default 1 TiB, above every preset's
  /// DRAM); harnesses with a small memory set it lower so that a job cannot outgrow the modelled memory.
  std::uint64_t max_job_bytes = std::uint64_t(1) << 40;
};

struct EngineStats {
  std::uint64_t jobs = 0, job_errors = 0;
  std::uint64_t tiles = 0, tiles_dense = 0, tiles_zero = 0, tiles_compacted = 0;  ///< compacted = fetched
  std::uint64_t tiles_dense_by_size = 0;            ///< fetched, then written DENSE by D_CFG.SIZE_RULE
  std::uint64_t reads = 0, bytes_read = 0;          ///< matrix data
  std::uint64_t table_bytes_read = 0;               ///< count table
  std::uint64_t writes = 0, payload_bytes_written = 0, header_bytes_written = 0;
  std::uint64_t busy_ps = 0;                        ///< job start to job end, summed
  std::uint64_t compactor_busy_ps = 0;              ///< compactor occupied
  /// Pipelined engine: time the prefetcher waited for a free tile buffer before deciding a compacted tile
  /// (all tile_buffers held by fetched, not yet emitted tiles), ps summed over tiles; 0 when tile_buffers = 1.
  std::uint64_t buffer_stall_ps = 0;
  std::uint64_t mmio_reads = 0, mmio_writes = 0, mmio_errors = 0;
  /// FETCH: descriptor line reads issued, and fetched descriptors refused (BadValue) or not read (DescFetch).
  std::uint64_t descriptor_fetches = 0, descriptor_fetch_errors = 0;
  /// COMPL_PTR: completion records written, and those whose write returned a bus error (ERR_CODE ComplWrite).
  std::uint64_t completion_records = 0, completion_record_errors = 0;
};

/// One job as run (also what the co-simulation scoreboard compares).
struct EngineJob {
  regmap::Descriptor desc;
  regmap::engine::JobStatus status = regmap::engine::JobStatus::Ok;
  /// `finished`: DONE_COUNT and LAST_* change (after the completion record's write response when there is one).
  sc_core::sc_time submitted, started, finished;
  std::uint64_t cycles = 0;           ///< LAST_CYCLES (excludes the completion record's write)
  /// The completion record's address (COMPL_PTR + 32 * ENGINE_INDEX at the job's start; 0: no record), and
  /// whether its write returned a bus error.
  std::uint64_t completion_addr = 0;
  bool completion_error = false;
  std::uint64_t payload_bytes = 0;    ///< LAST_OUT_BYTES (payload area size, 16-byte aligned)
  std::uint64_t tiles_dense = 0, tiles_zero = 0, tiles_compacted = 0;
  std::uint64_t tiles_dense_by_size = 0;  ///< of tiles_compacted: written DENSE by SIZE_RULE
  /// Tiles whose header was written: all of them in a job that ends Ok, those before the tile the job
  /// stopped at after an OutOverflow or a BusError.
  std::uint64_t headers_written = 0;
};

class CompactionEngine : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<CompactionEngine> mmio;
  tlm_utils::simple_initiator_socket<CompactionEngine> mem;

  SC_HAS_PROCESS(CompactionEngine);
  CompactionEngine(sc_core::sc_module_name name, const EngineConfig& cfg);

  /// Observers: called when a descriptor is accepted (done = false) and when its job ends (done = true).
  using JobObserver = std::function<void(const EngineJob& job, bool done)>;
  void add_job_observer(JobObserver fn) { observers_.push_back(std::move(fn)); }

  const EngineConfig& config() const { return cfg_; }
  const EngineStats& stats() const { return stats_; }
  const UnitClock& clock() const { return clock_; }
  /// Completed jobs, in completion order.
  const std::vector<EngineJob>& jobs() const { return done_; }
  /// True when no job is queued or running and no descriptor fetch is in flight.
  bool idle() const { return queue_.empty() && !busy_ && !fetch_pending_; }
  const sc_core::sc_event& job_done_event() const { return job_done_ev_; }

 private:
  void b_transport_mmio(tlm::tlm_generic_payload& p, sc_core::sc_time& delay);
  unsigned transport_dbg_mmio(tlm::tlm_generic_payload& p);
  regmap::MmioError reg_read(std::uint32_t off, std::uint32_t& v) const;
  regmap::MmioError reg_write(std::uint32_t off, std::uint32_t v, const sc_core::sc_time& when);
  void job_thread();
  void run_job(EngineJob& job);
  /// The completion record's write at `at` (RTL S_CREC) through `mem`; returns its response time.
  sc_core::sc_time write_completion_record(EngineJob& job, const sc_core::sc_time& at);
  /// SUBMIT's descriptor checks (BadValue) and queue check (QueueFull); None when `d` may be queued.
  regmap::MmioError submit_check(const regmap::Descriptor& d) const;
  void queue_job(const regmap::Descriptor& d, const sc_core::sc_time& when);
  /// FETCH: the line read of the descriptor at fetch_addr_, from max(now, fetch_when_), then its submission.
  void fetch_descriptor();

  EngineConfig cfg_;
  UnitClock clock_;
  EngineStats stats_;
  std::uint32_t ctrl_ = 0, done_count_ = 0;
  std::array<std::uint32_t, regmap::engine::kDescWords> staged_{};
  std::uint64_t desc_ptr_ = 0;          ///< DESC_PTR
  std::uint32_t engine_index_ = 0;      ///< ENGINE_INDEX
  bool fetch_pending_ = false;          ///< STATUS.FETCH_BUSY
  std::uint64_t fetch_addr_ = 0;        ///< DESC_PTR + 64 * ENGINE_INDEX at the FETCH write
  sc_core::sc_time fetch_when_;         ///< the FETCH write's completion
  std::uint64_t compl_ptr_ = 0;         ///< COMPL_PTR
  MmioErrorLatch err_;
  std::deque<EngineJob> queue_;
  bool busy_ = false;
  std::vector<EngineJob> done_;
  sc_core::sc_event work_ev_, job_done_ev_;
  std::vector<JobObserver> observers_;
};

}  // namespace spartan::hw
