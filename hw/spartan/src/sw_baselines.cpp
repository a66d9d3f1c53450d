#include "spartan/hw/sw_baselines.h"

#include <algorithm>
#include <cstring>
#include <functional>

namespace spartan::hw {

namespace fmt = spartan::format;
using gpu::MemRequest;
using gpu::RequestSource;

std::vector<gpu::RequestSource*> Kernel::sources() const {
  std::vector<gpu::RequestSource*> v;
  for (const auto& s : per_sm) v.push_back(s.get());
  return v;
}
double Kernel::max_compute_cycles() const {
  double m = 0;
  for (double c : compute_cycles) m = std::max(m, c);
  return m;
}

std::uint64_t tile_row_loads(const DenseOperand& m, std::uint32_t ti, std::uint32_t tj, std::uint32_t line) {
  const fmt::TileGrid g = m.grid();
  const std::uint64_t row_bytes = std::uint64_t(g.c_eff(tj)) * m.eb();
  return std::uint64_t(g.r_eff(ti)) * ((row_bytes + line - 1) / line);
}

std::vector<LinePiece> tile_lines(const DenseOperand& m, std::uint32_t ti, std::uint32_t tj, std::uint32_t line) {
  const fmt::TileGrid g = m.grid();
  const std::uint32_t re = g.r_eff(ti), ce = g.c_eff(tj);
  const unsigned eb = m.eb();
  std::vector<LinePiece> v;
  for (std::uint32_t r = 0; r < re; ++r) {
    const std::uint64_t row_a = m.base + std::uint64_t(g.row0(ti) + r) * m.pitch_bytes + std::uint64_t(g.col0(tj)) * eb;
    const std::uint64_t n_row = std::uint64_t(ce) * eb;
    for (std::uint64_t o = 0; o < n_row;) {
      const std::uint64_t a = row_a + o;
      const std::uint64_t n = std::min<std::uint64_t>(line - a % line, n_row - o);
      v.push_back({a, static_cast<std::uint32_t>(n), static_cast<std::uint32_t>(r * n_row + o)});
      o += n;
    }
  }
  return v;
}

namespace {

/// Splits [addr, addr + bytes.size()) into line-sized writes.
void push_writes(std::vector<std::pair<std::uint64_t, std::vector<std::uint8_t>>>& out, std::uint64_t addr,
                 const std::uint8_t* data, std::size_t bytes, std::uint32_t line) {
  std::size_t o = 0;
  while (o < bytes) {
    const std::uint64_t a = addr + o;
    const std::size_t n = std::min<std::size_t>(line - a % line, bytes - o);
    out.emplace_back(a, std::vector<std::uint8_t>(data + o, data + o + n));
    o += n;
  }
}

/// Per SM: tiles in batches; for each batch, optionally a header read per tile (a decision the kernel reads
/// before it touches the tile: tiles marked in `skip` are then not read), all line reads of its (unskipped)
/// tiles (data into per-tile buffers), then the writes the epilogue derives from that data. The first tile
/// read waits for all of the batch's header reads, the first write for all of its tile reads (after_reads).
class TileBatchSource : public RequestSource {
 public:
  using Reads = std::function<std::vector<LinePiece>(std::uint64_t tile)>;
  using Header = std::function<LinePiece(std::uint64_t tile)>;
  using Writes = std::vector<std::pair<std::uint64_t, std::vector<std::uint8_t>>>;
  using Epilogue = std::function<void(std::uint64_t tile, const std::vector<std::uint8_t>& data, Writes& out)>;

  TileBatchSource(std::vector<std::uint64_t> tiles, std::uint32_t batch, Reads reads, Epilogue epi,
                  Header header = nullptr, std::shared_ptr<const std::vector<bool>> skip = nullptr)
      : tiles_(std::move(tiles)), batch_(std::max<std::uint32_t>(1, batch)), reads_(std::move(reads)),
        epi_(std::move(epi)), header_(std::move(header)), skip_(std::move(skip)) {}

