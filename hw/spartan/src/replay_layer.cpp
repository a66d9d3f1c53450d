// One captured (iteration, layer) of the trace replay: software path, hardware path, consumer, checks.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "replay_impl.h"

namespace spartan::hw::replay_detail {

namespace {

std::vector<std::uint8_t> read_mem(gpu::GpuSystem& g, std::uint64_t addr, std::size_t n) {
  std::vector<std::uint8_t> v(n);
  if (n) g.backing_store().read(addr, v.data(), n);
  return v;
}
std::vector<std::uint32_t> read_u32s(gpu::GpuSystem& g, std::uint64_t addr, std::size_t n) {
  const auto b = read_mem(g, addr, 4 * n);
  std::vector<std::uint32_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = mmio_load_u32(b.data() + 4 * i);
  return v;
}

/// expand(output) vs the dense matrix: exact bits, except -0.0 in compacted tiles (stored as +0.0 by the
/// format). Returns {mismatches, normalised negative zeros}.
std::pair<std::uint64_t, std::uint64_t> expand_check(fmt::TiledMatrix& tm, const std::vector<std::uint8_t>& dense,
                                                     unsigned eb) {
  const fmt::TileGrid& g = tm.grid;
  std::vector<std::uint8_t> out(std::size_t(g.rows) * g.cols * eb);
  fmt::expand(tm, out.data(), g.cols);
  std::uint64_t bad = 0, negz = 0;
  for (std::size_t i = 0; i < std::size_t(g.rows) * g.cols; ++i) {
    if (std::memcmp(out.data() + i * eb, dense.data() + i * eb, eb) == 0) continue;
    std::uint32_t want = 0, got = 0;
    std::memcpy(&want, dense.data() + i * eb, eb);
    std::memcpy(&got, out.data() + i * eb, eb);
    const std::uint32_t sign = eb == 4 ? 0x80000000u : 0x8000u;
    const std::size_t r = i / g.cols, c = i % g.cols;
    const auto& h = tm.header(static_cast<std::uint32_t>(r / g.tile_rows), static_cast<std::uint32_t>(c / g.tile_cols));
    if (want == sign && got == 0 && h.fmt() != fmt::TileFormat::Dense)
      ++negz;
    else
      ++bad;
  }
  return {bad, negz};
}

/// ReplayOptions::host_poll_interval_ns: a poller reading every `interval_ns` from `start` sees a completion at
/// `done` with its first read issued at or after it; returns the wait from `done` to that read (0 with no interval).
/// In whole picoseconds (the simulation's resolution; an interval above 0 is at least 1 ps), so that a completion
/// on the poller's grid waits 0, not one interval by rounding.
double poll_wait_ns(const sc_core::sc_time& start, const sc_core::sc_time& done, double interval_ns) {
  if (interval_ns <= 0) return 0.0;
  const auto p_ps = std::max<long long>(1, std::llround(interval_ns * 1e3));
  const auto since_ps = done > start ? std::llround((done - start).to_seconds() * 1e12) : 0LL;
  return double((p_ps - since_ps % p_ps) % p_ps) * 1e-3;
}

/// Reads [base, base + bytes) as one request per L2 line piece (independent), from one SM: a poller reading
/// the engines' completion records or the monitors' completion counter (whole sectors, so that it hits where
/// they were written whole).
class RecordPoll : public gpu::RequestSource {
 public:
  RecordPoll(std::uint64_t base, std::uint64_t bytes, std::uint32_t line) : at_(base), end_(base + bytes), line_(line) {}
  bool next(gpu::MemRequest& r) override {
    if (at_ >= end_) return false;
    r = gpu::MemRequest{};
    r.addr = at_;
    r.bytes = static_cast<std::uint32_t>(std::min<std::uint64_t>(line_ - at_ % line_, end_ - at_));
    at_ += r.bytes;
    return true;
  }

 private:
  std::uint64_t at_, end_;
  std::uint32_t line_;
};

std::string fmt_us(double ns) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f us", ns * 1e-3);
  return b;
}

}  // namespace

