#include "spartan/hw/compaction_engine.h"

#include <algorithm>
#include <cstring>

#include <tlm_utils/tlm_quantumkeeper.h>

#include "spartan/format/tile_format.h"
#include "spartan/hw/payload.h"

namespace spartan::hw {

using namespace regmap;
using namespace regmap::engine;
using sc_core::sc_time;
using sc_core::SC_ZERO_TIME;
namespace fmt = spartan::format;

// The register encodings are the format's own values (one definition, checked here).
static_assert(static_cast<unsigned>(ElemType::F32) == static_cast<unsigned>(fmt::ElemType::F32) &&
                  static_cast<unsigned>(ElemType::F16) == static_cast<unsigned>(fmt::ElemType::F16) &&
                  static_cast<unsigned>(ElemType::BF16) == static_cast<unsigned>(fmt::ElemType::BF16),
              "ElemType register encoding must match tile_format.h");
static_assert(kFormatEll == static_cast<unsigned>(fmt::TileFormat::Ell) &&
                  kFormatBitmap == static_cast<unsigned>(fmt::TileFormat::Bitmap),
              "FORMAT field values must match tile_format.h");

CompactionEngine::CompactionEngine(sc_core::sc_module_name name, const EngineConfig& cfg)
    : sc_module(name), mmio("mmio"), mem("mem"), cfg_(cfg), clock_{cfg.clock_mhz} {
  mmio.register_b_transport(this, &CompactionEngine::b_transport_mmio);
  mmio.register_transport_dbg(this, &CompactionEngine::transport_dbg_mmio);
  SC_THREAD(job_thread);
}

// ------------------------------------------------------------------------------------------------
// MMIO
// ------------------------------------------------------------------------------------------------
void CompactionEngine::b_transport_mmio(tlm::tlm_generic_payload& p, sc_time& delay) {
  delay += clock_.cycles(cfg_.mmio_latency_cycles);
  serve_mmio(
      p, stats_, err_, [&](std::uint32_t off, std::uint32_t& v) { return reg_read(off, v); },
      [&](std::uint32_t off, std::uint32_t v) { return reg_write(off, v, sc_core::sc_time_stamp() + delay); });
}

unsigned CompactionEngine::transport_dbg_mmio(tlm::tlm_generic_payload& p) {
  // Debug reads only (no side effects); writes through the debug port are refused.
  return serve_mmio_debug(p, [&](std::uint32_t off, std::uint32_t& v) { return reg_read(off, v); });
}

MmioError CompactionEngine::reg_read(std::uint32_t off, std::uint32_t& v) const {
  if (off >= DESC_BASE && off < DESC_BASE + 4 * kDescWords) {
    v = staged_[(off - DESC_BASE) / 4];
    return MmioError::None;
  }
  const EngineJob* last = done_.empty() ? nullptr : &done_.back();
  switch (off) {
    case ID: v = kIdValue; return MmioError::None;
    case CTRL: v = ctrl_ & (1u << CTRL_ENABLE_BIT); return MmioError::None;
    case STATUS:
      v = (busy_ ? 1u << STATUS_BUSY_BIT : 0u) | (queue_.size() >= cfg_.queue_depth ? 1u << STATUS_QUEUE_FULL_BIT : 0u) |
          (queue_.empty() ? 1u << STATUS_QUEUE_EMPTY_BIT : 0u) | (err_.pending() ? 1u << STATUS_ERR_BIT : 0u) |
          (last && last->status != JobStatus::Ok ? 1u << STATUS_JOB_ERR_BIT : 0u) |
          (fetch_pending_ ? 1u << STATUS_FETCH_BUSY_BIT : 0u) |
          field_put(static_cast<std::uint32_t>(std::min<std::size_t>(queue_.size(), 255)), STATUS_QCOUNT_LSB,
                    STATUS_QCOUNT_WIDTH);
      return MmioError::None;
    case ERR_CODE: v = err_.err_code; return MmioError::None;
    case QUEUE_DEPTH: v = cfg_.queue_depth; return MmioError::None;
    case DONE_COUNT: v = done_count_; return MmioError::None;
    case LAST_TAG: v = last ? last->desc.tag : 0; return MmioError::None;
    case LAST_CYCLES: v = last ? static_cast<std::uint32_t>(std::min<std::uint64_t>(last->cycles, 0xFFFFFFFFu)) : 0; return MmioError::None;
    case LAST_OUT_BYTES: v = last ? static_cast<std::uint32_t>(last->payload_bytes) : 0; return MmioError::None;
    case LAST_STATUS: v = last ? static_cast<std::uint32_t>(last->status) : 0; return MmioError::None;
    case SUBMIT: v = 0; return MmioError::None;
    case DESC_PTR_LO: v = static_cast<std::uint32_t>(desc_ptr_); return MmioError::None;
    case DESC_PTR_HI: v = static_cast<std::uint32_t>(desc_ptr_ >> 32); return MmioError::None;
    case ENGINE_INDEX: v = engine_index_; return MmioError::None;
    case FETCH: v = 0; return MmioError::None;
    case COMPL_PTR_LO: v = static_cast<std::uint32_t>(compl_ptr_); return MmioError::None;
    case COMPL_PTR_HI: v = static_cast<std::uint32_t>(compl_ptr_ >> 32); return MmioError::None;
    default: return MmioError::Unmapped;
  }
}

MmioError CompactionEngine::submit_check(const Descriptor& d) const {
  if (!descriptor_valid(d)) return MmioError::BadValue;
  if (std::uint64_t(d.tile_rows) * d.tile_cols * elem_bytes(d.dtype) > cfg_.read_buffer_bytes) return MmioError::BadValue;
  if (d.src % elem_bytes(d.dtype) != 0) return MmioError::BadValue;  // lanes are element-aligned (RTL)
  if (std::uint64_t(d.rows) * d.row_pitch_bytes > cfg_.max_job_bytes) return MmioError::BadValue;
  if (queue_.size() >= cfg_.queue_depth) return MmioError::QueueFull;
  return MmioError::None;
}

void CompactionEngine::queue_job(const Descriptor& d, const sc_time& when) {
  EngineJob job;
  job.desc = d;
  job.submitted = when;
  queue_.push_back(job);
  for (auto& fn : observers_) fn(queue_.back(), false);
  work_ev_.notify(when > sc_core::sc_time_stamp() ? when - sc_core::sc_time_stamp() : SC_ZERO_TIME);
}

MmioError CompactionEngine::reg_write(std::uint32_t off, std::uint32_t v, const sc_time& when) {
  if (off >= DESC_BASE && off < DESC_BASE + 4 * kDescWords) {
    if (fetch_pending_) return MmioError::Busy;  // the fetch loads these registers
    staged_[(off - DESC_BASE) / 4] = v;
    return MmioError::None;
  }
  switch (off) {
    case ID:
    case STATUS:
    case QUEUE_DEPTH:
    case DONE_COUNT:
    case LAST_TAG:
    case LAST_CYCLES:
    case LAST_OUT_BYTES:
    case LAST_STATUS: return MmioError::ReadOnly;
    case CTRL:
      ctrl_ = v & (1u << CTRL_ENABLE_BIT);
      if (v & (1u << CTRL_CLEAR_DONE_BIT)) done_count_ = 0;
      if (ctrl_) work_ev_.notify(when > sc_core::sc_time_stamp() ? when - sc_core::sc_time_stamp() : SC_ZERO_TIME);
      return MmioError::None;
    case ERR_CODE: err_.clear(); return MmioError::None;
    case SUBMIT: {
      if (fetch_pending_) return MmioError::Busy;
      const Descriptor d = Descriptor::from_words(staged_);
      const MmioError e = submit_check(d);
      if (e == MmioError::None) queue_job(d, when);
      return e;
    }
    case DESC_PTR_LO: desc_ptr_ = (desc_ptr_ & ~std::uint64_t(0xFFFFFFFFu)) | v; return MmioError::None;
    case DESC_PTR_HI: desc_ptr_ = (desc_ptr_ & 0xFFFFFFFFu) | (std::uint64_t(v) << 32); return MmioError::None;
    case ENGINE_INDEX: engine_index_ = field_get(v, 0, ENGINE_INDEX_WIDTH); return MmioError::None;
    case COMPL_PTR_LO:
      if (v % kComplRecordBytes != 0) return MmioError::BadValue;
      compl_ptr_ = (compl_ptr_ & ~std::uint64_t(0xFFFFFFFFu)) | v;
      return MmioError::None;
    case COMPL_PTR_HI: compl_ptr_ = (compl_ptr_ & 0xFFFFFFFFu) | (std::uint64_t(v) << 32); return MmioError::None;
    case FETCH: {
      if (engine_index_ >= field_get(v, 0, FETCH_COUNT_WIDTH)) return MmioError::None;  // not addressed
      if (fetch_pending_) return MmioError::Busy;
      if (desc_ptr_ % kDescBytes != 0) return MmioError::BadValue;
      if (queue_.size() >= cfg_.queue_depth) return MmioError::QueueFull;
      fetch_pending_ = true;
      fetch_addr_ = desc_ptr_ + std::uint64_t(kDescBytes) * engine_index_;  // wraps at 2^64 as the RTL's adder
      fetch_when_ = when;
      work_ev_.notify(when > sc_core::sc_time_stamp() ? when - sc_core::sc_time_stamp() : SC_ZERO_TIME);
      return MmioError::None;
    }
    default: return MmioError::Unmapped;
  }
}

// ------------------------------------------------------------------------------------------------
// Job processing
// ------------------------------------------------------------------------------------------------
namespace {

/// Issues timed requests from one engine thread: `window` bounds the requests in flight, one request per
/// cycle at most, and the thread never runs more than a global quantum ahead of simulated time.
struct Port {
  tlm_utils::simple_initiator_socket<CompactionEngine>& sock;
  const UnitClock& clk;
  InflightWindow window;
  sc_time cursor;  ///< earliest issue time of the next request (one per cycle)
  /// Only the read port synchronises with the kernel: reads are issued in time order, while writes of
  /// tile k are issued (in program order) after the reads of tile k+1 that precede them in time.
  bool sync = true;
  /// A window slot is free again this long after its response (RTL: the response is registered, then
  /// counted, and the next read is loaded a cycle before it is accepted: 3 cycles for reads).
  sc_time slot_reuse = SC_ZERO_TIME;
  bool error = false;
  sc_time first_error_done = SC_ZERO_TIME;  ///< response time of the first request answered with an error