  bool next(MemRequest& r) override {
    for (;;) {
      if (phase_ == 0) {  // start a batch
        if (pos_ >= tiles_.size()) return false;
        const std::size_t n = std::min<std::size_t>(batch_, tiles_.size() - pos_);
        heads_.clear();
        pieces_.clear();
        bufs_.assign(n, {});
        for (std::size_t k = 0; k < n; ++k) {
          const std::uint64_t t = tiles_[pos_ + k];
          if (header_) heads_.push_back(header_(t));
          if (skip_ && (*skip_)[t]) continue;
          auto p = reads_(t);
          std::size_t total = 0;
          for (const auto& x : p) total = std::max<std::size_t>(total, x.host_offset + x.bytes);
          bufs_[k].assign(total, 0);
          for (const auto& x : p) pieces_.push_back({k, x});
        }
        batch_n_ = n;
        cursor_ = 0;
        phase_ = 1;
      }
      if (phase_ == 1) {  // header reads (data not kept: the host gave the decisions)
        if (cursor_ < heads_.size()) {
          const LinePiece& x = heads_[cursor_++];
          r = MemRequest{};
          r.addr = x.addr;
          r.bytes = x.bytes;
          r.write = false;
          return true;
        }
        cursor_ = 0;
        phase_ = 2;
      }
      if (phase_ == 2) {  // tile reads
        if (cursor_ < pieces_.size()) {
          const auto& [k, x] = pieces_[cursor_];
          r = MemRequest{};
          r.addr = x.addr;
          r.bytes = x.bytes;
          r.write = false;
          r.data = bufs_[k].data() + x.host_offset;
          r.after_reads = cursor_ == 0 && !heads_.empty();
          ++cursor_;
          return true;
        }
        writes_.clear();
        for (std::size_t k = 0; k < batch_n_; ++k)
          if (!(skip_ && (*skip_)[tiles_[pos_ + k]])) epi_(tiles_[pos_ + k], bufs_[k], writes_);
        cursor_ = 0;
        phase_ = 3;
        first_write_ = !pieces_.empty();
      }
      if (phase_ == 3) {  // writes
        if (cursor_ < writes_.size()) {
          auto& w = writes_[cursor_++];
          r = MemRequest{};
          r.addr = w.first;
          r.bytes = static_cast<std::uint32_t>(w.second.size());
          r.write = true;
          r.data = w.second.data();
          r.after_reads = first_write_;
          first_write_ = false;
          return true;
        }
        pos_ += batch_n_;
        phase_ = 0;
      }
    }
  }

 private:
  std::vector<std::uint64_t> tiles_;
  std::uint32_t batch_;
  Reads reads_;
  Epilogue epi_;
  Header header_;
  std::shared_ptr<const std::vector<bool>> skip_;
  std::size_t pos_ = 0, batch_n_ = 0, cursor_ = 0;
  int phase_ = 0;
  bool first_write_ = false;
  std::vector<LinePiece> heads_;
  std::vector<std::pair<std::size_t, LinePiece>> pieces_;
  std::vector<std::vector<std::uint8_t>> bufs_;
  Writes writes_;
};

/// A fixed list of requests (reads discard data unless a buffer is given).
class ListSource : public RequestSource {
 public:
  struct Req {
    std::uint64_t addr;
    std::uint32_t bytes;
    bool write;
    std::vector<std::uint8_t> data;
    bool dependent;
    bool after_reads;  ///< MemRequest::after_reads
  };
  explicit ListSource(std::vector<Req> reqs) : reqs_(std::move(reqs)) {}
  bool next(MemRequest& r) override {
    if (i_ >= reqs_.size()) return false;
    Req& q = reqs_[i_++];
    r = MemRequest{};
    r.addr = q.addr;
    r.bytes = q.bytes;
    r.write = q.write;
    r.data = q.data.empty() ? nullptr : q.data.data();
    r.dependent = q.dependent;
    r.after_reads = q.after_reads;
    return true;
  }