json Replay::replay_layer(const trace::TraceKey& key) {
  const std::string tname = key.name();
  const trace::TensorInfo* info = reader_.find(tname);
  const regmap::ElemType et = elem_of(info->dtype, tname);
  const unsigned eb = regmap::elem_bytes(et);
  // Matrix view of the activation: [N*C, H*W] for NCHW (one row per feature map, as the producer writes
  // it), [N, K] for FC; generally rows = d0*d1, cols = the rest for rank >= 3.
  const auto& sh = info->shape;
  const auto mv = trace::activation_matrix_view(sh);
  const std::uint64_t rows = mv.rows, cols = mv.cols;
  if (rows == 0 || cols == 0 || rows > 0xFFFFFFFFull || cols * eb > 0xFFFFFFFFull)
    throw InputError(opt_.trace_path + ": " + tname + ": activation shape cannot be replayed (empty or too large)");
  const trace::TensorView view = reader_.view(tname);
  std::vector<std::uint8_t> host(view.data, view.data + view.bytes);

  DenseOperand m;
  m.rows = static_cast<std::uint32_t>(rows);
  m.cols = static_cast<std::uint32_t>(cols);
  m.pitch_bytes = static_cast<std::uint32_t>(cols * eb);
  m.dtype = et;
  m.tile_rows = opt_.tile_rows;
  m.tile_cols = opt_.tile_cols;
  m.host = host.data();
  const fmt::TileGrid g = m.grid();
  const std::uint64_t tiles = g.num_tiles();  // <= monitor.counter_entries: checked for every key in Replay::run
  const std::uint32_t q16 = threshold_to_q16(opt_.threshold);

  // Reference compaction (tile_format.h) of the same matrix: exact per-tile counts and expected bytes.
  fmt::CompactOptions copt;
  copt.tile_rows = opt_.tile_rows;
  copt.tile_cols = opt_.tile_cols;
  copt.threshold = q16 / 65536.0;
  copt.sparse_format = opt_.format;
  copt.elem = static_cast<fmt::ElemType>(et);
  copt.dense_if_not_smaller = opt_.size_rule;
  const fmt::TiledMatrix ref = fmt::compact(host.data(), m.rows, m.cols, m.cols, copt);
  std::vector<std::uint32_t> exact(tiles);
  std::uint64_t nnz_total = 0;
  for (std::uint64_t t = 0; t < tiles; ++t) nnz_total += (exact[t] = ref.headers[t].nnz);
  const auto kinds = fmt::count_tiles(ref);

  // Memory layout.
  const std::uint64_t A = 0x40000000ull;
  m.base = A;
  const std::uint64_t ct_hw = align64k(A + rows * m.pitch_bytes);
  const std::uint64_t ct_sw = align64k(ct_hw + 4 * tiles);
  const std::uint64_t cnt_sw = align64k(ct_sw + 4 * tiles);
  const SparseOutput sw_out{align64k(cnt_sw + 8 * tiles), align64k(align64k(cnt_sw + 8 * tiles) + 16 * tiles)};
  const std::uint64_t bound = payload_bound(g, eb);
  // The engines' blocks (ReplayOptions::engine_count, engine_blocks): one descriptor, header-table slot and
  // payload area each; block b's payload area is [blk_area[b], blk_area[b] + blk_bound[b]) from
  // hw_out.payload_base. The header table is in block-major tile order (`order`: the row-major tile index of
  // each), the same as row-major with one block. The count table is the one monitor region's, row-major: each
  // engine reads its block's counts out of it (D_CFG.CT_PITCH = the activation's tiles per row).
  const std::vector<EngineBlock> blocks = engine_blocks(g, static_cast<std::uint32_t>(engines_.size()));
  const std::size_t nb = blocks.size();
  std::vector<std::uint64_t> blk_area, blk_bound, order;
  std::uint64_t hw_area = 0;
  for (const EngineBlock& k : blocks) {
    blk_area.push_back(hw_area);
    blk_bound.push_back(payload_bound(fmt::TileGrid{k.rows, k.cols, g.tile_rows, g.tile_cols}, eb));
    hw_area += blk_bound.back();
    if (blk_bound.back() > 0xFFFFFFFFull)
      throw InputError(tname + ": activation too large for the engine's 32-bit OUT_CAPACITY" +
                       (nb > 1 ? " (a block of " + std::to_string(k.rows) + " x " + std::to_string(k.cols) + ")" : std::string()));
    for (std::uint32_t i = 0; i < k.tile_rows; ++i)
      for (std::uint32_t j = 0; j < k.tile_cols; ++j)
        order.push_back(std::uint64_t(k.tile_row0 + i) * g.tiles_c() + k.tile_col0 + j);
  }
  const std::uint64_t hw_hdr = align64k(sw_out.payload_base + bound);
  const SparseOutput hw_out{hw_hdr, align64k(hw_hdr + 16 * tiles)};  // payload area: hw_area bytes from its base

  // Every path starts from the same hierarchy: the L2 is written back and invalidated (flush_l2, not
  // charged to either path) before each producer, so neither path pays for dirty data the other one, or
  // an earlier layer, left behind (review finding F4, docs/review/2026-12-01-numbers.md), and a layer's
  // figures do not depend on which layers were replayed before it.
  // The replay also moves to the same DRAM refresh phase with all rows closed (align_to_refresh), so the
  // times do not depend on where in simulated time a path starts either (e.g. with --rtl, whose lockstep
  // advances time between layers).
  gpu_->flush_l2();
  gpu_->align_to_refresh();

  // Monitors: region 0 = this activation. Every monitor register write is a posted MMIO write that the
  // hardware profile is charged for (host_mmio_write_ns each); the same value goes to all monitors, so with
  // host_monitor_broadcast (the default, an assumption: a broadcast register window) a write counts once,
  // i.e. monitor_writes counts the writes to unit 0; without it, every unit's write counts.
  namespace mr = regmap::monitor;
  const std::size_t S = monitors_.size();
  const bool bcast = opt_.host_monitor_broadcast;
  std::uint32_t monitor_writes = 0;
  const auto mon_w = [&](std::size_t u, std::uint32_t off, std::uint32_t v, const char* what) {
    monitor_writes += u == 0 || !bcast;
    mmio_w(u, off, v, what);
  };
  // Region 0 = the whole activation, however many engines compact it (until the fifty-first session each
  // engine's block had a region of its own: 11 more writes per block and layer, and a line in the address
  // range of k column blocks' regions took the counting stage k cycles).
  const std::uint32_t et_cfg = 1u | (static_cast<std::uint32_t>(et) << mr::R_CFG_DTYPE_LSB);
  // host_monitor_completion: the monitors' flush completion counter, one u32 in an L2 sector of its own (at
  // least 32 B) below the engines' records (run-constant, as COMPL_PTR is programmed once per run, not charged).
  // The memset zeroes and the poll reads the whole sector: a partly written sector is fetched on its first read.
  const bool mon_compl = opt_.host_monitor_completion;
  const std::uint64_t kMonitorCounter = A - 0x20000;
  const std::uint32_t counter_sector = std::max<std::uint32_t>(32, gpu_->config().l2.slice.sector_bytes);
  if (mon_compl && !monitor_completion_set_) {
    for (std::size_t u = 0; u < S; ++u) {
      mmio_w(u, mr::COMPL_PTR_LO, static_cast<std::uint32_t>(kMonitorCounter), "monitor COMPL_PTR_LO");
      mmio_w(u, mr::COMPL_PTR_HI, static_cast<std::uint32_t>(kMonitorCounter >> 32), "monitor COMPL_PTR_HI");
    }
    monitor_completion_set_ = true;
  }
  for (std::size_t u = 0; u < S; ++u) {
    mon_w(u, mr::CTRL, 0, "monitor CTRL");
    mon_w(u, mr::region_reg(0, mr::R_CFG), 0, "region CFG");
    mon_w(u, mr::region_reg(0, mr::R_TILE), opt_.tile_rows | (opt_.tile_cols << 16), "region TILE");
    mon_w(u, mr::region_reg(0, mr::R_BASE_LO), static_cast<std::uint32_t>(A), "region BASE_LO");
    mon_w(u, mr::region_reg(0, mr::R_BASE_HI), static_cast<std::uint32_t>(A >> 32), "region BASE_HI");
    mon_w(u, mr::region_reg(0, mr::R_ROWS), m.rows, "region ROWS");
    mon_w(u, mr::region_reg(0, mr::R_COLS), m.cols, "region COLS");
    mon_w(u, mr::region_reg(0, mr::R_ROW_PITCH), m.pitch_bytes, "region ROW_PITCH");
    mon_w(u, mr::region_reg(0, mr::R_CNT_OFFSET), 0, "region CNT_OFFSET");
    mon_w(u, mr::region_reg(0, mr::R_CT_BASE_LO), static_cast<std::uint32_t>(ct_hw), "region CT_BASE_LO");
    mon_w(u, mr::region_reg(0, mr::R_CT_BASE_HI), static_cast<std::uint32_t>(ct_hw >> 32), "region CT_BASE_HI");
    mon_w(u, mr::region_reg(0, mr::R_CFG), et_cfg, "region CFG");
    mon_w(u, mr::SAMPLE_SHIFT, opt_.sampling, "SAMPLE_SHIFT");
  }

  json L;
  L["iteration"] = key.iteration;
  L["layer"] = key.layer;
  std::string lname;
  bool relu_input = false;  // the previous layer ends in a ReLU: this activation is a ReLU output
  for (const auto& li : layers_) {
    if (li.index == key.layer) lname = li.name;
    if (li.index == key.layer - 1) relu_input = li.relu_after;
  }
  L["name"] = lname;
  L["relu_input"] = relu_input;  // false for the network's input (review finding F11: not a ReLU activation)
  L["tensor"] = tname;
  L["dtype"] = trace::dtype_name(info->dtype);
  L["rows"] = m.rows;
  L["cols"] = m.cols;
  L["dense_bytes"] = std::uint64_t(m.rows) * m.cols * trace::dtype_size(info->dtype);  // the activation, unpadded
  L["tiles"] = tiles;
  L["density"] = double(nnz_total) / (double(rows) * double(cols));
  L["tile_kinds"] = {{"dense", kinds.dense}, {"sparse", kinds.sparse}, {"zero", kinds.zero}};

  // ---------------- A: software path ----------------
  const BaselineConfig& bc = opt_.baseline;
  Kernel prodA = make_producer(m, sms_, line_);
  const Step sp = kernel(prodA, false);
  // The software profile computes what the conversion needs, as the monitors' counts feed the engine: nnz
  // per tile, and for ELL each tile's widest row (make_count_pass: 2 more cycles per line, 8 B entries).
  // The conversion is then scan + scatter. (Until 2026-12-02 a separate count pass re-read the activation
  // after the profile, charging the software path twice for the counting: review of 2026-12-02.)
  const bool ell = opt_.format == fmt::TileFormat::Ell;
  Kernel kp = ell ? make_count_pass(m, cnt_sw, bc, sms_, line_) : make_profile(m, ct_sw, bc, sms_, line_);
  const Step s_prof = kernel(kp, true);
  std::vector<std::uint32_t> nnz(tiles), width(tiles, 0);
  if (ell) {
    const auto v = read_u32s(*gpu_, cnt_sw, 2 * tiles);
    for (std::uint64_t t = 0; t < tiles; ++t) {
      nnz[t] = v[2 * t];
      width[t] = v[2 * t + 1];
    }
  } else {
    nnz = read_u32s(*gpu_, ct_sw, tiles);
  }
  std::uint64_t sw_payload = 0;
  const auto sw_headers = scan_headers(m, nnz, width, q16, opt_.size_rule, opt_.format, &sw_payload);
  Kernel ks = make_scan(ell ? cnt_sw : ct_sw, ell ? 8 : 4, sw_headers, sw_out, bc, sms_, line_);
  const Step s_scan = kernel(ks, true);
  Kernel kx = make_scatter(m, sw_headers, opt_.format, sw_out, bc, sms_, line_);
  const Step s_scat = kernel(kx, true);
  // The two kernels run back to back: times add, and each component (memory, compute, launch overhead) is
  // the sum of the kernels' (before, the whole time was filed as memory time: issue 12).
  const Step sw_conv = Step::sequence("convert", {&s_scan, &s_scat});
  const bool sw_profile_exact = nnz == exact;
  // Headers byte for byte; payloads tile by tile (the scatter kernel does not write the alignment gaps).
  bool sw_output_identical = read_mem(*gpu_, sw_out.header_base, 16 * tiles) == ref.header_bytes();
  {
    const auto pay = read_mem(*gpu_, sw_out.payload_base, ref.payload.size());
    for (std::uint64_t t = 0; t < tiles && sw_output_identical; ++t) {
      const auto& h = ref.headers[t];
      const std::size_t n = fmt::tile_payload_bytes(h, g.r_eff(static_cast<std::uint32_t>(t / g.tiles_c())),
                                                    g.c_eff(static_cast<std::uint32_t>(t % g.tiles_c())), g.tile_cols,
                                                    copt.elem);
      sw_output_identical = std::equal(pay.begin() + h.offset, pay.begin() + h.offset + n, ref.payload.begin() + h.offset);
    }
  }

  // ---------------- B: hardware path ----------------
  gpu_->flush_l2();  // the same starting state as path A (see above)
  gpu_->align_to_refresh();
  // with host_monitor_completion the same memset zeroes the completion counter's sector
  Kernel kz = mon_compl ? make_memset({{ct_hw, 4 * tiles}, {kMonitorCounter, counter_sector}}, sms_, line_)
                        : make_memset(ct_hw, 4 * tiles, sms_, line_);
  Step s_zero = kernel(kz, false);  // memory time only: issued by the driver ahead of the producer
  // CLEAR: the flush reads and clears every counter it writes out (RTL and TLM) and the RTL's reset sweeps
  // the table, so without sampling the counters are zero at every layer start (checked here) and the
  // driver enables without a CLEAR. With sampling the CLEAR restarts the sampling phase, so that a layer's
  // figures do not depend on the layers replayed before it; it is instantaneous in the TLM but the RTL
  // sweeps its counter memory one entry per cycle (CAPACITY cycles, writes stalled meanwhile:
  // rtl/src/sparsity_monitor.v), so that sweep is charged, concurrent with the count-table memset.
  const bool clear = opt_.sampling > 0;
  const double clear_ns =
      clear ? double(opt_.monitor.counter_entries) * 1e3 / monitors_.front()->config().clock_mhz : 0.0;
  s_zero.compute_ns = std::max(s_zero.compute_ns, clear_ns);
  if (!clear)
    for (std::size_t u = 0; u < S; ++u)
      for (std::uint32_t e = 0; e < tiles; ++e)
        if (monitors_[u]->counter(e) != 0)
          throw std::logic_error("monitor " + std::to_string(u) + " counter " + std::to_string(e) +
                                 " is not zero at the start of a layer (the previous flush should have cleared it)");
  std::vector<std::uint64_t> busy0(S);
  for (std::size_t u = 0; u < S; ++u) {
    mon_w(u, mr::CTRL, (1u << mr::CTRL_ENABLE_BIT) | (clear ? 1u << mr::CTRL_CLEAR_BIT : 0u), "monitor CTRL");
    busy0[u] = monitors_[u]->stats().busy_ps;
  }
  Kernel prodB = make_producer(m, sms_, line_);
  const Step hp = kernel(prodB, false);
  double busy_sum = 0, busy_max = 0;
  for (std::size_t u = 0; u < S; ++u) {
    const double b = double(monitors_[u]->stats().busy_ps - busy0[u]);
    busy_sum += b;
    busy_max = std::max(busy_max, b);
  }
  const double prod_ps = std::max(1.0, hp.mem_ns * 1e3);
  // Flush all monitors (one FLUSH write each; one charge with host_monitor_broadcast), wait, then read the
  // status (one aggregated read with host_monitor_broadcast, else one per monitor), or with
  // host_monitor_completion poll the completion counter from the GPU.
  const Traffic f0 = traffic(*gpu_);
  const sc_time t_flush = sc_core::sc_time_stamp();
  for (std::size_t u = 0; u < S; ++u) {
    mon_w(u, mr::FLUSH, 1, "monitor FLUSH");  // region 0
  }
  gpu_->run_until_idle();
  sc_time flush_end = t_flush;
  std::uint64_t flush_cycles_max = 0;
  for (std::size_t u = 0; u < S; ++u) {
    if (monitors_[u]->flush_busy()) throw std::logic_error("monitor flush did not complete");
    flush_end = std::max(flush_end, monitors_[u]->last_flush_done());
    flush_cycles_max = std::max<std::uint64_t>(flush_cycles_max, host_->must_read(MmioBus::window_base(u) + mr::FLUSH_CYCLES, "FLUSH_CYCLES"));
  }
  // host_monitor_completion: the counter as in memory (every monitor's add: S expected), then SM 0's read of
  // its sector, issued once the last flush has ended (RecordPoll: one request per line piece).
  std::uint32_t mon_counter = 0;
  double mon_poll_ns = 0, mon_poll_wait_ns = 0;
  std::uint64_t mon_poll_dram_bytes = 0;
  if (mon_compl) {
    mon_counter = read_u32s(*gpu_, kMonitorCounter, 1).at(0);
    const Traffic p0 = traffic(*gpu_);
    RecordPoll poll(kMonitorCounter, counter_sector, line_);
    const auto r = gpu_->run({&poll});
    mon_poll_ns = double(r.end_ps - r.start_ps) * 1e-3;
    mon_poll_dram_bytes = traffic(*gpu_).dram_bytes - p0.dram_bytes;
    mon_poll_wait_ns = poll_wait_ns(t_flush, flush_end, opt_.host_poll_interval_ns);
  }
  const Traffic f1 = traffic(*gpu_);
  for (std::size_t u = 0; u < S; ++u) {
    mon_w(u, mr::CTRL, 0, "monitor CTRL");
  }
  // Overhead: every monitor register write of this layer (region set-up, CTRL enable, FLUSH, CTRL disable)
  // and the status read(s) that observe completion, or the counter's poll.
  const std::uint32_t monitor_reads = mon_compl ? 0u : bcast ? 1u : std::uint32_t(S);  // completion status read(s)
  Step h_flush{"flush", (flush_end - t_flush).to_seconds() * 1e9, 0,
               monitor_writes * opt_.host_mmio_write_ns + monitor_reads * opt_.host_mmio_read_ns + mon_poll_ns +
                   mon_poll_wait_ns,
               f1.l2_bytes - f0.l2_bytes, f1.dram_bytes - f0.dram_bytes, -1};
  // Count-table zeroing then the flush, back to back: the sum of the two steps reported under "steps".
  const Step hw_prof = Step::sequence("profile", {&s_zero, &h_flush});
  const auto ct = read_u32s(*gpu_, ct_hw, tiles);

  // Engine jobs: one descriptor per block, all submitted before the simulation runs on, so the engines work
  // side by side on the GPU's memory system.
  namespace er = regmap::engine;
  std::vector<std::array<std::uint32_t, er::kDescWords>> words(nb);
  for (std::size_t b = 0; b < nb; ++b) {
    const EngineBlock& k = blocks[b];
    regmap::Descriptor d;
    d.src = A + std::uint64_t(k.row0) * m.pitch_bytes + std::uint64_t(k.col0) * eb;
    d.rows = k.rows;
    d.cols = k.cols;
    d.row_pitch_bytes = m.pitch_bytes;
    d.dtype = et;
    d.format = static_cast<std::uint32_t>(opt_.format);
    d.sample_shift = opt_.sampling;
    d.tile_rows = opt_.tile_rows;
    d.tile_cols = opt_.tile_cols;
    d.threshold_q16 = q16;
    d.size_rule = opt_.size_rule;
    d.count_table = ct_hw + 4 * (std::uint64_t(k.tile_row0) * g.tiles_c() + k.tile_col0);
    // the activation's tiles per row (engine_blocks keeps one block column when that does not fit the field)
    d.count_table_pitch = k.tile_cols == g.tiles_c() ? 0 : static_cast<std::uint32_t>(g.tiles_c());
    d.header_base = hw_out.header_base + fmt::kHeaderBytes * k.first_tile;
    d.out_base = hw_out.payload_base + blk_area[b];
    d.out_capacity_bytes = static_cast<std::uint32_t>(blk_bound[b]);
    d.tag = static_cast<std::uint32_t>(key.iteration * 1000 + key.layer);
    words[b] = d.to_words();
  }
  // Posted writes charged to the conversion: CTRL enable, the descriptor words and SUBMIT, per engine; with
  // host_engine_broadcast and every engine in use, a value common to all engines counts once
  // (ReplayOptions::host_engine_broadcast).
  const bool fetch = opt_.host_engine_fetch;
  const bool record = opt_.host_engine_record;
  // host_engine_record: the engines' completion records, 32 bytes each at kRecordBase + 32 e (below the
  // activation at A, which the layout starts at; run-constant, as COMPL_PTR is programmed once)
  const std::uint64_t kRecordBase = A - 0x10000;
  static_assert(ReplayOptions::kMaxEngineCount * er::kComplRecordBytes <= 0x10000, "records below the activation");
  // with FETCH the writes are common to all engines whatever the blocks (an engine not addressed ignores FETCH)
  const bool eng_bcast = opt_.host_engine_broadcast && (fetch || nb == engines_.size());
  unsigned engine_writes = 0;
  const auto eng_w = [&](std::size_t b, std::uint32_t off, std::uint32_t v, bool common, const char* what) {
    engine_writes += b == 0 || !(eng_bcast && common);
    mmio_w(S + b, off, v, what);
  };
  const Traffic e0 = traffic(*gpu_);
  std::vector<std::size_t> jobs_before(nb);
  std::uint64_t compactor_busy0 = 0;
  for (std::size_t b = 0; b < nb; ++b) {
    jobs_before[b] = engines_[b]->jobs().size();
    compactor_busy0 += engines_[b]->stats().compactor_busy_ps;
  }
  // host_engine_fetch: the descriptors in device memory (one 64-byte descriptor per engine in use, block b at
  // desc_base + 64 b), put there functionally: a driver writes them ahead of the layer (not charged).
  const std::uint64_t desc_base = align64k(hw_out.payload_base + hw_area);
  // the engines the FETCH-mode writes go to: all of them through the broadcast window, else those in use
  const std::size_t fetch_targets = eng_bcast ? engines_.size() : nb;
  if ((fetch || record) && !engine_index_set_) {  // driver initialisation, once per run: not charged
    for (std::size_t e = 0; e < engines_.size(); ++e) {
      mmio_w(S + e, er::ENGINE_INDEX, static_cast<std::uint32_t>(e), "engine ENGINE_INDEX");
      if (record) {
        mmio_w(S + e, er::COMPL_PTR_LO, static_cast<std::uint32_t>(kRecordBase), "engine COMPL_PTR_LO");
        mmio_w(S + e, er::COMPL_PTR_HI, static_cast<std::uint32_t>(kRecordBase >> 32), "engine COMPL_PTR_HI");
      }
    }
    engine_index_set_ = true;
  }
  if (fetch) {
    for (std::size_t b = 0; b < nb; ++b) {
      std::uint8_t bytes[er::kDescBytes];
      for (unsigned i = 0; i < er::kDescWords; ++i) mmio_store_u32(bytes + 4 * i, words[b][i]);
      gpu_->backing_store().write(desc_base + er::kDescBytes * b, bytes, er::kDescBytes);
    }
    for (std::size_t b = 0; b < fetch_targets; ++b) {
      eng_w(b, er::CTRL, 1u << er::CTRL_ENABLE_BIT, true, "engine CTRL");
      eng_w(b, er::DESC_PTR_LO, static_cast<std::uint32_t>(desc_base), true, "engine DESC_PTR_LO");
      eng_w(b, er::DESC_PTR_HI, static_cast<std::uint32_t>(desc_base >> 32), true, "engine DESC_PTR_HI");
    }
  } else {
    for (std::size_t b = 0; b < nb; ++b) {
      eng_w(b, er::CTRL, 1u << er::CTRL_ENABLE_BIT, true, "engine CTRL");
      for (unsigned i = 0; i < er::kDescWords; ++i) {
        bool common = true;
        for (std::size_t o = 0; o < nb; ++o) common = common && words[o][i] == words[b][i];
        eng_w(b, er::DESC_BASE + 4 * i, words[b][i], common, "DESC");
      }
    }
  }
  // Timed from the SUBMIT (FETCH) writes, as the flush is from the FLUSH writes: both steps include the one
  // register access latency (mmio_latency_cycles) of the write that starts the unit (job.submitted is after it;
  // with FETCH also the descriptor's read). Host writes take no simulated time (their cost is the overhead
  // charged below): every engine starts at t_submit.
  const sc_time t_submit = sc_core::sc_time_stamp();
  if (fetch)
    for (std::size_t b = 0; b < fetch_targets; ++b)
      eng_w(b, er::FETCH, static_cast<std::uint32_t>(nb), true, "engine FETCH");
  else
    for (std::size_t b = 0; b < nb; ++b) eng_w(b, er::SUBMIT, 1, true, "engine SUBMIT");
  gpu_->run_until_idle();
  std::vector<const EngineJob*> jobs(nb);
  sc_time conv_end = t_submit, conv_start = t_submit;
  std::uint64_t compactor_busy = 0, job_cycles_max = 0, payload_bytes = 0;
  EngineJob tot;  // tile counts summed over the blocks
  bool jobs_ok = true;
  for (std::size_t b = 0; b < nb; ++b) {
    if (engines_[b]->jobs().size() != jobs_before[b] + 1) throw std::logic_error("engine job did not complete");
    const EngineJob& j = *(jobs[b] = &engines_[b]->jobs().back());
    conv_end = std::max(conv_end, j.finished);
    conv_start = b == 0 ? j.started : std::min(conv_start, j.started);
    compactor_busy += engines_[b]->stats().compactor_busy_ps;
    job_cycles_max = std::max(job_cycles_max, j.cycles);
    payload_bytes += j.payload_bytes;
    tot.tiles_dense += j.tiles_dense;
    tot.tiles_zero += j.tiles_zero;
    tot.tiles_compacted += j.tiles_compacted;
    tot.tiles_dense_by_size += j.tiles_dense_by_size;
    jobs_ok = jobs_ok && j.status == er::JobStatus::Ok;
  }
  compactor_busy -= compactor_busy0;
  // Completion: a status read over the host's MMIO path (one aggregated with the broadcast), or with records a
  // GPU-side poll: SM 0 reads the records (their sectors) once every record is written (engine b's at kRecordBase + 32 b).
  const std::uint32_t engine_reads = record ? 0u : eng_bcast ? 1u : static_cast<std::uint32_t>(nb);
  double poll_ns = 0, poll_wait = 0;
  std::uint64_t poll_dram_bytes = 0;
  // each engine's record as in memory, and its LAST_CYCLES read over MMIO (not charged), checked below
  std::vector<std::vector<std::uint32_t>> recs(record ? nb : 0);
  std::vector<std::uint32_t> last_cycles(recs.size());
  if (record) {
    for (std::size_t b = 0; b < nb; ++b) {
      recs[b] = read_u32s(*gpu_, kRecordBase + er::kComplRecordBytes * b, er::kComplRecordBytes / 4);
      last_cycles[b] = host_->must_read(MmioBus::window_base(S + b) + er::LAST_CYCLES, "LAST_CYCLES");
    }
    const Traffic p0 = traffic(*gpu_);
    RecordPoll poll(kRecordBase, er::kComplRecordBytes * nb, line_);
    const auto r = gpu_->run({&poll});
    poll_ns = double(r.end_ps - r.start_ps) * 1e-3;
    poll_dram_bytes = traffic(*gpu_).dram_bytes - p0.dram_bytes;
    poll_wait = poll_wait_ns(t_submit, conv_end, opt_.host_poll_interval_ns);
  }
  const Traffic e1 = traffic(*gpu_);
  Step hw_conv{"convert", (conv_end - t_submit).to_seconds() * 1e9, 0,
               engine_writes * opt_.host_mmio_write_ns + engine_reads * opt_.host_mmio_read_ns + poll_ns + poll_wait,
               e1.l2_bytes - e0.l2_bytes, e1.dram_bytes - e0.dram_bytes, -1};

  // ---------------- consumer ----------------
  // Each block is a tile-sparse matrix of its own (its header table, its payload area, offsets relative to
  // it); the consumer reads tile t's header from its block's table and its payload where its engine wrote it.
  const auto hb_mem = read_mem(*gpu_, hw_out.header_base, fmt::kHeaderBytes * tiles);
  std::vector<fmt::TileHeader> at(tiles);   // by row-major tile index; offsets from hw_out.payload_base
  std::vector<std::uint64_t> slot(tiles);  // header slot (block-major position) of each row-major tile
  for (std::size_t b = 0; b < nb; ++b)
    for (std::uint64_t i = 0; i < blocks[b].tiles(); ++i) {
      const std::uint64_t pos = blocks[b].first_tile + i;
      fmt::TileHeader h = fmt::decode_header(hb_mem.data() + fmt::kHeaderBytes * pos);
      h.offset += blk_area[b];
      at[order[pos]] = h;
      slot[order[pos]] = pos;
    }
  Kernel kcons = make_consumer(m, at, hw_out, bc, sms_, line_, nb > 1 ? slot : std::vector<std::uint64_t>{});
  const Step s_cons = kernel(kcons, false);

  // ---------------- checks ----------------
  json C;
  bool ok = sw_profile_exact && sw_output_identical && jobs_ok;
  C["sw_profile_counts_exact"] = sw_profile_exact;
  C["sw_output_identical_to_reference"] = sw_output_identical;
  std::uint32_t status = 0;  // the first block's status that is not Ok (0 = Ok when all are)
  for (const EngineJob* j : jobs)
    if (status == 0) status = static_cast<std::uint32_t>(j->status);
  C["engine_status"] = status;
  // Per block: its header table and payload byte for byte against compact() of the block's sub-matrix (with
  // one engine, the whole matrix: `ref`), and expand(block) against the block's dense elements.
  bool bytes_ok = true, expand_ok = true, records_ok = true;
  std::uint64_t expand_bad = 0, negz = 0;
  std::string expand_error;
  for (std::size_t b = 0; b < nb; ++b) {
    const EngineBlock& k = blocks[b];
    const std::uint8_t* src = host.data() + (std::uint64_t(k.row0) * m.cols + k.col0) * eb;
    fmt::TiledMatrix blk_ref;
    if (nb > 1) blk_ref = fmt::compact(src, k.rows, k.cols, m.cols, copt);
    const fmt::TiledMatrix& r = nb > 1 ? blk_ref : ref;
    fmt::TiledMatrix out;
    out.grid = fmt::TileGrid{k.rows, k.cols, g.tile_rows, g.tile_cols};
    out.elem = static_cast<fmt::ElemType>(et);
    out.sparse_format = opt_.format;
    out.threshold = copt.threshold;
    const std::uint8_t* hp = hb_mem.data() + fmt::kHeaderBytes * k.first_tile;
    for (std::uint64_t i = 0; i < k.tiles(); ++i) out.headers.push_back(fmt::decode_header(hp + fmt::kHeaderBytes * i));
    out.payload = read_mem(*gpu_, hw_out.payload_base + blk_area[b], jobs[b]->payload_bytes);
    out.source = src;
    out.source_ld = m.cols;
    bytes_ok = bytes_ok && std::equal(hp, hp + fmt::kHeaderBytes * k.tiles(), r.header_bytes().begin()) &&
               out.payload == r.payload;
    if (record) {  // the block's record: the replay's tag, Ok, the reference payload's size, LAST_CYCLES, zeros
      const auto& w = recs[b];
      bool ok_b = !jobs[b]->completion_error && w[er::C_TAG] == words[b][er::D_TAG] && w[er::C_STATUS] == 0 &&
                  w[er::C_OUT_BYTES] == r.payload.size() && w[er::C_CYCLES] == last_cycles[b];
      for (std::size_t i = er::C_CYCLES + 1; i < w.size(); ++i) ok_b = ok_b && w[i] == 0;
      records_ok = records_ok && ok_b;
    }
    std::vector<std::uint8_t> dense;  // the block's elements, row-major (the whole activation with one engine)
    if (nb > 1)
      for (std::uint32_t i = 0; i < k.rows; ++i)
        dense.insert(dense.end(), src + std::uint64_t(i) * m.cols * eb, src + (std::uint64_t(i) * m.cols + k.cols) * eb);
    try {
      fmt::validate(out);
      const auto [bad, nz] = expand_check(out, nb > 1 ? dense : host, eb);
      expand_bad += bad;
      negz += nz;
    } catch (const spartan::Error& e) {
      expand_ok = false;
      if (expand_error.empty()) expand_error = nb > 1 ? "block " + std::to_string(b) + ": " + e.what() : e.what();
    }
  }
  if (opt_.sampling == 0) {
    const bool counts_ok = ct == exact;
    C["monitor_counts_exact"] = counts_ok;
    C["engine_output_identical_to_reference"] = bytes_ok;
    ok = ok && counts_ok && bytes_ok;
  } else {
    // Sampled counts: estimate = count << s; report its error and the DENSE decisions it changes.
    double abs_err = 0, max_err = 0;
    std::uint64_t decisions_differ = 0;
    for (std::uint64_t t = 0; t < tiles; ++t) {
      const double est = double(std::uint64_t(ct[t]) << opt_.sampling);
      const double e = std::fabs(est - double(exact[t]));
      abs_err += e;
      max_err = std::max(max_err, e);
      const std::uint64_t elems = std::uint64_t(g.r_eff(static_cast<std::uint32_t>(t / g.tiles_c()))) *
                                  g.c_eff(static_cast<std::uint32_t>(t % g.tiles_c()));
      decisions_differ += regmap::tile_is_dense(std::uint64_t(ct[t]) << opt_.sampling, elems, q16) !=
                          regmap::tile_is_dense(exact[t], elems, q16);
    }
    C["sampling"] = {{"shift", opt_.sampling},
                     {"relative_error", nnz_total ? abs_err / double(nnz_total) : 0.0},
                     {"max_abs_error_per_tile", max_err},
                     {"dense_decisions_changed", decisions_differ}};
  }
  if (record) {
    C["engine_completion_records_correct"] = records_ok;
    ok = ok && records_ok;
  }
  if (mon_compl) {  // every monitor added 1 to the counter zeroed in this layer's memset
    const bool counter_ok = mon_counter == S;
    C["monitor_completion_count_correct"] = counter_ok;
    ok = ok && counter_ok;
  }
  if (expand_ok) C["expand_mismatches"] = expand_bad;
  else C["expand_error"] = expand_error;
  expand_ok = expand_ok && expand_bad == 0;
  C["expand_bit_exact"] = expand_ok;
  C["negative_zeros_normalised"] = negz;
  ok = ok && expand_ok;
  C["passed"] = ok;
  all_passed_ = all_passed_ && ok;
  L["checks"] = C;

  // ---------------- record ----------------
  json swj, hwj;
  swj["steps"] = {s_prof.to_json(), s_scan.to_json(), s_scat.to_json()};
  swj["profile"] = s_prof.to_json();
  swj["convert"] = sw_conv.to_json();
  hwj["steps"] = {[&] { auto z = s_zero.to_json(); z["name"] = "count_table_zero"; return z; }(), h_flush.to_json(),
                  hw_conv.to_json()};
  hwj["profile"] = hw_prof.to_json();
  hwj["convert"] = hw_conv.to_json();
  hwj["flush_cycles_max"] = flush_cycles_max;
  hwj["monitor_mmio_writes"] = monitor_writes;  // posted writes charged to the profile (broadcast: once each)
  hwj["monitor_mmio_reads"] = monitor_reads;    // status reads charged to the profile (broadcast: one)
  hwj["monitor_completion_poll_ns"] = mon_poll_ns;  // host_monitor_completion: the GPU-side poll of the counter
  hwj["monitor_completion_poll_dram_bytes"] = mon_poll_dram_bytes;  // DRAM traffic of that poll (0: an L2 hit)
  hwj["monitor_completion_poll_wait_ns"] = mon_poll_wait_ns;  // host_poll_interval_ns: wait for the poller's read
  hwj["monitor_clear_ns"] = clear_ns;  // CLEAR sweep (sampling only) charged to count_table_zero (max with the memset)
  hwj["engine_mmio_writes"] = engine_writes;    // posted writes charged to the conversion
  hwj["engine_mmio_reads"] = engine_reads;      // status read(s) charged to the conversion (0 with records)
  hwj["engine_record_poll_ns"] = poll_ns;       // host_engine_record: the GPU-side poll of the records (else 0)
  hwj["engine_record_poll_dram_bytes"] = poll_dram_bytes;  // DRAM traffic of that poll (0: it hit in the L2)
  hwj["engine_record_poll_wait_ns"] = poll_wait;  // host_poll_interval_ns: wait for the poller's read (else 0)
  hwj["engine_cycles"] = job_cycles_max;        // the longest block's LAST_CYCLES (one engine: its job's)
  hwj["monitor_utilisation_mean"] = busy_sum / (double(S) * prod_ps);
  hwj["monitor_utilisation_max"] = busy_max / prod_ps;
  // The compactors' busy time over the engines in use and the span from the first job start to the last end.
  const double job_ps = std::max(1.0, (conv_end - conv_start).to_seconds() * 1e12);
  hwj["engine_utilisation"] = double(compactor_busy) / (double(nb) * job_ps);
  // compacted = fetched for compaction (the engine's TILES_COMPACTED), of which dense_by_size were written DENSE by
  // the size rule and written_sparse not (as ELL/BITMAP; with sampling also header-only tiles estimated empty).
  hwj["engine_tiles"] = {{"dense", tot.tiles_dense}, {"zero", tot.tiles_zero}, {"compacted", tot.tiles_compacted},
                         {"dense_by_size", tot.tiles_dense_by_size},
                         {"written_sparse", tot.tiles_compacted - tot.tiles_dense_by_size}};
  hwj["payload_bytes"] = payload_bytes;
  if (nb > 1 || engines_.size() > 1) {
    // Each block's job: its tiles, cycles and time from the SUBMIT (the load balance between the engines).
    json per = json::array();
    for (std::size_t b = 0; b < nb; ++b)
      per.push_back({{"engine", b}, {"tile_row0", blocks[b].tile_row0}, {"tile_rows", blocks[b].tile_rows},
                     {"tile_col0", blocks[b].tile_col0}, {"tile_cols", blocks[b].tile_cols},
                     {"cycles", jobs[b]->cycles}, {"time_ns", (jobs[b]->finished - t_submit).to_seconds() * 1e9},
                     {"tiles_compacted", jobs[b]->tiles_compacted}, {"payload_bytes", jobs[b]->payload_bytes}});
    hwj["engine_blocks"] = per;
  }
  L["software"] = swj;
  L["hardware"] = hwj;
  L["producer"] = {{"software_run", sp.to_json()}, {"hardware_run", hp.to_json()}};
  L["consumer"] = s_cons.to_json();
  const double prof_ratio = hw_prof.total_ns() > 0 ? s_prof.total_ns() / hw_prof.total_ns() : 0.0;
  const double conv_ratio = hw_conv.total_ns() > 0 ? sw_conv.total_ns() / hw_conv.total_ns() : 0.0;
  L["profile_ratio"] = prof_ratio;
  L["convert_ratio"] = conv_ratio;
  json G = json::object();
  for (const auto& tt : times_)
    if (tt.iteration == key.iteration && tt.layer == key.layer) {
      G["device"] = tt.device;
      G["dense_ms"] = tt.fwd.dense_ms;
      if (tt.fwd.tile_sparse_ms) {
        const double ts = *tt.fwd.tile_sparse_ms;
        G["tile_sparse_ms"] = ts;
        // which code that time is (tiles or one sgemm) and the operand's density, where the trace records them
        if (!tt.fwd.path.empty()) G["tile_sparse_path"] = tt.fwd.path;
        if (tt.fwd.operand_density) G["operand_density"] = *tt.fwd.operand_density;
        // The GEMM alone, both times measured on the trace's device; a 0 ms time is a pass the writer did
        // not time (docs/trace-format.md, section 4.2): no ratio.
        const bool timed = ts > 0 && tt.fwd.dense_ms > 0;
        if (timed) G["speedup_measured"] = tt.fwd.dense_ms / ts;
        // With the simulated profile and conversion only where the GEMM times come from a GPU: CPU
        // milliseconds plus simulated GPU microseconds would make the units' cost vanish (review F1).
        if (timed && gemm_times_on_gpu(tt.device)) {
          G["speedup_software"] = layer_speedup(tt.fwd.dense_ms, ts, s_prof.total_ns() + sw_conv.total_ns());
          G["speedup_hardware"] = layer_speedup(tt.fwd.dense_ms, ts, hw_prof.total_ns() + hw_conv.total_ns());
        }
      } else {
        G["tile_sparse_ms"] = nullptr;
      }
    }
  if (G.empty()) G["note"] = "no measured GEMM times for this (iteration, layer) in the trace";
  L["gemm"] = G;
  char line[512];
  std::snprintf(line, sizeof line,
                "it%lld L%lld %-8s %6ux%-6u dens %.2f | profile SW %s HW %s (%.1fx) | convert SW %s HW %s (%.1fx) | %s",
                static_cast<long long>(key.iteration), static_cast<long long>(key.layer), lname.c_str(), m.rows, m.cols,
                double(nnz_total) / (double(rows) * double(cols)), fmt_us(s_prof.total_ns()).c_str(),
                fmt_us(hw_prof.total_ns()).c_str(), prof_ratio, fmt_us(sw_conv.total_ns()).c_str(),
                fmt_us(hw_conv.total_ns()).c_str(), conv_ratio, ("checks " + layer_check_text(L)).c_str());
  L["progress"] = line;
  return L;
}

}  // namespace spartan::hw::replay_detail
