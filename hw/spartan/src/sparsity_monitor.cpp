#include "spartan/hw/sparsity_monitor.h"
#include "spartan/hw/payload.h"

#include <algorithm>
#include <cstring>
#include <set>

#include <tlm_utils/tlm_quantumkeeper.h>

namespace spartan::hw {

using namespace regmap;
using namespace regmap::monitor;
using sc_core::sc_time;
using sc_core::SC_ZERO_TIME;

namespace {
/// Count-table groups (and completion counters' groups) being read-modify-written by some monitor (only matters
/// if a target's b_transport yields between the read and the write: then other monitors must not interleave on
/// the same group).
std::set<std::uint64_t>& rmw_locks() {
  static std::set<std::uint64_t> s;
  return s;
}

inline bool nonzero_elem(const std::uint8_t* p, unsigned eb) {
  if (eb == 4) {
    std::uint32_t b;
    std::memcpy(&b, p, 4);
    return (b & 0x7FFFFFFFu) != 0;
  }
  std::uint16_t h;
  std::memcpy(&h, p, 2);
  return (h & 0x7FFFu) != 0;
}
}  // namespace

SparsityMonitor::SparsityMonitor(sc_core::sc_module_name name, const MonitorConfig& cfg)
    : sc_module(name), mmio("mmio"), mem("mem"), cfg_(cfg), clock_{cfg.clock_mhz},
      counters_(cfg.counter_entries, 0) {
  mmio.register_b_transport(this, &SparsityMonitor::b_transport_mmio);
  mmio.register_transport_dbg(this, &SparsityMonitor::transport_dbg_mmio);
  SC_THREAD(flush_thread);
}

// ------------------------------------------------------------------------------------------------
// Write path
// ------------------------------------------------------------------------------------------------
void SparsityMonitor::observe_write(std::uint64_t addr, const std::uint8_t* data, std::uint32_t len,
                                    const sc_time& when) {
  for (auto& fn : line_observers_) fn(cfg_.slice_id, addr, data, len, when);
  if (!(ctrl_ & (1u << CTRL_ENABLE_BIT)) || len == 0 || data == nullptr) return;
  ++stats_.lines_seen;
  ++lines_seen_;
  // Input pipeline timing (calibrated from the RTL, docs/hw-units.md "Timing parameters"): the accept stage
  // takes one request per cycle; a sampled request hitting regions then occupies the counting stage for
  // `cost` cycles = the sum over those regions of, per row segment of the request, max(1, distinct tiles with
  // a counted non-zero) (divided by lines_per_cycle). Two requests can wait between accept and counting, so
  // the accept stage is free again once the counted request ahead has started counting. Unmatched and
  // unsampled requests need only the accept stage and overlap with counting. busy_ps = time the accept stage
  // is occupied; a faster arrival waits (reported as back-pressure; the L2 is not stalled by the model).
  std::uint64_t cost = 0;  // 0: accept stage only
  if (when < latest_arrival_) {
    ++stats_.arrivals_out_of_order;
    stats_.arrivals_out_of_order_ps += (latest_arrival_ - when).value();
  } else {
    latest_arrival_ = when;
  }
  struct Occupy {
    SparsityMonitor& m;
    const sc_time& when;
    std::uint64_t& cost;
    ~Occupy() {
      const double lpc = std::max<std::uint32_t>(1, m.cfg_.lines_per_cycle);
      const sc_time t_acc = std::max(when, m.input_free_);
      if (t_acc > when) m.stats_.backpressure_ps += (t_acc - when).value();
      m.last_accept_ = t_acc;
      sc_time free = t_acc + m.clock_.cycles(1.0 / lpc);
      if (cost > 0) {
        const sc_time t_c = std::max(t_acc, m.count_free_);
        m.count_free_ = t_c + m.clock_.cycles(double(cost) / lpc);
        free = std::max(free, m.last_count_start_);
        m.last_count_start_ = t_c;
      }
      m.stats_.busy_ps += (free - t_acc).value();
      m.input_free_ = free;
    }
  } occupy{*this, when, cost};

  unsigned hits = 0;
  std::array<unsigned, kNumRegions> hit{};
  const std::uint64_t end = addr + len;
  for (unsigned r = 0; r < kNumRegions; ++r) {
    const Region& g = regions_[r];
    if (g.en && addr < g.base + g.size && end > g.base) hit[hits++] = r;
  }
  if (hits == 0) return;
  const std::uint64_t mask = (std::uint64_t(1) << sample_shift_) - 1;
  const bool sampled = (sample_ctr_ & mask) == 0;
  ++sample_ctr_;
  ++stats_.lines_matched;
  ++lines_matched_;
  for (unsigned i = 0; i < hits; ++i) ++regions_[hit[i]].matched;
  if (!sampled) return;
  ++stats_.lines_sampled;
  ++lines_sampled_;
  for (unsigned i = 0; i < hits; ++i) cost += count_line(regions_[hit[i]], addr, data, len);
}

std::uint64_t SparsityMonitor::count_line(Region& g, std::uint64_t addr, const std::uint8_t* data, std::uint32_t len) {
  const std::uint64_t lo = std::max(addr, g.base) - g.base;
  const std::uint64_t hi = std::min(addr + len, g.base + g.size) - g.base;
  const unsigned eb = g.eb;
  std::uint64_t o = (lo + eb - 1) / eb * eb;  // first element start inside the request
  const std::uint64_t row_bytes = std::uint64_t(g.cols) * eb;
  if (o != lo && (lo % g.pitch) < row_bytes) ++stats_.partial_elements;
  std::uint64_t r = o / g.pitch, cb = o % g.pitch;
  // Cycle cost (RTL stage C): per row segment, max(1, distinct tiles with a counted non-zero). Within one
  // row, tile indices only grow, so distinct tiles = changes of the last non-zero tile.
  std::uint64_t cost = 0, seg_tiles = 0, last_tile = ~std::uint64_t(0);
  const bool any = o + eb <= hi;
  for (; o + eb <= hi; o += eb, cb += eb) {
    if (cb >= g.pitch) {
      cb -= g.pitch;
      ++r;
      cost += std::max<std::uint64_t>(1, seg_tiles);
      seg_tiles = 0;
      last_tile = ~std::uint64_t(0);
    }
    if (cb >= row_bytes || r >= g.rows) continue;
    ++stats_.elements_counted;
    if (!nonzero_elem(data + (g.base + o - addr), eb)) continue;
    const std::uint64_t c = cb / eb;
    const std::uint64_t t = (r / g.tr) * g.tpr + c / g.tc;
    if (t != last_tile) {
      ++seg_tiles;
      last_tile = t;
    }
    std::uint32_t& ctr = counters_[g.cnt_offset + t];
    if (ctr != 0xFFFFFFFFu) ++ctr;
    ++stats_.nonzero_counted;
  }
  if (o < hi && (o % g.pitch) < row_bytes && o / g.pitch < g.rows) ++stats_.partial_elements;
  if (any) cost += std::max<std::uint64_t>(1, seg_tiles);
  return std::max<std::uint64_t>(1, cost);
}

// ------------------------------------------------------------------------------------------------
// MMIO
// ------------------------------------------------------------------------------------------------
void SparsityMonitor::b_transport_mmio(tlm::tlm_generic_payload& p, sc_time& delay) {
  delay += clock_.cycles(cfg_.mmio_latency_cycles);
  serve_mmio(
      p, stats_, err_, [&](std::uint32_t off, std::uint32_t& v) { return reg_read(off, v); },
      [&](std::uint32_t off, std::uint32_t v) { return reg_write(off, v, sc_core::sc_time_stamp() + delay); });
}

unsigned SparsityMonitor::transport_dbg_mmio(tlm::tlm_generic_payload& p) {
  // Debug reads only (no side effects); writes through the debug port are refused.
  return serve_mmio_debug(p, [&](std::uint32_t off, std::uint32_t& v) { return reg_read(off, v); });
}

MmioError SparsityMonitor::reg_read(std::uint32_t off, std::uint32_t& v) const {
  if (off >= REGION_BASE) {
    const std::uint32_t rel = off - REGION_BASE;
    const unsigned r = rel / REGION_STRIDE;
    if (r >= kNumRegions) return MmioError::Unmapped;
    const Region& g = regions_[r];
    const std::uint64_t size = std::uint64_t(g.rows) * g.pitch;
    switch (rel % REGION_STRIDE) {
      case R_CFG: v = g.cfg; return MmioError::None;
      case R_TILE: v = g.tile; return MmioError::None;
      case R_BASE_LO: v = g.base_lo; return MmioError::None;
      case R_BASE_HI: v = g.base_hi; return MmioError::None;
      case R_ROWS: v = g.rows; return MmioError::None;
      case R_COLS: v = g.cols; return MmioError::None;
      case R_ROW_PITCH: v = g.pitch; return MmioError::None;
      case R_CNT_OFFSET: v = g.cnt_offset; return MmioError::None;
      case R_CT_BASE_LO: v = g.ct_lo; return MmioError::None;
      case R_CT_BASE_HI: v = g.ct_hi; return MmioError::None;
      case R_SIZE_LO: v = static_cast<std::uint32_t>(size); return MmioError::None;
      case R_SIZE_HI: v = static_cast<std::uint32_t>(size >> 32); return MmioError::None;
      case R_TILES: v = static_cast<std::uint32_t>(tiles_of(g)); return MmioError::None;
      case R_MATCHED: v = g.matched; return MmioError::None;
      default: return MmioError::Unmapped;
    }
  }
  switch (off) {
    case ID: v = kIdValue; return MmioError::None;
    case CTRL: v = ctrl_ & (1u << CTRL_ENABLE_BIT); return MmioError::None;
    case STATUS:
      v = (flush_busy_ ? 1u << STATUS_FLUSH_BUSY_BIT : 0u) | (flush_done_ ? 1u << STATUS_FLUSH_DONE_BIT : 0u) |
          (err_.pending() ? 1u << STATUS_ERR_BIT : 0u);
      return MmioError::None;
    case ERR_CODE: v = err_.err_code; return MmioError::None;
    case SAMPLE_SHIFT: v = sample_shift_; return MmioError::None;
    case FLUSH: v = 0; return MmioError::None;
    case LINES_SEEN: v = lines_seen_; return MmioError::None;
    case LINES_MATCHED: v = lines_matched_; return MmioError::None;
    case LINES_SAMPLED: v = lines_sampled_; return MmioError::None;
    case CAPACITY: v = cfg_.counter_entries; return MmioError::None;
    case FLUSH_CYCLES: v = flush_cycles_; return MmioError::None;
    case SLICE_ID: v = cfg_.slice_id; return MmioError::None;
    case COMPL_PTR_LO: v = static_cast<std::uint32_t>(compl_ptr_); return MmioError::None;
    case COMPL_PTR_HI: v = static_cast<std::uint32_t>(compl_ptr_ >> 32); return MmioError::None;
    default: return MmioError::Unmapped;
  }
}

MmioError SparsityMonitor::reg_write(std::uint32_t off, std::uint32_t v, const sc_time& when) {
  if (off >= REGION_BASE) {
    const std::uint32_t rel = off - REGION_BASE;
    const unsigned r = rel / REGION_STRIDE;
    if (r >= kNumRegions) return MmioError::Unmapped;
    return region_write(r, rel % REGION_STRIDE, v);
  }
  switch (off) {
    case ID:
    case STATUS:
    case LINES_SEEN:
    case LINES_MATCHED:
    case LINES_SAMPLED:
    case CAPACITY:
    case FLUSH_CYCLES:
    case SLICE_ID: return MmioError::ReadOnly;
    case CTRL:
      if ((v & (1u << CTRL_CLEAR_BIT)) && flush_busy_) return MmioError::Busy;
      ctrl_ = v & (1u << CTRL_ENABLE_BIT);
      if (v & (1u << CTRL_CLEAR_BIT)) clear_all(), ++stats_.clears;
      return MmioError::None;
    case ERR_CODE: err_.clear(); return MmioError::None;
    case SAMPLE_SHIFT: sample_shift_ = v & ((1u << SAMPLE_SHIFT_WIDTH) - 1); return MmioError::None;
    case COMPL_PTR_LO:
      if (v % 4 != 0) return MmioError::BadValue;
      if (flush_busy_) return MmioError::Busy;
      compl_ptr_ = (compl_ptr_ & ~std::uint64_t(0xFFFFFFFFu)) | v;
      return MmioError::None;
    case COMPL_PTR_HI:
      if (flush_busy_) return MmioError::Busy;
      compl_ptr_ = (compl_ptr_ & 0xFFFFFFFFu) | (std::uint64_t(v) << 32);
      return MmioError::None;
    case FLUSH:
      if (flush_busy_) return MmioError::Busy;
      flush_busy_ = true;
      flush_done_ = false;
      flush_mask_ = v & 0xFFFFu;
      flush_start_ = when;
      flush_start_ev_.notify(SC_ZERO_TIME);
      return MmioError::None;
    default: return MmioError::Unmapped;
  }
}

std::uint64_t SparsityMonitor::tiles_of(const Region& g) const {
  const std::uint32_t tr = field_get(g.tile, R_TILE_ROWS_LSB, R_TILE_WIDTH);
  const std::uint32_t tc = field_get(g.tile, R_TILE_COLS_LSB, R_TILE_WIDTH);
  if (!tile_dim_valid(tr) || !tile_dim_valid(tc)) return 0;  // as the RTL: no tiling until TILE is valid
  return tile_count(g.rows, g.cols, tr, tc);
}

void SparsityMonitor::region_derive(Region& g) {
  g.dtype = static_cast<ElemType>(field_get(g.cfg, R_CFG_DTYPE_LSB, R_CFG_DTYPE_WIDTH));
  g.eb = elem_bytes(g.dtype);
  g.base = g.base_lo | (std::uint64_t(g.base_hi) << 32);
  g.ct_base = g.ct_lo | (std::uint64_t(g.ct_hi) << 32);
  g.size = std::uint64_t(g.rows) * g.pitch;
  g.tr = field_get(g.tile, R_TILE_ROWS_LSB, R_TILE_WIDTH);
  g.tc = field_get(g.tile, R_TILE_COLS_LSB, R_TILE_WIDTH);
  g.tpr = tiles_per_row(g.cols, g.tc);
  g.tiles = tile_count(g.rows, g.cols, g.tr, g.tc);
}

bool SparsityMonitor::region_validate(const Region& g, unsigned self) const {
  const std::uint32_t dt = field_get(g.cfg, R_CFG_DTYPE_LSB, R_CFG_DTYPE_WIDTH);
  if (!elem_type_valid(dt)) return false;
  const unsigned eb = elem_bytes(static_cast<ElemType>(dt));
  const std::uint32_t tr = field_get(g.tile, R_TILE_ROWS_LSB, R_TILE_WIDTH);
  const std::uint32_t tc = field_get(g.tile, R_TILE_COLS_LSB, R_TILE_WIDTH);
  if (!tile_dim_valid(tr) || !tile_dim_valid(tc) || g.rows == 0 || g.cols == 0) return false;
  if (g.pitch % eb != 0 || std::uint64_t(g.pitch) < std::uint64_t(g.cols) * eb) return false;
  if (g.ct_lo % 4 != 0) return false;
  const std::uint64_t tiles = tile_count(g.rows, g.cols, tr, tc);
  if (std::uint64_t(g.cnt_offset) + tiles > cfg_.counter_entries) return false;
  // Counter ranges of enabled regions must not overlap.
  for (unsigned r = 0; r < kNumRegions; ++r) {
    const Region& o = regions_[r];
    if (r == self || !o.en) continue;
    if (g.cnt_offset < o.cnt_offset + o.tiles && o.cnt_offset < g.cnt_offset + tiles) return false;
  }
  return true;
}

MmioError SparsityMonitor::region_write(unsigned r, std::uint32_t reg, std::uint32_t v) {
  Region& g = regions_[r];
  switch (reg) {
    case R_SIZE_LO:
    case R_SIZE_HI:
    case R_TILES:
    case R_MATCHED: return MmioError::ReadOnly;
    case R_CFG:
    case R_TILE:
    case R_BASE_LO:
    case R_BASE_HI:
    case R_ROWS:
    case R_COLS:
    case R_ROW_PITCH:
    case R_CNT_OFFSET:
    case R_CT_BASE_LO:
    case R_CT_BASE_HI: break;
    default: return MmioError::Unmapped;
  }
  if (flush_busy_) return MmioError::Busy;
  if (reg != R_CFG) {
    if (g.en) return MmioError::Busy;
    switch (reg) {
      case R_TILE: g.tile = v; break;
      case R_BASE_LO: g.base_lo = v; break;
      case R_BASE_HI: g.base_hi = v; break;
      case R_ROWS: g.rows = v; break;
      case R_COLS: g.cols = v; break;
      case R_ROW_PITCH: g.pitch = v; break;
      case R_CNT_OFFSET: g.cnt_offset = v; break;
      case R_CT_BASE_LO: g.ct_lo = v; break;
      case R_CT_BASE_HI: g.ct_hi = v; break;
      default: break;
    }
    return MmioError::None;
  }
  const std::uint32_t cfg = v & ((1u << R_CFG_EN_BIT) | (((1u << R_CFG_DTYPE_WIDTH) - 1) << R_CFG_DTYPE_LSB));
  if (!elem_type_valid(field_get(cfg, R_CFG_DTYPE_LSB, R_CFG_DTYPE_WIDTH))) return MmioError::BadValue;
  const bool en = (cfg >> R_CFG_EN_BIT) & 1u;
  if (en) {
    Region trial = g;
    trial.cfg = cfg;
    if (!region_validate(trial, r)) return MmioError::BadValue;
  }
  g.cfg = cfg;
  g.en = en;
  if (en) region_derive(g);
  update_occupancy();
  return MmioError::None;
}

void SparsityMonitor::update_occupancy() {
  std::uint64_t used = 0;
  for (const Region& g : regions_)
    if (g.en) used += g.tiles;
  stats_.counter_entries_used_peak = std::max(stats_.counter_entries_used_peak, used);
}

void SparsityMonitor::clear_all() {
  std::fill(counters_.begin(), counters_.end(), 0u);
  lines_seen_ = lines_matched_ = lines_sampled_ = 0;
  sample_ctr_ = 0;
  flush_done_ = false;
  for (Region& g : regions_) g.matched = 0;
}

// ------------------------------------------------------------------------------------------------
// Flush
// ------------------------------------------------------------------------------------------------
void SparsityMonitor::rmw_group(std::uint64_t addr, const std::uint32_t* add, unsigned words, sc_time issue,
                                sc_time& done, bool count_table) {
  const std::uint64_t key = addr & ~std::uint64_t(31);
  while (rmw_locks().count(key)) sc_core::wait(clock_.cycles(1));
  rmw_locks().insert(key);
  std::uint8_t buf[32];
  const unsigned len = words * 4;
  tlm::tlm_generic_payload p;
  spartan::hw::prepare_payload(p, tlm::TLM_READ_COMMAND, addr, buf, len);
  // The add happens at the L2 (ROP atomic: one message carrying the addends). The functional value is
  // fetched with the debug transport (no timing, no traffic, no statistics); the atomic's cost is the timed
  // write message from the issue time. (Until 2026-12-02 this was a timed read: it doubled the flush's L2
  // traffic and occupied the crossbar and the L2 data array.)
  const bool read_ok = mem->transport_dbg(p) == len;  // a debug transport reports by its byte count
  sc_time d = SC_ZERO_TIME;
  if (read_ok) {
    for (unsigned i = 0; i < words; ++i) {
      const std::uint32_t v = mmio_load_u32(buf + 4 * i) + add[i];  // u32 add, wraps like a ROP atomic
      mmio_store_u32(buf + 4 * i, v);
    }
    p.set_command(tlm::TLM_WRITE_COMMAND);
    p.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    d = (issue > sc_core::sc_time_stamp() ? issue - sc_core::sc_time_stamp() : SC_ZERO_TIME) + clock_.cycles(1);
    mem->b_transport(p, d);
  }
  rmw_locks().erase(key);
  if (count_table) {
    stats_.flush_bytes_read += len;
    stats_.flush_bytes_written += read_ok ? len : 0;
    ++stats_.flush_rmw_groups;
  } else {
    ++stats_.completion_adds;
  }
  done = sc_core::sc_time_stamp() + d;
}

// RTL: the last atomic add's completion (m_done) reaches FLUSH_DONE two cycles later (calibration).
constexpr double kFlushDoneCycles = 2.0;
// RTL: after the last group of the scan the flush FSM steps S_FL_SCAN -> S_FL_NEXT -> S_FL_WAIT -> S_RUN before
// FLUSH_DONE, 4 cycles that end the flush when no atomic add is in flight by then (an all-zero count table, or
// trailing zero groups that outlast the last add). Until the thirty-seventh session's review the TLM flush ended
// at the scan there: 22 against the RTL's 26 cycles for an all-zero 100 x 100 layer of 32 x 32 tiles.
constexpr double kFlushScanTailCycles = 4.0;

void SparsityMonitor::flush_thread() {
  for (;;) {
    sc_core::wait(flush_start_ev_);
    if (flush_start_ > sc_core::sc_time_stamp()) sc_core::wait(flush_start_ - sc_core::sc_time_stamp());
    const sc_time requested = sc_core::sc_time_stamp();  // FLUSH_CYCLES counts from here, drain included (RTL fl_cycles)
    // The RTL's flush first drains the input pipeline (S_DRAIN until pipe_empty): requests still waiting or
    // being counted (a monitor slower than the writes it sees) delay the scan.
    const sc_time drained = std::max(input_free_, count_free_);
    if (drained > sc_core::sc_time_stamp()) {
      stats_.flush_drain_wait_ps += (drained - sc_core::sc_time_stamp()).value();
      sc_core::wait(drained - sc_core::sc_time_stamp());
    }
    const sc_time start = sc_core::sc_time_stamp();
    InflightWindow win(cfg_.flush_outstanding);
    // Scan timing calibrated from the RTL (docs/hw-units.md "Timing parameters"; the RTL's flush FSM reads one
    // counter per cycle): 2 cycles to start, and per 32 B group of the count table one cycle per counter
    // + 2 (last read's data, close the group) + 1 to issue its atomic add if it is non-zero (issued after
    // that cycle); flush_groups_per_cycle divides this scan cost.
    const double scale = 1.0 / std::max<std::uint32_t>(1, cfg_.flush_groups_per_cycle);
    // RTL: S_DRAIN and the first S_FL_NEXT -> S_FL_SCAN; a FLUSH of no enabled region (mask 0) goes S_DRAIN ->
    // S_FL_NEXT -> S_FL_WAIT and ends on the tail alone (4 cycles; until the fifty-fourth session's review the TLM
    // charged 6 there).
    bool any_region = false;
    for (unsigned r = 0; r < kNumRegions; ++r) any_region = any_region || (regions_[r].en && ((flush_mask_ >> r) & 1u));
    double scan = any_region ? 2.0 : 0.0;
    sc_time end = start + clock_.cycles(scan * scale);
    for (unsigned r = 0; r < kNumRegions; ++r) {
      Region& g = regions_[r];
      if (!g.en || !((flush_mask_ >> r) & 1u)) continue;
      std::uint64_t t = 0;
      while (t < g.tiles) {
        const std::uint64_t a = g.ct_base + 4 * t;
        const std::uint64_t group_end = (a & ~std::uint64_t(31)) + 32;
        const std::uint64_t t_end = std::min<std::uint64_t>(g.tiles, t + (group_end - a) / 4);
        std::uint32_t* ctr = &counters_[g.cnt_offset + t];
        const unsigned words = static_cast<unsigned>(t_end - t);
        scan += double(words) + 2.0;
        const sc_time scanned = start + clock_.cycles(scan * scale);
        end = std::max(end, scanned);
        if (std::any_of(ctr, ctr + words, [](std::uint32_t c) { return c != 0; })) {
          scan += 1.0;
          const sc_time issued = start + clock_.cycles(scan * scale);
          end = std::max(end, issued);
          const sc_time issue = win.earliest_issue(issued);
          // Issue in global time order (64 monitors flush concurrently into shared L2 slices whose
          // busy-until reservations assume time-ordered arrivals): wait until the issue time.
          if (issue > sc_core::sc_time_stamp()) sc_core::wait(issue - sc_core::sc_time_stamp());
          std::uint32_t add[8];
          std::copy(ctr, ctr + words, add);
          std::fill(ctr, ctr + words, 0u);
          sc_time done;
          rmw_group(a, add, words, issue, done);
          win.push(done);
          end = std::max(end, done + clock_.cycles(kFlushDoneCycles));
        }
        t = t_end;
      }
    }
    end = std::max(end, start + clock_.cycles(scan * scale + kFlushScanTailCycles));
    if (compl_ptr_ != 0) {
      // The completion counter's add (regmap COMPL_PTR): where the RTL would step to S_RUN it steps to S_FL_WRITE
      // instead, and its add leaves when FLUSH_DONE would have been set (calibrated on the lockstep,
      // MonitorRtlVsTlm.CompletionCounterMatches: the add puts write latency + 3 cycles on the flush); FLUSH_DONE
      // then follows the add's completion as it follows a count-table add's (kFlushDoneCycles).
      const sc_time issue = end;
      if (issue > sc_core::sc_time_stamp()) sc_core::wait(issue - sc_core::sc_time_stamp());
      const std::uint32_t one = kComplIncrement;
      sc_time done;
      rmw_group(compl_ptr_, &one, 1, issue, done, false);
      end = done + clock_.cycles(kFlushDoneCycles);
    }
    if (end > sc_core::sc_time_stamp()) sc_core::wait(end - sc_core::sc_time_stamp());
    const sc_time dur = sc_core::sc_time_stamp() - requested;
    flush_cycles_ = static_cast<std::uint32_t>(clock_.whole_cycles(dur));
    stats_.flush_ps += dur.value();
    ++stats_.flush_count;
    flush_busy_ = false;
    flush_done_ = true;
    last_flush_done_ = sc_core::sc_time_stamp();
    for (auto& fn : flush_observers_) fn(cfg_.slice_id, flush_cycles_, last_flush_done_);
    flush_done_ev_.notify(SC_ZERO_TIME);
  }
}

}  // namespace spartan::hw