 private:
  std::vector<Req> reqs_;
  std::size_t i_ = 0;
};

std::vector<std::vector<std::uint64_t>> tiles_per_sm(std::uint64_t tiles, std::uint32_t sms) {
  std::vector<std::vector<std::uint64_t>> v(sms);
  for (std::uint64_t t = 0; t < tiles; ++t) v[t % sms].push_back(t);
  return v;
}

Kernel tile_kernel(const std::string& name, const DenseOperand& m, std::uint32_t sms, std::uint32_t line,
                   std::uint32_t batch, std::shared_ptr<const std::vector<bool>> skip, double cyc_line,
                   double cyc_tile, double issue_width, TileBatchSource::Epilogue epi,
                   TileBatchSource::Header header = nullptr) {
  Kernel k;
  k.name = name;
  const fmt::TileGrid g = m.grid();
  const std::uint64_t tc = g.tiles_c();
  auto all = tiles_per_sm(g.num_tiles(), sms);
  for (std::uint32_t s = 0; s < sms; ++s) {
    std::vector<std::uint64_t> mine;
    double cyc = 0;
    for (std::uint64_t t : all[s]) {
      const bool skipped = skip && (*skip)[t];
      if (skipped && !header) continue;  // without a header read a skipped tile is not the kernel's work
      mine.push_back(t);
      if (skipped) continue;
      const std::uint32_t ti = static_cast<std::uint32_t>(t / tc), tj = static_cast<std::uint32_t>(t % tc);
      cyc += cyc_tile + cyc_line * double(tile_row_loads(m, ti, tj, line));
    }
    k.compute_cycles.push_back(cyc / std::max(1.0, issue_width));
    DenseOperand mm = m;
    k.per_sm.push_back(std::make_unique<TileBatchSource>(
        std::move(mine), batch,
        [mm, tc, line](std::uint64_t t) {
          return tile_lines(mm, static_cast<std::uint32_t>(t / tc), static_cast<std::uint32_t>(t % tc), line);
        },
        epi, header, skip));
  }
  return k;
}

/// Non-zero count and max row count of a tile buffer (r_eff x c_eff elements, row-major).
void tile_stats(const std::vector<std::uint8_t>& data, std::uint32_t re, std::uint32_t ce, unsigned eb,
                std::uint32_t& nnz, std::uint32_t& width) {
  nnz = width = 0;
  for (std::uint32_t r = 0; r < re; ++r) {
    std::uint32_t rn = 0;
    for (std::uint32_t c = 0; c < ce; ++c) {
      const std::uint8_t* p = data.data() + (std::size_t(r) * ce + c) * eb;
      if (eb == 4) {
        std::uint32_t b;
        std::memcpy(&b, p, 4);
        rn += !fmt::is_zero_bits(b);
      } else {
        std::uint16_t b;
        std::memcpy(&b, p, 2);
        rn += !fmt::is_zero_bits(b);
      }
    }
    nnz += rn;
    width = std::max(width, rn);
  }
}

void store_u32(std::uint8_t* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

}  // namespace

Kernel make_producer(const DenseOperand& m, std::uint32_t sms, std::uint32_t line) {
  Kernel k;
  k.name = "producer";
  const fmt::TileGrid g = m.grid();
  const std::uint64_t tc = g.tiles_c();
  auto all = tiles_per_sm(g.num_tiles(), sms);
  for (std::uint32_t s = 0; s < sms; ++s) {
    std::vector<ListSource::Req> reqs;
    for (std::uint64_t t : all[s]) {
      for (const LinePiece& p : tile_lines(m, static_cast<std::uint32_t>(t / tc), static_cast<std::uint32_t>(t % tc), line)) {
        const std::uint8_t* src = m.host + (p.addr - m.base);
        reqs.push_back({p.addr, p.bytes, true, std::vector<std::uint8_t>(src, src + p.bytes), false, false});
      }
    }
    k.compute_cycles.push_back(0);
    k.per_sm.push_back(std::make_unique<ListSource>(std::move(reqs)));
  }
  return k;
}

Kernel make_memset(std::uint64_t base, std::uint64_t bytes, std::uint32_t sms, std::uint32_t line) {
  return make_memset(std::vector<std::pair<std::uint64_t, std::uint64_t>>{{base, bytes}}, sms, line);
}

Kernel make_memset(const std::vector<std::pair<std::uint64_t, std::uint64_t>>& ranges, std::uint32_t sms,
                   std::uint32_t line) {
  Kernel k;
  k.name = "memset";
  std::vector<std::vector<ListSource::Req>> reqs(sms);
  std::uint64_t i = 0;
  for (const auto& [base, bytes] : ranges)
    for (std::uint64_t o = 0; o < bytes; ++i) {
      const std::uint64_t a = base + o;
      const std::uint64_t n = std::min<std::uint64_t>(line - a % line, bytes - o);
      reqs[i % sms].push_back({a, static_cast<std::uint32_t>(n), true, std::vector<std::uint8_t>(n, 0), false, false});
      o += n;
    }
  for (std::uint32_t s = 0; s < sms; ++s) {
    k.compute_cycles.push_back(0);
    k.per_sm.push_back(std::make_unique<ListSource>(std::move(reqs[s])));
  }
  return k;
}

Kernel make_profile(const DenseOperand& m, std::uint64_t count_table, const BaselineConfig& c, std::uint32_t sms,
                    std::uint32_t line) {
  const fmt::TileGrid g = m.grid();
  const std::uint64_t tc = g.tiles_c();
  const unsigned eb = m.eb();
  return tile_kernel("sw_profile", m, sms, line, c.tiles_in_flight_per_sm, nullptr, c.profile_cycles_per_line,
                     c.profile_cycles_per_tile, c.issue_width,
                     [g, tc, eb, count_table](std::uint64_t t, const std::vector<std::uint8_t>& d, TileBatchSource::Writes& out) {
                       std::uint32_t nnz, width;
                       tile_stats(d, g.r_eff(static_cast<std::uint32_t>(t / tc)), g.c_eff(static_cast<std::uint32_t>(t % tc)), eb, nnz, width);
                       std::uint8_t b[4];
                       store_u32(b, nnz);
                       out.emplace_back(count_table + 4 * t, std::vector<std::uint8_t>(b, b + 4));
                     });
}

Kernel make_count_pass(const DenseOperand& m, std::uint64_t count_array, const BaselineConfig& c, std::uint32_t sms,
                       std::uint32_t line) {
  const fmt::TileGrid g = m.grid();
  const std::uint64_t tc = g.tiles_c();
  const unsigned eb = m.eb();
  return tile_kernel("sw_profile", m, sms, line, c.tiles_in_flight_per_sm, nullptr, c.count_cycles_per_line,
                     c.count_cycles_per_tile, c.issue_width,
                     [g, tc, eb, count_array](std::uint64_t t, const std::vector<std::uint8_t>& d, TileBatchSource::Writes& out) {
                       std::uint32_t nnz, width;
                       tile_stats(d, g.r_eff(static_cast<std::uint32_t>(t / tc)), g.c_eff(static_cast<std::uint32_t>(t % tc)), eb, nnz, width);
                       std::uint8_t b[8];
                       store_u32(b, nnz);
                       store_u32(b + 4, width);
                       out.emplace_back(count_array + 8 * t, std::vector<std::uint8_t>(b, b + 8));
                     });
}

std::vector<fmt::TileHeader> scan_headers(const DenseOperand& m, const std::vector<std::uint32_t>& nnz,
                                          const std::vector<std::uint32_t>& width, std::uint32_t threshold_q16,
                                          bool size_rule, fmt::TileFormat f, std::uint64_t* payload_bytes) {
  const fmt::TileGrid g = m.grid();
  std::vector<fmt::TileHeader> h(g.num_tiles());
  std::uint64_t off = 0;
  const auto et = static_cast<fmt::ElemType>(m.dtype);
  for (std::uint32_t ti = 0; ti < g.tiles_r(); ++ti)
    for (std::uint32_t tj = 0; tj < g.tiles_c(); ++tj) {
      const std::size_t t = std::size_t(ti) * g.tiles_c() + tj;
      const std::uint32_t re = g.r_eff(ti), ce = g.c_eff(tj);
      fmt::TileHeader& x = h[t];
      x.nnz = nnz[t];
      const bool not_smaller = size_rule && fmt::sparse_not_smaller(f, re, ce, width[t], nnz[t], g.tile_cols, et);
      if (regmap::tile_is_dense(nnz[t], std::uint64_t(re) * ce, threshold_q16) || not_smaller) {
        x.format = static_cast<std::uint8_t>(fmt::TileFormat::Dense);
      } else {
        x.format = static_cast<std::uint8_t>(f);
        x.width = f == fmt::TileFormat::Ell && nnz[t] > 0 ? static_cast<std::uint16_t>(width[t]) : 0;
      }
      off = fmt::align_up(off, fmt::kPayloadAlignBytes);
      x.offset = off;
      off += fmt::tile_payload_bytes(x, re, ce, g.tile_cols, et);
    }
  if (payload_bytes) *payload_bytes = fmt::align_up(off, fmt::kPayloadAlignBytes);
  return h;
}

Kernel make_scan(std::uint64_t count_array, std::uint32_t entry_bytes, const std::vector<fmt::TileHeader>& headers,
                 const SparseOutput& out, const BaselineConfig& c, std::uint32_t sms, std::uint32_t line) {
  const std::uint64_t eb = entry_bytes;
  Kernel k;
  k.name = "sw_scan";
  const std::uint64_t tiles = headers.size();
  const std::uint64_t chunk = (tiles + sms - 1) / sms;
  for (std::uint32_t s = 0; s < sms; ++s) {
    std::vector<ListSource::Req> reqs;
    const std::uint64_t t0 = std::min(tiles, s * chunk), t1 = std::min(tiles, t0 + chunk);
    if (t1 > t0) {
      // Read this chunk's profile entries; look-back: read the predecessor's entry (entry_bytes).
      for (std::uint64_t o = t0 * eb; o < t1 * eb;) {
        const std::uint64_t a = count_array + o;
        const std::uint64_t n = std::min<std::uint64_t>(line - a % line, t1 * eb - o);
        reqs.push_back({a, static_cast<std::uint32_t>(n), false, {}, false, false});
        o += n;
      }
      if (t0 > 0) reqs.push_back({count_array + eb * (t0 - 1), static_cast<std::uint32_t>(eb), false, {}, true, false});
      std::vector<std::uint8_t> hb((t1 - t0) * fmt::kHeaderBytes);
      for (std::uint64_t t = t0; t < t1; ++t) fmt::encode_header(headers[t], hb.data() + (t - t0) * fmt::kHeaderBytes);
      std::vector<std::pair<std::uint64_t, std::vector<std::uint8_t>>> w;
      push_writes(w, out.header_base + t0 * fmt::kHeaderBytes, hb.data(), hb.size(), line);
      bool first = true;  // the headers use every entry read above: the first write waits for all of them
      for (auto& x : w) {
        reqs.push_back({x.first, static_cast<std::uint32_t>(x.second.size()), true, std::move(x.second), false, first});
        first = false;
      }
    }
    k.compute_cycles.push_back(double(t1 - t0) * c.scan_cycles_per_tile / std::max<std::uint32_t>(1, c.issue_width));
    k.per_sm.push_back(std::make_unique<ListSource>(std::move(reqs)));
  }
  return k;
}

Kernel make_scatter(const DenseOperand& m, const std::vector<fmt::TileHeader>& headers, fmt::TileFormat f,
                    const SparseOutput& out, const BaselineConfig& c, std::uint32_t sms, std::uint32_t line) {
  const fmt::TileGrid g = m.grid();
  const std::uint64_t tc = g.tiles_c();
  auto skip = std::make_shared<std::vector<bool>>(headers.size());
  for (std::size_t t = 0; t < headers.size(); ++t)
    (*skip)[t] = headers[t].fmt() == fmt::TileFormat::Dense || headers[t].nnz == 0;
  fmt::CompactOptions opt;
  opt.tile_rows = g.tile_rows;
  opt.tile_cols = g.tile_cols;
  opt.threshold = 2.0;  // the scan decided DENSE; here every tile is packed sparse
  opt.dense_if_not_smaller = false;
  opt.sparse_format = f;
  opt.elem = static_cast<fmt::ElemType>(m.dtype);
  auto hdr = std::make_shared<std::vector<fmt::TileHeader>>(headers);
  // Every tile's header (written by the scan) is read first: it says whether the tile is packed and where.
  const std::uint64_t header_base = out.header_base;
  TileBatchSource::Header header = [header_base](std::uint64_t t) {
    return LinePiece{header_base + t * fmt::kHeaderBytes, static_cast<std::uint32_t>(fmt::kHeaderBytes), 0};
  };
  Kernel k = tile_kernel(
      "sw_scatter", m, sms, line, c.tiles_in_flight_per_sm, skip, c.scatter_cycles_per_line,
      c.scatter_cycles_per_tile, c.issue_width,
      [g, tc, opt, hdr, out, line](std::uint64_t t, const std::vector<std::uint8_t>& d, TileBatchSource::Writes& w) {
        const std::uint32_t re = g.r_eff(static_cast<std::uint32_t>(t / tc)), ce = g.c_eff(static_cast<std::uint32_t>(t % tc));
        const fmt::TiledMatrix one = fmt::compact(d.data(), re, ce, ce, opt);
        const std::size_t n = fmt::tile_payload_bytes(one.headers[0], re, ce, g.tile_cols, opt.elem);
        push_writes(w, out.payload_base + (*hdr)[t].offset, one.payload.data(), n, line);
      },
      header);
  return k;
}

Kernel make_consumer(const DenseOperand& m, const std::vector<fmt::TileHeader>& headers, const SparseOutput& out,
                     const BaselineConfig& c, std::uint32_t sms, std::uint32_t line,
                     const std::vector<std::uint64_t>& header_slot) {
  Kernel k;
  k.name = "consumer";
  const fmt::TileGrid g = m.grid();
  const std::uint64_t tc = g.tiles_c();
  const auto et = static_cast<fmt::ElemType>(m.dtype);
  auto all = tiles_per_sm(g.num_tiles(), sms);
  for (std::uint32_t s = 0; s < sms; ++s) {
    std::vector<ListSource::Req> reqs;
    double cyc = 0;
    for (std::uint64_t t : all[s]) {
      const std::uint32_t ti = static_cast<std::uint32_t>(t / tc), tj = static_cast<std::uint32_t>(t % tc);
      const std::uint64_t slot = header_slot.empty() ? t : header_slot[t];
      reqs.push_back({out.header_base + slot * fmt::kHeaderBytes, static_cast<std::uint32_t>(fmt::kHeaderBytes), false, {}, false, false});
      const fmt::TileHeader& h = headers[t];
      if (h.fmt() == fmt::TileFormat::Dense) {
        bool first = true;
        for (const LinePiece& p : tile_lines(m, ti, tj, line)) {
          reqs.push_back({p.addr, p.bytes, false, {}, first, false});
          first = false;
        }
        cyc += c.consumer_cycles_per_line * double(tile_row_loads(m, ti, tj, line));
      } else if (h.nnz > 0) {
        const std::uint64_t n = fmt::tile_payload_bytes(h, g.r_eff(ti), g.c_eff(tj), g.tile_cols, et);
        bool first = true;
        for (std::uint64_t o = 0; o < n;) {
          const std::uint64_t a = out.payload_base + h.offset + o;
          const std::uint64_t len = std::min<std::uint64_t>(line - a % line, n - o);
          reqs.push_back({a, static_cast<std::uint32_t>(len), false, {}, first, false});
          first = false;
          cyc += c.consumer_cycles_per_line;
          o += len;
        }
      }
    }
    k.compute_cycles.push_back(cyc / std::max<std::uint32_t>(1, c.issue_width));
    k.per_sm.push_back(std::make_unique<ListSource>(std::move(reqs)));
  }
  return k;
}

}  // namespace spartan::hw