  /// `windowed` = false: the request does not take a window slot (the pipelined engine's count-table reads:
  /// the RTL's RD_OUTS bound counts tile lines only).
  sc_time issue(tlm::tlm_command cmd, std::uint64_t addr, std::uint8_t* data, std::uint32_t len, sc_time earliest,
                bool windowed = true) {
    sc_time t = windowed ? window.earliest_issue(std::max(earliest, cursor)) : std::max(earliest, cursor);
    const sc_time q = tlm_utils::tlm_quantumkeeper::get_global_quantum();
    const sc_time now = sc_core::sc_time_stamp();
    if (sync && q > SC_ZERO_TIME && t > now && t - now > q) sc_core::wait(t - now);
    tlm::tlm_generic_payload p;
    spartan::hw::prepare_payload(p, cmd, addr, data, len);
    sc_time d = t > sc_core::sc_time_stamp() ? t - sc_core::sc_time_stamp() : SC_ZERO_TIME;
    sock->b_transport(p, d);
    const sc_time done = sc_core::sc_time_stamp() + d;
    if (!p.is_response_ok() && !error) {
      error = true;
      first_error_done = done;
    }
    if (windowed) window.push(done + slot_reuse);
    cursor = t + clk.cycles(1);
    return done;
  }
};

struct PendingWrite {
  std::uint64_t addr;
  std::vector<std::uint8_t> data;
  sc_time ready;
  bool payload;
};

/// A byte stream written to memory in line-aligned writes as it grows.
struct StreamWriter {
  StreamWriter(std::uint64_t b, std::uint32_t l) : base(b), line(l) {}
  std::uint64_t base;         ///< absolute address of stream offset 0
  std::uint32_t line;
  std::uint64_t flushed = 0;  ///< stream offset up to which bytes have been written
  std::vector<std::uint8_t> pending;  ///< bytes from `flushed` on
  std::uint64_t bytes_written = 0;
  std::uint64_t writes_queued = 0;  ///< line writes queued (a stream not starting on a line takes one more)

