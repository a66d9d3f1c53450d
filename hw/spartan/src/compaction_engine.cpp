#include "spartan/hw/compaction_engine.h"

#include <algorithm>
#include <cstring>

#include <tlm_utils/tlm_quantumkeeper.h>

#include "spartan/format/tile_format.h"

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
    default: return MmioError::Unmapped;
  }
}

MmioError CompactionEngine::reg_write(std::uint32_t off, std::uint32_t v, const sc_time& when) {
  if (off >= DESC_BASE && off < DESC_BASE + 4 * kDescWords) {
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
      const Descriptor d = Descriptor::from_words(staged_);
      if (!descriptor_valid(d)) return MmioError::BadValue;
      if (std::uint64_t(d.tile_rows) * d.tile_cols * elem_bytes(d.dtype) > cfg_.read_buffer_bytes)
        return MmioError::BadValue;
      if (queue_.size() >= cfg_.queue_depth) return MmioError::QueueFull;
      EngineJob job;
      job.desc = d;
      job.submitted = when;
      queue_.push_back(job);
      for (auto& fn : observers_) fn(queue_.back(), false);
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
  bool error = false;

  sc_time issue(tlm::tlm_command cmd, std::uint64_t addr, std::uint8_t* data, std::uint32_t len, sc_time earliest) {
    sc_time t = window.earliest_issue(std::max(earliest, cursor));
    const sc_time q = tlm_utils::tlm_quantumkeeper::get_global_quantum();
    const sc_time now = sc_core::sc_time_stamp();
    if (sync && q > SC_ZERO_TIME && t > now && t - now > q) sc_core::wait(t - now);
    tlm::tlm_generic_payload p;
    p.set_command(cmd);
    p.set_address(addr);
    p.set_data_ptr(data);
    p.set_data_length(len);
    p.set_streaming_width(len);
    p.set_byte_enable_ptr(nullptr);
    p.set_dmi_allowed(false);
    p.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    sc_time d = t > sc_core::sc_time_stamp() ? t - sc_core::sc_time_stamp() : SC_ZERO_TIME;
    sock->b_transport(p, d);
    if (!p.is_response_ok()) error = true;
    const sc_time done = sc_core::sc_time_stamp() + d;
    window.push(done);
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

  void append(const std::uint8_t* p, std::size_t n) { pending.insert(pending.end(), p, p + n); }
  void append_zeros(std::size_t n) { pending.insert(pending.end(), n, 0); }
  /// Queues every complete line (or everything if `all`) as a write ready at `ready`.
  void emit(std::deque<PendingWrite>& q, sc_time ready, bool all) {
    std::size_t used = 0;
    while (used < pending.size()) {
      const std::uint64_t a = base + flushed;
      const std::uint64_t n = std::min<std::uint64_t>(line - a % line, pending.size() - used);
      if (!all && a % line + n < line) break;  // incomplete line: wait for more bytes
      q.push_back({a, std::vector<std::uint8_t>(pending.begin() + static_cast<std::ptrdiff_t>(used),
                                                pending.begin() + static_cast<std::ptrdiff_t>(used + n)),
                   ready, is_payload});
      bytes_written += n;
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

void CompactionEngine::job_thread() {
  for (;;) {
    while (queue_.empty() || !(ctrl_ & (1u << CTRL_ENABLE_BIT))) sc_core::wait(work_ev_);
    EngineJob job = queue_.front();
    queue_.pop_front();
    busy_ = true;
    if (job.submitted > sc_core::sc_time_stamp()) sc_core::wait(job.submitted - sc_core::sc_time_stamp());
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

void CompactionEngine::run_job(EngineJob& job) {
  const Descriptor& d = job.desc;
  const unsigned eb = elem_bytes(d.dtype);
  const std::uint32_t line = cfg_.line_bytes;
  job.started = sc_core::sc_time_stamp();
  const sc_time t0 = job.started + clock_.cycles(cfg_.job_setup_cycles);
  Port rd{mem, clock_, InflightWindow(cfg_.outstanding_reads), t0, true};
  Port wr{mem, clock_, InflightWindow(cfg_.outstanding_writes), t0, false};

  const fmt::TileGrid grid{d.rows, d.cols, d.tile_rows, d.tile_cols};
  const std::uint64_t tiles = grid.num_tiles();
  // 1. Count table, in line-sized reads; tile t may be decided when its count has arrived.
  std::vector<std::uint32_t> counts(tiles, 0);
  std::vector<sc_time> count_ready(tiles, t0);
  {
    std::vector<std::uint8_t> buf(tiles * 4);
    std::uint64_t off = 0;
    while (off < buf.size()) {
      const std::uint64_t a = d.count_table + off;
      const std::uint64_t n = std::min<std::uint64_t>(line - a % line, buf.size() - off);
      const sc_time done = rd.issue(tlm::TLM_READ_COMMAND, a, buf.data() + off, static_cast<std::uint32_t>(n), t0);
      for (std::uint64_t b = off; b < off + n; b += 4) count_ready[b / 4] = done;
      stats_.table_bytes_read += n;
      off += n;
    }
    for (std::uint64_t t = 0; t < tiles; ++t) counts[t] = mmio_load_u32(buf.data() + 4 * t);
  }

  fmt::CompactOptions opt;
  opt.tile_rows = d.tile_rows;
  opt.tile_cols = d.tile_cols;
  opt.threshold = 2.0;  // the engine decides DENSE itself (from the counts); compact() only packs
  opt.sparse_format = static_cast<fmt::TileFormat>(d.format);
  opt.elem = static_cast<fmt::ElemType>(d.dtype);

  StreamWriter payload(d.out_base, line);
  StreamWriter headers(d.header_base, line);
  headers.is_payload = false;
  std::deque<PendingWrite> wq;
  std::vector<sc_time> payload_issue;
  std::uint64_t payload_off = 0;
  sc_time compactor_free = t0, last_ready = t0;
  std::deque<std::pair<sc_time, std::uint64_t>> in_buffer;  // (release time, bytes) of buffered tiles
  std::uint64_t buffered = 0;
  const std::size_t wb_lines = std::max<std::uint32_t>(1, cfg_.write_buffer_bytes / line);
  std::vector<std::uint8_t> tile_buf;

  for (std::uint32_t ti = 0; ti < grid.tiles_r() && job.status == JobStatus::Ok; ++ti)
    for (std::uint32_t tj = 0; tj < grid.tiles_c(); ++tj) {
      const std::uint64_t t = std::uint64_t(ti) * grid.tiles_c() + tj;
      const std::uint32_t re = grid.r_eff(ti), ce = grid.c_eff(tj);
      const std::uint64_t elems = std::uint64_t(re) * ce;
      const std::uint64_t est = std::uint64_t(counts[t]) << d.sample_shift;
      const sc_time decided = count_ready[t] + clock_.cycles(1);
      fmt::TileHeader h;
      std::vector<std::uint8_t> bytes;
      sc_time ready = decided;
      ++stats_.tiles;
      if (tile_is_dense(est, elems, d.threshold_q16)) {
        h.format = static_cast<std::uint8_t>(fmt::TileFormat::Dense);
        h.nnz = d.sample_shift == 0 ? counts[t]
                                    : static_cast<std::uint32_t>(std::clamp<std::uint64_t>(est, 1, elems));
        ++job.tiles_dense;
        ++stats_.tiles_dense;
      } else if (d.sample_shift == 0 && counts[t] == 0) {
        h.format = static_cast<std::uint8_t>(d.format);
        ++job.tiles_zero;
        ++stats_.tiles_zero;
      } else {
        // Read the tile (row segments split at line boundaries) once the read buffer has room.
        const std::uint64_t tile_bytes = elems * eb;
        sc_time floor = decided;
        while (buffered + tile_bytes > cfg_.read_buffer_bytes && !in_buffer.empty()) {
          floor = std::max(floor, in_buffer.front().first);
          buffered -= in_buffer.front().second;
          in_buffer.pop_front();
        }
        if (floor > std::max(decided, rd.cursor)) stats_.buffer_stall_ps += (floor - std::max(decided, rd.cursor)).value();
        tile_buf.assign(tile_bytes, 0);
        sc_time data_ready = floor;
        for (std::uint32_t r = 0; r < re; ++r) {
          const std::uint64_t row_a = d.src + std::uint64_t(grid.row0(ti) + r) * d.row_pitch_bytes +
                                      std::uint64_t(grid.col0(tj)) * eb;
          std::uint64_t o = 0;
          const std::uint64_t row_n = std::uint64_t(ce) * eb;
          while (o < row_n) {
            const std::uint64_t a = row_a + o;
            const std::uint64_t n = std::min<std::uint64_t>(line - a % line, row_n - o);
            drain(wq, wr, std::max(floor, rd.cursor), payload_issue);
            const sc_time done = rd.issue(tlm::TLM_READ_COMMAND, a, tile_buf.data() + r * row_n + o,
                                          static_cast<std::uint32_t>(n), floor);
            data_ready = std::max(data_ready, done);
            ++stats_.reads;
            stats_.bytes_read += n;
            o += n;
          }
        }
        const sc_time cstart = std::max(data_ready, compactor_free);
        const sc_time cend = cstart + clock_.cycles(double((elems + cfg_.elements_per_cycle - 1) / cfg_.elements_per_cycle));
        stats_.compactor_busy_ps += (cend - cstart).value();
        compactor_free = cend;
        in_buffer.emplace_back(cend, tile_bytes);
        buffered += tile_bytes;
        // Pack with the format's own definition (one tile: grid = the clipped tile, tile size = TR x TC).
        const fmt::TiledMatrix one = fmt::compact(tile_buf.data(), re, ce, ce, opt);
        h = one.headers[0];
        const std::size_t n = fmt::tile_payload_bytes(h, re, ce, d.tile_cols, opt.elem);
        bytes.assign(one.payload.begin(), one.payload.begin() + static_cast<std::ptrdiff_t>(n));
        ready = cend;
        ++job.tiles_compacted;
        ++stats_.tiles_compacted;
      }
      // Place the payload at the next 16-byte aligned offset (tile_format.h: kPayloadAlignBytes).
      const std::uint64_t aligned = fmt::align_up(payload_off, fmt::kPayloadAlignBytes);
      h.offset = aligned;
      if (aligned + bytes.size() > d.out_capacity_bytes) {
        job.status = JobStatus::OutOverflow;
        break;
      }
      payload.append_zeros(aligned - payload_off);
      payload.append(bytes.data(), bytes.size());
      payload_off = aligned + bytes.size();
      std::uint8_t hb[fmt::kHeaderBytes];
      fmt::encode_header(h, hb);
      headers.append(hb, sizeof hb);
      payload.emit(wq, ready, false);
      headers.emit(wq, ready, false);
      // Write buffer: the compactor may not run more than wb_lines writes ahead of the write port.
      if (payload_issue.size() > wb_lines)
        compactor_free = std::max(compactor_free, payload_issue[payload_issue.size() - 1 - wb_lines]);
      last_ready = std::max(last_ready, ready);
    }
  if (job.status == JobStatus::Ok) {
    const std::uint64_t total = fmt::align_up(payload_off, fmt::kPayloadAlignBytes);
    if (total > d.out_capacity_bytes) {
      job.status = JobStatus::OutOverflow;
    } else {
      payload.append_zeros(total - payload_off);
      payload.emit(wq, last_ready, true);
      headers.emit(wq, last_ready, true);
      job.payload_bytes = total;
    }
  }
  drain(wq, wr, sc_time::from_value(~0ull >> 1), payload_issue);
  if (rd.error || wr.error) job.status = JobStatus::BusError;
  stats_.writes += payload_issue.size() + (headers.bytes_written + line - 1) / line;
  stats_.payload_bytes_written += payload.bytes_written;
  stats_.header_bytes_written += headers.bytes_written;
  const sc_time end = std::max({rd.window.last_done(), wr.window.last_done(), compactor_free, last_ready, t0});
  if (end > sc_core::sc_time_stamp()) sc_core::wait(end - sc_core::sc_time_stamp());
  job.finished = sc_core::sc_time_stamp();
  job.cycles = clock_.whole_cycles(job.finished - job.started);
  stats_.busy_ps += (job.finished - job.started).value();
}

}  // namespace spartan::hw