  void append(const std::uint8_t* p, std::size_t n) { pending.insert(pending.end(), p, p + n); }
  void append_zeros(std::size_t n) { pending.insert(pending.end(), n, 0); }
  /// Queues every complete line (or everything if `all`) as writes whose ready times are spread evenly over
  /// (from, to] (the RTL's packer completes lines while the emit pass runs).
  void emit(std::deque<PendingWrite>& q, sc_time from, sc_time to, bool all) {
    std::size_t used = 0, lines = 0;
    {
      std::uint64_t f = flushed;
      std::size_t u = 0;
      while (u < pending.size()) {
        const std::uint64_t a = base + f;
        const std::uint64_t n = std::min<std::uint64_t>(line - a % line, pending.size() - u);
        if (!all && a % line + n < line) break;
        ++lines;
        f += n;
        u += n;
      }
    }
    std::size_t j = 0;
    while (used < pending.size()) {
      const std::uint64_t a = base + flushed;
      const std::uint64_t n = std::min<std::uint64_t>(line - a % line, pending.size() - used);
      if (!all && a % line + n < line) break;  // incomplete line: wait for more bytes
      ++j;
      const sc_time ready = to > from ? from + (to - from) * (double(j) / double(lines)) : to;
      q.push_back({a, std::vector<std::uint8_t>(pending.begin() + static_cast<std::ptrdiff_t>(used),
                                                pending.begin() + static_cast<std::ptrdiff_t>(used + n)),
                   ready, is_payload});
      bytes_written += n;
      ++writes_queued;
      flushed += n;
      used += n;
    }
    pending.erase(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(used));
  }
  bool is_payload = true;
};

/// Issues the queued writes that are ready at or before `until`, in order: requests reach the L2 in
/// time order (its busy-until reservations assume that), interleaved with the reads.
void drain(std::deque<PendingWrite>& q, Port& wr, sc_time until, std::vector<sc_time>& payload_issue) {
  while (!q.empty() && q.front().ready <= until) {
    PendingWrite& w = q.front();
    wr.issue(tlm::TLM_WRITE_COMMAND, w.addr, w.data.data(), static_cast<std::uint32_t>(w.data.size()), w.ready);
    if (w.payload) payload_issue.push_back(wr.cursor);
    q.pop_front();
  }
}

}  // namespace

void CompactionEngine::fetch_descriptor() {
  // RTL: the read is issued the cycle after the FETCH write is taken while no job runs (after the running job
  // otherwise), as one line read; the descriptor is loaded into DESC[] with the response and submitted one
  // cycle later (F_SUB), when SUBMIT's checks decide it. With L2 lines shorter than the 64-byte descriptor
  // (the RTL's are 128 B; a preset may have 16-32 B lines) the TLM reads its lines one per cycle.
  if (fetch_when_ > sc_core::sc_time_stamp()) sc_core::wait(fetch_when_ - sc_core::sc_time_stamp());
  const std::uint32_t line = cfg_.line_bytes;
  const std::uint32_t n = std::max<std::uint32_t>(line, kDescBytes);  // the line(s) holding it, from an n-aligned start
  const std::uint64_t base = fetch_addr_ & ~std::uint64_t(n - 1);
  std::vector<std::uint8_t> bytes(n);
  bool ok = true;
  sc_time done = SC_ZERO_TIME;
  const std::uint32_t piece = std::min<std::uint32_t>(line, n);
  for (std::uint32_t k = 0; k * piece < n; ++k) {
    tlm::tlm_generic_payload p;
    spartan::hw::prepare_payload(p, tlm::TLM_READ_COMMAND, base + k * piece, bytes.data() + k * piece, piece);
    sc_time d = clock_.cycles(1 + k);
    mem->b_transport(p, d);
    ok = ok && p.is_response_ok();
    done = std::max(done, d);
  }
  ++stats_.descriptor_fetches;
  sc_core::wait(done + clock_.cycles(1));
  fetch_pending_ = false;
  if (!ok) {
    ++stats_.descriptor_fetch_errors;
    err_.latch(MmioError::DescFetch, FETCH, true);
    return;
  }
  const std::size_t o = static_cast<std::size_t>(fetch_addr_ - base);
  for (unsigned i = 0; i < kDescWords; ++i) staged_[i] = mmio_load_u32(bytes.data() + o + 4 * i);
  const Descriptor desc = Descriptor::from_words(staged_);
  const MmioError e = submit_check(desc);
  if (e != MmioError::None) {
    ++stats_.descriptor_fetch_errors;
    err_.latch(e, FETCH, true);
    return;
  }
  queue_job(desc, sc_core::sc_time_stamp());
}

void CompactionEngine::job_thread() {
  for (;;) {
    while (!fetch_pending_ && (queue_.empty() || !(ctrl_ & (1u << CTRL_ENABLE_BIT)))) sc_core::wait(work_ev_);
    if (fetch_pending_) {  // before the next queued job, as the RTL
      fetch_descriptor();
      continue;
    }
    EngineJob job = queue_.front();
    queue_.pop_front();
    busy_ = true;
    if (job.submitted > sc_core::sc_time_stamp()) sc_core::wait(job.submitted - sc_core::sc_time_stamp());
    // the record's address as at the job's start (RTL: latched with the descriptor); wraps at 2^64 as the RTL's adder
    job.completion_addr = compl_ptr_ == 0 ? 0 : compl_ptr_ + std::uint64_t(kComplRecordBytes) * engine_index_;
    run_job(job);
    busy_ = false;
    ++done_count_;
    ++stats_.jobs;
    if (job.status != JobStatus::Ok) ++stats_.job_errors;
    done_.push_back(job);
    for (auto& fn : observers_) fn(done_.back(), true);
    job_done_ev_.notify(SC_ZERO_TIME);
  }
}

namespace {

/// Emit-pass cycles of the RTL for one compacted tile (docs/hw-units.md "Calibration from the RTL"): one
/// cycle per buffered line per pass (ELL: indices, values; BITMAP: bitmap, values), plus
/// ceil((q - 128) / 128) cycles when one step produces q > 128 bytes (packed bytes + ELL row padding +
/// end-of-pass padding), which the RTL's zero emitter sends 128 B per cycle while the walker waits.
/// `tile`: re x ce elements packed; `seg_off[r]`: byte offset of row r's segment in its first line.
std::uint64_t emit_cycles(const std::uint8_t* tile, std::uint32_t re, std::uint32_t ce, unsigned eb,
                          const std::vector<std::uint32_t>& seg_off, std::uint32_t line, bool bitmap,
                          std::uint64_t payload_bytes, std::uint64_t* lines_out) {
  auto nz = [&](std::uint32_t r, std::uint32_t c) {
    const std::uint8_t* p = tile + (std::size_t(r) * ce + c) * eb;
    if (eb == 4) return !fmt::is_zero_bits(mmio_load_u32(p));
    return !fmt::is_zero_bits(static_cast<std::uint16_t>(p[0] | (p[1] << 8)));
  };
  auto extra = [&](std::uint64_t q) { return q > line ? (q - line + line - 1) / line : 0; };
  std::vector<std::uint32_t> rn(re, 0), klast(re, 0), nl(re, 0);
  std::uint32_t width = 0;
  std::uint64_t lines = 0;
  for (std::uint32_t r = 0; r < re; ++r) {
    nl[r] = (seg_off[r] + ce * eb - 1) / line + 1;
    lines += nl[r];
    const std::uint32_t e0 = nl[r] > 1 ? ((nl[r] - 1) * line - seg_off[r]) / eb : 0;
    for (std::uint32_t c = 0; c < ce; ++c)
      if (nz(r, c)) {
        ++rn[r];
        klast[r] += c >= e0;
      }
    width = std::max(width, rn[r]);
  }
  const std::uint64_t pad16 = (fmt::kPayloadAlignBytes - payload_bytes % fmt::kPayloadAlignBytes) % fmt::kPayloadAlignBytes;
  const std::uint64_t pad4 = (4 - (std::uint64_t(re) * width) % 4) % 4;
  std::uint64_t cyc = 2 * lines;
  for (std::uint32_t r = 0; r < re; ++r) {
    const bool last = r + 1 == re;
    if (!bitmap) {
      cyc += extra(klast[r] + (width - rn[r]) + (last ? pad4 : 0));
      cyc += extra(std::uint64_t(klast[r] + width - rn[r]) * eb + (last ? pad16 : 0));
    } else {
      cyc += extra(std::uint64_t(klast[r]) * eb + (last ? pad16 : 0));
    }
  }
  if (lines_out) *lines_out = lines;
  return cyc;
}

}  // namespace

// Timing: the RTL's tile FSM (docs/hw-units.md "Calibration from the RTL"). From the job start:
// job_setup_cycles; per tile: a count-table line read when the tile's count is in another line (issue one
// cycle after the decision, decide again one cycle after the response); DENSE / zero tiles 2 cycles (decide,
// header); compacted tiles: decide, line reads one per cycle from 2 cycles after the decision (window of
// outstanding_reads), 3 cycles after the last response, the emit passes (emit_cycles), 1 cycle to advance.
// Payload lines are written while the emit pass runs, headers as they complete; the job ends
// job_tail_cycles after the last write's response.
// tile_buffers >= 2 (the pipelined RTL): two timelines. The prefetcher P decides tile k at
// d_k >= max(P's next cycle, the emitter's pop of decision k - decision_queue_depth + 1) and, if compacted,
// also >= the cycle the previous tile's last read is issued and the release of the buffer held by the
// compacted tile tile_buffers before; its reads start at d_k + 2. P's count-table reads (no window slot)
// start one cycle after P is free and the issuer idle; their response comes after every earlier tile line.
// The emitter M decides tile k at m_k >= max(M's next cycle, d_k + 1); a compacted tile's emit passes start
// 3 cycles after max(m_k, its last line's response), its buffer is released when the header is issued.
// An aborted job (OutOverflow, or a bus error seen at a compacted tile) enters the RTL's S_FIN at F = 3 cycles
// after max(m_k, last response) of the tile it stopped at; with tile_buffers >= 2 P goes on with the tiles after
// it under the same rule until then (decisions up to F - 1, count-table reads at the pins up to F, tile lines up
// to F + 1; the stopped tile's buffer and the queue entries and buffers of the tiles decided after it are never
// freed: M popped the stopped tile's decision), and the job
// ends job_tail_cycles after the last write response or the last response of every read issued.
void CompactionEngine::run_job(EngineJob& job) {
  const Descriptor& d = job.desc;
  const unsigned eb = elem_bytes(d.dtype);
  const std::uint32_t line = cfg_.line_bytes;
  const bool pipe = cfg_.tile_buffers >= 2;
  job.started = sc_core::sc_time_stamp();
  const sc_time t0 = job.started + clock_.cycles(cfg_.job_setup_cycles);
  Port rd{mem, clock_, InflightWindow(cfg_.outstanding_reads), t0, true};
  Port wr{mem, clock_, InflightWindow(cfg_.outstanding_writes), t0, false};
  const sc_time cyc = clock_.cycles(1);
  rd.slot_reuse = 3 * cyc;

  const fmt::TileGrid grid{d.rows, d.cols, d.tile_rows, d.tile_cols};
  const std::uint64_t tiles = grid.num_tiles();
  // Count table (regmap::count_table_entry: rows CT_PITCH entries apart); its reads are clamped to
  // [count_table, ct_end), the entries from the first tile's to the last one's (with a pitch, those of other
  // jobs' tiles in between are read with a line and not used, as by the RTL).
  const std::uint64_t ct_end = d.count_table + 4 * count_table_span_entries(d);

  fmt::CompactOptions opt;
  opt.tile_rows = d.tile_rows;
  opt.tile_cols = d.tile_cols;
  opt.threshold = 2.0;  // the engine decides DENSE itself (from the counts and SIZE_RULE); compact() only packs
  opt.dense_if_not_smaller = false;
  opt.sparse_format = static_cast<fmt::TileFormat>(d.format);
  opt.elem = static_cast<fmt::ElemType>(d.dtype);

  StreamWriter payload(d.out_base, line);
  StreamWriter headers(d.header_base, line);
  headers.is_payload = false;
  std::deque<PendingWrite> wq;
  std::vector<sc_time> payload_issue;
  std::uint64_t payload_off = 0;
  sc_time cur = t0;    // the tile FSM's time (sequential: start of the next decision; pipelined: the emitter's)
  sc_time pcur = t0;   // pipelined: the prefetcher's next decision
  sc_time iss_idle = t0, last_resp = SC_ZERO_TIME;  // pipelined: read issuer idle from; latest response so far
  std::deque<sc_time> m_dec;       // pipelined: the emitter's decisions (queue pops) of the last tiles
  std::deque<sc_time> buf_free;    // pipelined: release of the tile buffers of the last compacted tiles
  std::vector<std::uint8_t> tile_buf, ct_line(line);
  std::uint64_t ct_cached = ~0ull;
  std::vector<std::uint32_t> seg_off;
  std::uint64_t abort_tile = ~0ull;  // the tile an OutOverflow or a tile's bus error stopped the job at

  for (std::uint32_t ti = 0; ti < grid.tiles_r() && job.status == JobStatus::Ok && !rd.error; ++ti)
    for (std::uint32_t tj = 0; tj < grid.tiles_c(); ++tj) {
      const std::uint64_t t = std::uint64_t(ti) * grid.tiles_c() + tj;
      sc_time& dcur = pipe ? pcur : cur;  // who reads the count table and decides
      // Count word of tile t, through the one-line count-table cache.
      const std::uint64_t ca = count_table_entry(d, ti, tj), cl = ca / line * line;
      if (cl != ct_cached) {
        const std::uint64_t a = std::max<std::uint64_t>(cl, d.count_table);
        const std::uint64_t e = std::min<std::uint64_t>(cl + line, ct_end);
        if (pipe) dcur = std::max(dcur, iss_idle);
        drain(wq, wr, dcur + cyc, payload_issue);
        sc_time done = rd.issue(tlm::TLM_READ_COMMAND, a, ct_line.data() + (a - cl), static_cast<std::uint32_t>(e - a),
                                dcur + cyc, !pipe);
        if (pipe) last_resp = done = std::max(done, last_resp);  // responses in request order
        stats_.table_bytes_read += e - a;
        ct_cached = cl;
        dcur = done + cyc;
        if (rd.error) {
          // Pipelined: P latches the failed response (p_err, PS_CRD) and M, in S_TILE at this tile with no
          // decision, moves to S_FIN once it sees p_err (rtl/src/compaction_engine.v, S_TILE): FIN from
          // max(M's arrival + 1, response + 2). `cur` is M's and may lie well before the response (the
          // emitter idle, waiting for P); until the review of 2026-12-07 the packers were flushed from `cur`, a
          // write round trip before the RTL (a probe of 3 360 runs: up to 45 cycles, 28.6 %). Sequential: cur
          // is dcur = response + 1 already.
          if (pipe) cur = std::max(cur + cyc, done + 2 * cyc);
          break;
        }
      }
      const std::uint32_t count = mmio_load_u32(ct_line.data() + (ca - cl));
      const std::uint32_t re = grid.r_eff(ti), ce = grid.c_eff(tj);
      const std::uint64_t elems = std::uint64_t(re) * ce;
      const std::uint64_t est = std::uint64_t(count) << d.sample_shift;
      const bool is_dense = tile_is_dense(est, elems, d.threshold_q16);
      const bool is_zero = !is_dense && d.sample_shift == 0 && count == 0;
      // The decision (sequential: also the tile FSM's), and in the pipelined engine the emitter's.
      sc_time dec = dcur;
      if (pipe) {
        if (m_dec.size() >= cfg_.decision_queue_depth) {  // queue full until the emitter pops tile t - depth
          dec = std::max(dec, m_dec.front() + cyc);
          m_dec.pop_front();
        }
        if (!is_dense && !is_zero) {
          dec = std::max(dec, iss_idle);
          if (buf_free.size() >= cfg_.tile_buffers) {
            if (buf_free.front() > dec) stats_.buffer_stall_ps += (buf_free.front() - dec).value();
            dec = std::max(dec, buf_free.front());
            buf_free.pop_front();
          }
        }
        pcur = dec + cyc;
        cur = std::max(cur, dec + cyc);
        m_dec.push_back(cur);
      }
      fmt::TileHeader h;
      std::vector<std::uint8_t> bytes;
      sc_time from = cur, ready;
      ++stats_.tiles;
      if (is_dense || is_zero) {
        if (is_dense) {
          h.format = static_cast<std::uint8_t>(fmt::TileFormat::Dense);
          // clamped to the tile's elements for s = 0 too: the monitor counts a rewritten element again, and a
          // header with nnz > elements fails format::validate (reliability finding 75)
          h.nnz = d.sample_shift == 0 ? static_cast<std::uint32_t>(std::min<std::uint64_t>(count, elems))
                                      : static_cast<std::uint32_t>(std::clamp<std::uint64_t>(est, 1, elems));
          ++job.tiles_dense;
          ++stats_.tiles_dense;
        } else {
          h.format = static_cast<std::uint8_t>(d.format);
          ++job.tiles_zero;
          ++stats_.tiles_zero;
        }
        ready = cur + cyc;
        cur += 2 * cyc;
      } else {
        // Fetch the tile into a tile buffer (row segments split at line boundaries), one read per cycle.
        const std::uint64_t row_n = std::uint64_t(ce) * eb;
        tile_buf.assign(elems * eb, 0);
        seg_off.assign(re, 0);
        sc_time data_ready = dec + 2 * cyc;
        for (std::uint32_t r = 0; r < re; ++r) {
          const std::uint64_t row_a = d.src + std::uint64_t(grid.row0(ti) + r) * d.row_pitch_bytes +
                                      std::uint64_t(grid.col0(tj)) * eb;
          seg_off[r] = static_cast<std::uint32_t>(row_a % line);
          std::uint64_t o = 0;
          while (o < row_n) {
            const std::uint64_t a = row_a + o;
            const std::uint64_t n = std::min<std::uint64_t>(line - a % line, row_n - o);
            drain(wq, wr, std::max(dec + 2 * cyc, rd.cursor), payload_issue);
            const sc_time done = rd.issue(tlm::TLM_READ_COMMAND, a, tile_buf.data() + r * row_n + o,
                                          static_cast<std::uint32_t>(n), dec + 2 * cyc);
            data_ready = std::max(data_ready, done);
            ++stats_.reads;
            stats_.bytes_read += n;
            o += n;
          }
        }
        if (pipe) {
          iss_idle = rd.cursor - cyc;                      // the cycle its last read is issued
          data_ready = std::max(data_ready, last_resp);    // counted in request order
          last_resp = data_ready;
        }
        // A bus error ends the job at this tile, before its header (RTL: S_FETCH latches a read error of the
        // tile's lines, and S_CNTD, 2 cycles after the tile is counted, ends the job on any error latched so
        // far, a write response's included; DENSE and zero tiles do not look). The write error is seen here
        // once the write has been issued, i.e. up to the model's write-issue lag later than in the RTL.
        const sc_time cntd = (pipe ? std::max(data_ready, cur) : data_ready) + 2 * cyc;
        if (rd.error || (wr.error && wr.first_error_done + cyc <= cntd)) {
          job.status = JobStatus::BusError;
          cur = cntd + cyc;
          abort_tile = t;
          break;
        }
        // Pack with the format's own definition (one tile: grid = the clipped tile, tile size = TR x TC).
        const fmt::TiledMatrix one = fmt::compact(tile_buf.data(), re, ce, ce, opt);
        h = one.headers[0];
        const std::size_t n = fmt::tile_payload_bytes(h, re, ce, d.tile_cols, opt.elem);
        // SIZE_RULE: a tile its sparse format would not make smaller is written DENSE (in place) after all
        const bool not_smaller =
            d.size_rule && fmt::sparse_not_smaller(opt.sparse_format, re, ce, h.width, h.nnz, d.tile_cols, opt.elem);
        if (not_smaller) {
          const std::uint32_t nnz = h.nnz;
          h = fmt::TileHeader{};
          h.format = static_cast<std::uint8_t>(fmt::TileFormat::Dense);
          h.nnz = nnz;
          ++job.tiles_dense_by_size;
          ++stats_.tiles_dense_by_size;
        } else {
          bytes.assign(one.payload.begin(), one.payload.begin() + static_cast<std::ptrdiff_t>(n));
        }
        // the counting side takes each response one cycle after it arrives; 2 cycles later the first emit step
        // (pipelined: the emitter has decided the tile and waited for its buffer to be counted)
        const sc_time base = pipe ? std::max(data_ready, cur) : data_ready;
        const sc_time pass0 = base + 3 * cyc;
        if (h.nnz == 0 || not_smaller) {  // no non-zero (sampled estimate) or SIZE_RULE: header only
          from = base + 2 * cyc;
          ready = base + 3 * cyc;
          cur = base + 4 * cyc;
          if (pipe) buf_free.push_back(ready);
        } else {
          const std::uint64_t ec = emit_cycles(tile_buf.data(), re, ce, eb, seg_off, line,
                                               d.format == kFormatBitmap, n, nullptr);
          stats_.compactor_busy_ps += (cyc * double(ec)).value();
          from = pass0;
          ready = pass0 + cyc * double(ec);
          cur = ready + cyc;
          if (pipe) buf_free.push_back(ready);
        }
        ++job.tiles_compacted;
        ++stats_.tiles_compacted;
      }
      // Place the payload at the next 16-byte aligned offset (tile_format.h: kPayloadAlignBytes).
      const std::uint64_t aligned = fmt::align_up(payload_off, fmt::kPayloadAlignBytes);
      h.offset = aligned;
      if (aligned + bytes.size() > d.out_capacity_bytes) {
        job.status = JobStatus::OutOverflow;
        cur = from;
        abort_tile = t;
        break;
      }
      payload.append_zeros(aligned - payload_off);
      payload.append(bytes.data(), bytes.size());
      // The zero tail up to the next 16-byte offset belongs to this tile's emit (RTL: the last step of the values
      // pass carries it, q_end), not to the next tile's: a line it completes is written now. Until 2026-12-07 it
      // was appended with the next tile, so after an OutOverflow at that tile the line waited for the final
      // flush (a write round trip later than the RTL: tile_buffers 1, -6.6 % on a 170-cycle job).
      payload_off = fmt::align_up(aligned + bytes.size(), fmt::kPayloadAlignBytes);
      payload.append_zeros(payload_off - (aligned + bytes.size()));
      std::uint8_t hb[fmt::kHeaderBytes];
      fmt::encode_header(h, hb);
      headers.append(hb, sizeof hb);
      // a chunk / header produced in cycle x is taken by its packer in x+1 and written in x+2
      payload.emit(wq, from + 2 * cyc, ready + 2 * cyc, false);
      headers.emit(wq, ready + cyc, ready + cyc, false);
      ++job.headers_written;
    }
  // Pipelined abort (OutOverflow, or a bus error seen at a compacted tile): the RTL's emitter enters S_FIN at
  // `cur`, but its prefetcher has gone on deciding the tiles after the one the job stopped at, and its read
  // issuer fetching them, until then; the job ends only once every read issued has been answered. The
  // prefetcher's walk is continued here with the same rule as above, up to the cycle S_FIN stops it
  // (rtl/src/compaction_engine.v: p_fire needs st != S_FIN, so P decides up to cur - 1; the issuer's iss_more
  // is cleared in the first S_FIN cycle, so lines are still issued up to it, i.e. at the pins up to cur + 1; a
  // count-table read is started by P up to cur - 1, at the pins up to cur). The tile it stopped at holds its
  // tile buffer for good (M popped its decision, so m_dec keeps its pop time); the tiles decided after it hold
  // their decision-queue entry and tile buffer for good. These reads move no output bytes and do not change the status (a read error among them is not
  // looked at by the RTL's S_FIN); their responses only delay the job end (`last_resp`).
  if (pipe && abort_tile != ~0ull) {
    const sc_time fin = cur;
    const sc_time never = sc_time::from_value(~0ull >> 1);
    const bool rd_error0 = rd.error;
    if (!buf_free.empty() && job.status == JobStatus::OutOverflow) buf_free.pop_back();  // its release never comes
    buf_free.push_back(never);
    std::vector<std::uint8_t> scratch(line);
    for (std::uint64_t t = abort_tile + 1; t < tiles; ++t) {
      const std::uint32_t ti = static_cast<std::uint32_t>(t / grid.tiles_c()), tj = static_cast<std::uint32_t>(t % grid.tiles_c());
      const std::uint64_t ca = count_table_entry(d, ti, tj), cl = ca / line * line;
      if (cl != ct_cached) {
        const sc_time dcur = std::max(pcur, iss_idle);
        if (dcur + cyc > fin) break;  // P's count-table read: started up to fin - 1
        const std::uint64_t a = std::max<std::uint64_t>(cl, d.count_table);
        const std::uint64_t e = std::min<std::uint64_t>(cl + line, ct_end);
        drain(wq, wr, dcur + cyc, payload_issue);
        const bool err_before = rd.error;
        rd.error = false;
        const sc_time done = std::max(
            rd.issue(tlm::TLM_READ_COMMAND, a, ct_line.data() + (a - cl), static_cast<std::uint32_t>(e - a), dcur + cyc, false),
            last_resp);
        const bool ct_failed = rd.error;
        rd.error = err_before;
        last_resp = done;
        stats_.table_bytes_read += e - a;
        ct_cached = cl;
        pcur = done + cyc;
        if (ct_failed) break;  // p_err: P stops
      }
      const std::uint32_t count = mmio_load_u32(ct_line.data() + (ca - cl));
      const std::uint32_t re = grid.r_eff(ti), ce = grid.c_eff(tj);
      const std::uint64_t est = std::uint64_t(count) << d.sample_shift;
      const bool is_dense = tile_is_dense(est, std::uint64_t(re) * ce, d.threshold_q16);
      const bool compacted = !is_dense && !(d.sample_shift == 0 && count == 0);
      sc_time dec = pcur;
      if (m_dec.size() >= cfg_.decision_queue_depth) {
        if (m_dec.front() == never) break;  // the queue is full of decisions the emitter never pops
        dec = std::max(dec, m_dec.front() + cyc);
        m_dec.pop_front();
      }
      if (compacted) {
        dec = std::max(dec, iss_idle);
        if (buf_free.size() >= cfg_.tile_buffers) {
          if (buf_free.front() == never) break;  // no tile buffer is released any more
          dec = std::max(dec, buf_free.front());
          buf_free.pop_front();
        }
      }
      if (dec + cyc > fin) break;  // P decides up to fin - 1
      pcur = dec + cyc;
      m_dec.push_back(never);
      if (!compacted) continue;
      buf_free.push_back(never);
      bool cut = false;
      const std::uint64_t row_n = std::uint64_t(ce) * eb;
      for (std::uint32_t r = 0; r < re && !cut; ++r) {
        const std::uint64_t row_a =
            d.src + std::uint64_t(grid.row0(ti) + r) * d.row_pitch_bytes + std::uint64_t(grid.col0(tj)) * eb;
        for (std::uint64_t o = 0; o < row_n;) {
          const std::uint64_t a = row_a + o;
          const std::uint64_t n = std::min<std::uint64_t>(line - a % line, row_n - o);
          if (rd.window.earliest_issue(std::max(dec + 2 * cyc, rd.cursor)) > fin + cyc) {
            cut = true;  // the issuer stops in the first S_FIN cycle
            break;
          }
          drain(wq, wr, std::max(dec + 2 * cyc, rd.cursor), payload_issue);
          last_resp = std::max(last_resp, rd.issue(tlm::TLM_READ_COMMAND, a, scratch.data(), static_cast<std::uint32_t>(n),
                                                   dec + 2 * cyc));
          ++stats_.reads;
          stats_.bytes_read += n;
          o += n;
        }
      }
      iss_idle = rd.cursor - cyc;
      if (cut) break;
    }
    rd.error = rd_error0;
  }
  // End of job: the packers flush their open lines 2 cycles after the FSM ends.
  const sc_time flush_at = cur + 2 * cyc;
  {
    // After an OutOverflow or a bus error too: the packers write their open lines and LAST_OUT_BYTES counts
    // the payload of the tiles before the one the job stopped at, as the RTL (S_FIN flushes; LAST_OUT_BYTES
    // = the output offset). It was 0 here after an overflow (a lockstep mismatch found when overflow jobs
    // were added to the test) and after a bus error (reliability finding 75). The offset never exceeds
    // OUT_CAPACITY: every payload was checked against it and the capacity is a multiple of 16 (SUBMIT).
    const std::uint64_t total = fmt::align_up(payload_off, fmt::kPayloadAlignBytes);
    payload.append_zeros(total - payload_off);
    headers.emit(wq, flush_at, flush_at, true);
    payload.emit(wq, flush_at, flush_at, true);
    job.payload_bytes = total;
  }
  drain(wq, wr, sc_time::from_value(~0ull >> 1), payload_issue);
  if (rd.error || wr.error) job.status = JobStatus::BusError;
  stats_.writes += payload_issue.size() + headers.writes_queued;  // every queued write was drained above
  stats_.payload_bytes_written += payload.bytes_written;
  stats_.header_bytes_written += headers.bytes_written;
  // (sequential: every read has completed by `cur`; pipelined: the job also waits for reads fetched ahead)
  const sc_time end = std::max({wr.window.last_done(), cur, t0, last_resp}) + clock_.cycles(cfg_.job_tail_cycles);
  job.cycles = clock_.whole_cycles(end - job.started);
  // RTL: S_FIN hands over to S_CREC in the cycle `end` stands for (S_DONE without a record); S_DONE follows the
  // record's write response by one cycle.
  const sc_time fin = job.completion_addr ? write_completion_record(job, end) + clock_.cycles(1) : end;
  if (fin > sc_core::sc_time_stamp()) sc_core::wait(fin - sc_core::sc_time_stamp());
  job.finished = sc_core::sc_time_stamp();
  stats_.busy_ps += (job.finished - job.started).value();
}

sc_time CompactionEngine::write_completion_record(EngineJob& job, const sc_time& at) {
  std::uint8_t rec[kComplRecordBytes] = {};  // the reserved words 0
  mmio_store_u32(rec + 4 * C_TAG, job.desc.tag);
  mmio_store_u32(rec + 4 * C_STATUS, static_cast<std::uint32_t>(job.status));
  mmio_store_u32(rec + 4 * C_OUT_BYTES, static_cast<std::uint32_t>(job.payload_bytes));
  mmio_store_u32(rec + 4 * C_CYCLES, static_cast<std::uint32_t>(std::min<std::uint64_t>(job.cycles, 0xFFFFFFFFu)));
  // issued in simulated time (the job's other writes may run ahead of it), and its error latched when answered
  if (at > sc_core::sc_time_stamp()) sc_core::wait(at - sc_core::sc_time_stamp());
  tlm::tlm_generic_payload p;
  spartan::hw::prepare_payload(p, tlm::TLM_WRITE_COMMAND, job.completion_addr, rec, kComplRecordBytes);
  sc_time d = SC_ZERO_TIME;
  mem->b_transport(p, d);
  sc_core::wait(d);
  ++stats_.completion_records;
  ++stats_.writes;
  if (!p.is_response_ok()) {
    job.completion_error = true;
    ++stats_.completion_record_errors;
    err_.latch(MmioError::ComplWrite, COMPL_PTR_LO, true);
  }
  return sc_core::sc_time_stamp();
}

}  // namespace spartan::hw
