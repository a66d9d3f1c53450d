#include "spartan/hw/gpu/l2_slice.h"

#include <algorithm>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "spartan/hw/gpu/backing_store.h"
#include "spartan/hw/gpu/memory_controller.h"

namespace spartan::hw::gpu {

void L2SliceStats::register_with(StatsGroup& g) const {
  g.counter("reads", reads).counter("writes", writes).counter("read_hits", read_hits)
      .counter("read_misses", read_misses).counter("write_hits", write_hits).counter("write_misses", write_misses)
      .counter("mshr_merges", mshr_merges, "requests served by a fill already in flight")
      .counter("mshr_stalls", mshr_stalls, "misses that waited for a free MSHR")
      .counter("writeback_stalls", writeback_stalls, "requests that waited for a write-back buffer entry")
      .counter("sector_misses", sector_misses).counter("evictions", evictions).counter("writebacks", writebacks)
      .counter("bytes_read", bytes_read).counter("bytes_written", bytes_written).counter("fill_bytes", fill_bytes)
      .counter("writeback_bytes", writeback_bytes)
      .histogram("latency", latency_ps, "ps", "arrival at the slice -> response")
      .derived("hit_rate", [this] {
        std::uint64_t h = read_hits + write_hits, m = read_misses + write_misses;
        return h + m ? double(h) / double(h + m) : 0.0;
      });
}

L2Slice::L2Slice(sc_core::sc_module_name name, const GpuConfig& cfg, const AddressMap& map, std::uint32_t index,
                 StatsRegistry& stats)
    : sc_module(name),
      socket("socket"),
      mem_socket("mem_socket"),
      store_socket("store_socket"),
      map_(map),
      index_(index),
      sets_(cfg.l2.slice.sets),
      ways_(cfg.l2.slice.ways),
      line_bytes_(cfg.l2.slice.line_bytes),
      sector_bytes_(cfg.l2.slice.sector_bytes),
      spl_(line_bytes_ / sector_bytes_),
      bytes_per_cycle_(cfg.l2.slice.bytes_per_cycle),
      clk_(cfg.l2_clock()),
      hit_ps_(clk_.cycles_to_ps(cfg.l2.slice.hit_latency_cycles)),
      half_hit_ps_(hit_ps_ / 2),
      lines_(std::size_t(sets_) * ways_),
      tag_(lines_.size(), 0),
      lru_order_(lines_.size()),
      fp_(lines_.size() + 64, 0),
      set_bits_(unsigned(__builtin_ctz(sets_))),
      ready_(std::size_t(sets_) * ways_ * spl_, 0),
      words_per_sector_((sector_bytes_ + 63) / 64),
      dmi_(std::make_shared<DmiCache>(64)),
      scratch_(line_bytes_) {
  written_.assign(std::size_t(sets_) * ways_ * spl_ * words_per_sector_, 0);
  socket.register_b_transport(this, &L2Slice::b_transport);
  socket.register_transport_dbg(this, &L2Slice::transport_dbg);
  store_socket.register_invalidate_direct_mem_ptr(this, &L2Slice::invalidate_dmi);
  line_div_ = FastDiv(line_bytes_);
  sector_div_ = FastDiv(sector_bytes_);
  for (std::size_t i = 0; i < lru_order_.size(); ++i) lru_order_[i] = std::uint16_t(i % ways_);
  for (std::uint32_t b = 0; b <= line_bytes_; ++b)
    busy_bytes_ps_.push_back(clk_.cycles_to_ps(double((b + bytes_per_cycle_ - 1) / bytes_per_cycle_)));
  for (std::uint32_t i = 0; i < cfg.l2.slice.mshr_entries; ++i) mshr_free_.push(0);
  for (std::uint32_t i = 0; i < cfg.l2.slice.writeback_entries; ++i) wb_free_.push(0);
  stats_.register_with(stats.add_group("l2[" + std::to_string(index) + "]", "l2_slice"));
}

std::uint8_t* L2Slice::dmi_ptr(std::uint64_t addr, bool write) {
  std::uint64_t page = addr / BackingStore::kPageBytes;
  DmiCache::Entry& e = dmi_->at(page);
  if (e.page != page || (write && !e.writable)) {
    tlm::tlm_generic_payload gp;
    tlm::tlm_dmi dmi;
    gp.set_address(page * BackingStore::kPageBytes);
    gp.set_command(write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
    if (!store_socket->get_direct_mem_ptr(gp, dmi) || !dmi.is_read_allowed() || (write && !dmi.is_write_allowed()))
      SC_REPORT_FATAL(name(), "backing store refused DMI");
    e.page = page;
    e.ptr = dmi.get_dmi_ptr() + (page * BackingStore::kPageBytes - dmi.get_start_address());
    e.writable = dmi.is_write_allowed();
  }
  return e.ptr + addr % BackingStore::kPageBytes;
}

void L2Slice::invalidate_dmi(sc_dt::uint64 start, sc_dt::uint64 end) {
  const std::uint64_t first = start / BackingStore::kPageBytes, last = end / BackingStore::kPageBytes;
  for (DmiCache::Entry& e : dmi_->e)  // a few thousand entries; only when a zero page becomes real
    if (e.page >= first && e.page <= last) e = DmiCache::Entry{};
}

// The per-request helpers of access() (dram, fetch, lookup, victim, touch) are always inlined: one call
// level less per request (callgrind, bench_hw_gpu v100 2: -1.5 % of all instructions with the SM side).
[[gnu::always_inline]] inline ps_t L2Slice::dram(std::uint64_t local, std::uint32_t bytes, bool write, ps_t t) {
  const ps_t now = now_;
  if (mc_) return mc_->access(index_, local, bytes, write, std::max(t, now));
  mem_gp_.set_command(write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
  mem_gp_.set_address(local);
  mem_gp_.set_data_ptr(scratch_.data());  // timing only: data lives in the BackingStore
  mem_gp_.set_data_length(bytes);
  mem_gp_.set_streaming_width(bytes);
  mem_gp_.set_byte_enable_ptr(nullptr);
  mem_gp_.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  sc_core::sc_time d = sc_core::sc_time::from_value(t > now ? t - now : 0);
  mem_socket->b_transport(mem_gp_, d);
  return now + d.value();
}

[[gnu::always_inline]] inline ps_t L2Slice::fetch(std::uint64_t line_key, std::uint32_t mask, ps_t t) {
  // One DRAM request per run of contiguous missing sectors; the fill completes with the last one.
  ps_t done = t;
  std::uint32_t s = 0;
  while (s < spl_) {
    if (!(mask >> s & 1)) { ++s; continue; }
    std::uint32_t e = s;
    while (e < spl_ && (mask >> e & 1)) ++e;
    std::uint32_t bytes = (e - s) * sector_bytes_;
    done = std::max(done, dram(line_key * line_bytes_ + std::uint64_t(s) * sector_bytes_, bytes, false, t));
    stats_.sector_misses += e - s;
    stats_.fill_bytes += bytes;
    s = e;
  }
  return done;
}

// The write-back reads the line's dirty sectors out of the data array: that occupancy delays later requests, not
// the write-back itself (GPGPU-Sim's L2 data port charges an eviction its modified bytes).
void L2Slice::book_writeback_read(const Line& l, ps_t t) {
  data_busy_.book(t, busy_ps(std::uint32_t(__builtin_popcount(l.dirty)) * sector_bytes_));
}

ps_t L2Slice::evict(Line& l, ps_t t) {
  ps_t done = t;
  if (!l.valid) return done;
  ++stats_.evictions;
  if (l.dirty) {
    ++stats_.writebacks;
    if (mc_) {  // one call for the line's dirty sectors, each still its own request (see write_sectors)
      done = std::max(done, mc_->write_sectors(index_, l.key * line_bytes_, sector_bytes_, l.dirty, std::max(t, now_)));
      stats_.writeback_bytes += std::uint64_t(__builtin_popcount(l.dirty)) * sector_bytes_;
    } else {
      for (std::uint32_t s = 0; s < spl_; ++s)
        if (l.dirty >> s & 1) {
          done = std::max(done, dram(l.key * line_bytes_ + std::uint64_t(s) * sector_bytes_, sector_bytes_, true, t));
          stats_.writeback_bytes += sector_bytes_;
        }
    }
  }
  l.valid = l.dirty = l.partial = 0;
  set_tag(std::size_t(&l - lines_.data()));
  return done;
}

void L2Slice::prefetch(std::uint64_t addr, std::uint64_t local) const {
  const std::uint64_t key = line_div_.div(local);
  const std::size_t b = std::size_t(key & (sets_ - 1)) * ways_;
  const char* tags = reinterpret_cast<const char*>(&tag_[b]);
  for (std::size_t i = 0; i < ways_ * sizeof(std::uint64_t); i += 64) __builtin_prefetch(tags + i);
  // No hint here for the LRU way's record (the victim a miss checks): its address needs lru_order_[b] loaded
  // first, a host-cache miss of its own; without it both streams of bench_hw_gpu v100 8 ran ~3 % faster on the
  // Zen 5 host (docs/bench/gpu.md, nineteenth session). access() asks for it once lru_order_[b] has arrived.
  __builtin_prefetch(&lru_order_[b]);
  __builtin_prefetch(&fp_[b]);
  const std::uint64_t page = addr / BackingStore::kPageBytes;
  const DmiCache::Entry& e = dmi_->at(page);
  if (e.page == page) __builtin_prefetch(e.ptr + addr % BackingStore::kPageBytes);
}

[[gnu::always_inline]] inline void L2Slice::lookup(std::size_t set_base, std::uint64_t key, int& way,
                                                  int& first_invalid) const {
  way = first_invalid = -1;
  const std::uint64_t* tag = &tag_[set_base];
  const std::uint64_t k = key + 1;
#if defined(__SSE2__)
  if (ways_ <= 64) {
    // Bit w of `eq` / `zero`: way w's fingerprint matches / is 0 (invalid). Bytes past the set's ways
    // (the next set's, or the padding) are masked off.
    const std::uint8_t* f = &fp_[set_base];
    const __m128i want = _mm_set1_epi8(char(fingerprint(key))), none = _mm_setzero_si128();
    std::uint64_t eq = 0, zero = 0;
    for (std::uint32_t c = 0; c < ways_; c += 16) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(f + c));
      eq |= std::uint64_t(std::uint32_t(_mm_movemask_epi8(_mm_cmpeq_epi8(v, want)))) << c;
      zero |= std::uint64_t(std::uint32_t(_mm_movemask_epi8(_mm_cmpeq_epi8(v, none)))) << c;
    }
    const std::uint64_t live = ways_ == 64 ? ~std::uint64_t(0) : (std::uint64_t(1) << ways_) - 1;
    eq &= live;
    for (; eq; eq &= eq - 1) {
      const int w = __builtin_ctzll(eq);
      if (tag[w] == k) { way = w; return; }
    }
    zero &= live;
    if (zero) first_invalid = __builtin_ctzll(zero);
    return;
  }
#endif
  for (std::uint32_t w = 0; w < ways_; ++w) {
    if (tag[w] == k) { way = int(w); return; }
    if (!tag[w] && first_invalid < 0) first_invalid = int(w);
  }
}

[[gnu::always_inline]] inline int L2Slice::victim(std::uint32_t set, ps_t t, int first_invalid) {
  // First invalid way; else the least recently used way whose fills have all arrived; else the LRU way.
  if (first_invalid >= 0) return first_invalid;
  const std::size_t b = std::size_t(set) * ways_;
  const std::uint16_t* order = &lru_order_[b];
  for (std::uint32_t i = 0; i < ways_; ++i)
    if (lines_[b + order[i]].ready_max <= t) return order[i];
  return order[0];
}

[[gnu::always_inline]] inline void L2Slice::touch(std::size_t set_base, std::uint32_t way) {
  std::uint16_t* order = &lru_order_[set_base];
  std::uint32_t i = 0;
  while (order[i] != way) ++i;
  std::memmove(order + i, order + i + 1, (ways_ - 1 - i) * sizeof(std::uint16_t));
  order[ways_ - 1] = std::uint16_t(way);
}

bool L2Slice::mark_written(std::size_t li, std::uint32_t s, std::uint32_t lo, std::uint32_t hi, bool fresh) {
  std::uint64_t* w = &written_[(li * spl_ + s) * words_per_sector_];
  if (fresh) std::fill(w, w + words_per_sector_, std::uint64_t(0));
  for (std::uint32_t b = lo; b < hi;) {  // set bits [lo, hi), one word at a time
    const std::uint32_t i = b / 64, first = b % 64, n = std::min<std::uint32_t>(64 - first, hi - b);
    w[i] |= (n == 64 ? ~std::uint64_t(0) : ((std::uint64_t(1) << n) - 1)) << first;
    b += n;
  }
  for (std::uint32_t i = 0; i < words_per_sector_; ++i) {
    const std::uint32_t n = std::min<std::uint32_t>(64, sector_bytes_ - i * 64);
    if (w[i] != (n == 64 ? ~std::uint64_t(0) : (std::uint64_t(1) << n) - 1)) return false;
  }
  return true;
}

bool L2Slice::contains(std::uint64_t addr) const {
  auto sa = map_.to_slice(addr);
  std::uint64_t key = line_div_.div(sa.local);
  std::uint32_t set = std::uint32_t(key & (sets_ - 1));
  for (std::uint32_t w = 0; w < ways_; ++w)
    if (tag_[std::size_t(set) * ways_ + w] == key + 1) return true;
  return false;
}

ps_t L2Slice::flush() {
  now_ = sc_core::sc_time_stamp().value();
  ps_t now = std::max<ps_t>(now_, data_busy_.latest_end());
  // Write-backs posted before the flush may still be on their way to DRAM: the flush is done when they are
  // too (review of 2026-12-02: only the lines the flush itself evicted were waited for).
  ps_t done = wb_free_.empty() ? now : std::max(now, wb_free_.back());
  for (auto& l : lines_) {
    if (l.valid && l.dirty) book_writeback_read(l, now);
    done = std::max(done, evict(l, now));
  }
  std::fill(ready_.begin(), ready_.end(), 0);
  for (auto& l : lines_) l.ready_max = 0;
  return done;
}

void L2Slice::b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
  ps_t now = sc_core::sc_time_stamp().value();
  ps_t t = now + delay.value();
  ps_t resp = access(gp, now, t);
  if (gp.is_response_ok()) delay = sc_core::sc_time::from_value(resp - now);
}

unsigned int L2Slice::transport_dbg(tlm::tlm_generic_payload& gp) {
  const std::uint64_t addr = gp.get_address();
  const std::uint32_t bytes = gp.get_data_length();
  if (bytes == 0 || line_div_.mod(addr) + bytes > line_bytes_ || gp.get_byte_enable_ptr()) {
    gp.set_response_status(tlm::TLM_GENERIC_ERROR_RESPONSE);
    return 0;
  }
  std::uint8_t* mem = dmi_ptr(addr, gp.is_write());
  if (gp.is_write())
    std::memcpy(mem, gp.get_data_ptr(), bytes);
  else
    std::memcpy(gp.get_data_ptr(), mem, bytes);
  gp.set_response_status(tlm::TLM_OK_RESPONSE);
  return bytes;
}

ps_t L2Slice::access(tlm::tlm_generic_payload& gp, ps_t now, ps_t t) {
  return access(gp, now, t, map_.to_slice(gp.get_address()).local);
}

ps_t L2Slice::access(tlm::tlm_generic_payload& gp, ps_t now, ps_t t, std::uint64_t local) {
  now_ = now;
  const std::uint64_t addr = gp.get_address();
  const std::uint32_t bytes = gp.get_data_length();
  const bool write = gp.is_write();
  std::uint64_t off = line_div_.mod(addr);
  if (bytes == 0 || off + bytes > line_bytes_ || gp.get_byte_enable_ptr()) {
    gp.set_response_status(bytes == 0 || off + bytes > line_bytes_ ? tlm::TLM_BURST_ERROR_RESPONSE
                                                                    : tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE);
    return t;
  }
  const std::uint64_t key = line_div_.div(local);
  const std::uint32_t set = std::uint32_t(key & (sets_ - 1));
  const std::size_t set_base = std::size_t(set) * ways_;
  // The least recently used way's record and fill times, which a miss reads (victim) and rewrites: the LRU
  // order was prefetched with the set (prefetch(), before the crossbar's request booking), so ask for the
  // record now, ahead of the data copy and the lookup (a hint only; twenty-first session, docs/bench/gpu.md).
  {
    const std::uint32_t lru = lru_order_[set_base];
    __builtin_prefetch(&lines_[set_base + lru]);
    __builtin_prefetch(&ready_[(set_base + lru) * spl_]);
  }
  // Functional data path (DMI into the backing store; lines never cross a 64 KiB page).
  std::uint8_t* mem = dmi_ptr(addr, write);
  if (write) {
    std::memcpy(mem, gp.get_data_ptr(), bytes);
    if (!observers_.empty()) {
      L2WriteEvent ev{index_, addr, gp.get_data_ptr(), bytes, t};
      for (auto* o : observers_) o->on_l2_write(ev);
    }
  } else {
    std::memcpy(gp.get_data_ptr(), mem, bytes);
  }

  // Timing.
  const std::uint32_t s0 = std::uint32_t(sector_div_.div(off)), s1 = std::uint32_t(sector_div_.div(off + bytes - 1));
  const std::uint32_t need = std::uint32_t(((std::uint64_t(1) << (s1 + 1)) - 1) & ~((std::uint64_t(1) << s0) - 1));
  ps_t start = data_busy_.book(t, busy_ps(bytes));

  Line* base = &lines_[set_base];
  int way, first_invalid;
  lookup(set_base, key, way, first_invalid);
  bool present = way >= 0;
  if (!present) {
    way = victim(set, start, first_invalid);
    if (base[way].valid && base[way].dirty) {  // needs a write-back buffer entry
      // Its dirty sectors are read out of the array right after this request's own slot (before any wait for
      // a buffer entry below: booked at the slot, the read-out extends the latest busy stretch in place,
      // where booked at the entry's free time it sent the slice's later requests down the out-of-order
      // path, +6 % simulator instructions on bench_hw_gpu v100 2).
      book_writeback_read(base[way], start);
      if (wb_free_.top() > start) {
        ++stats_.writeback_stalls;
        start = wb_free_.top();
      }
      wb_free_.replace_top(evict(base[way], start));
    } else {
      evict(base[way], start);
    }
    base[way].key = key;
    base[way].valid = base[way].dirty = base[way].partial = 0;
    base[way].ready_max = 0;
  }
  Line& l = base[way];
  ps_t* ready = &ready_[(std::size_t(set) * ways_ + way) * spl_];
  if (!present) std::fill(ready, ready + spl_, ps_t(0));
  const std::size_t li = set_base + std::size_t(way);
  touch(set_base, std::uint32_t(way));

  // Sectors that must come from DRAM: a read needs every touched sector that is missing or only partly
  // written (partial); a write needs none ("lazy fetch on read", header). A write covers sector s completely
  // iff off <= s * sector and (s + 1) * sector <= off + bytes, i.e. s in [ceil(off / sector),
  // floor((off + bytes) / sector)) (a sub-range of [s0, s1]); the other touched sectors that are missing
  // become partial. Per-sector loops below visit only the set bits of their masks.
  std::uint32_t full = 0;
  if (write) {
    const std::uint32_t lo = std::uint32_t(sector_div_.div(off + sector_bytes_ - 1));
    const std::uint32_t hi = std::uint32_t(sector_div_.div(off + bytes));
    if (hi > lo) full = std::uint32_t(((std::uint64_t(1) << hi) - 1) & ~((std::uint64_t(1) << lo) - 1));
  }
  // Touched sectors neither present nor fully written by this request: a read fetches them; a write
  // allocates them partial. Either way the access is not a hit.
  const std::uint32_t absent = need & ~l.valid & ~full;
  const std::uint32_t missing = write ? 0u : absent | (need & l.partial);
  ps_t resp = start + hit_ps_;
  bool merged = false;
  for (std::uint32_t m = need & l.valid & ~full & ~missing; m; m &= m - 1) {
    const int s = __builtin_ctz(m);
    if (ready[s] > start) {
      merged = true;
      resp = std::max(resp, ready[s] + half_hit_ps_);
    }
  }
  if (missing) {
    ps_t t_miss = start + half_hit_ps_;
    if (mshr_free_.top() > t_miss) {
      ++stats_.mshr_stalls;
      t_miss = mshr_free_.top();
    }
    ps_t fill = fetch(key, missing, t_miss);
    mshr_free_.replace_top(fill);
    for (std::uint32_t m = missing; m; m &= m - 1) ready[__builtin_ctz(m)] = fill;
    l.ready_max = std::max(l.ready_max, fill);
    l.valid |= missing;
    l.partial &= ~missing;
    resp = std::max(resp, fill + half_hit_ps_);
  }
  const std::uint32_t alloc = write ? full | absent : 0u;  // written without a fill: data present at start
  for (std::uint32_t m = alloc; m; m &= m - 1) {
    const int s = __builtin_ctz(m);
    ready[s] = std::max(ready[s], start);
  }
  if (write) {
    l.valid |= alloc;
    // Touched sectors this write covers only partly and that are not whole yet (absent, or partial): at
    // most the first and the last. Their byte masks grow; a sector whose every byte is written is whole.
    std::uint32_t part = l.partial & ~full;
    for (std::uint32_t m = need & ~full & (absent | l.partial); m; m &= m - 1) {
      const std::uint32_t s = std::uint32_t(__builtin_ctz(m));
      const std::uint64_t base_b = std::uint64_t(s) * sector_bytes_;
      const std::uint32_t lo = std::uint32_t(std::max<std::uint64_t>(off, base_b) - base_b);
      const std::uint32_t hi = std::uint32_t(std::min<std::uint64_t>(off + bytes, base_b + sector_bytes_) - base_b);
      if (mark_written(li, s, lo, hi, (absent >> s) & 1))
        part &= ~(1u << s);
      else
        part |= 1u << s;
    }
    l.partial = part;
    l.dirty |= need;
  }
  set_tag(li);

  bool hit = present && !absent && !missing;
  if (merged && hit) ++stats_.mshr_merges;
  if (write) {
    ++stats_.writes;
    stats_.bytes_written += bytes;
    (hit ? stats_.write_hits : stats_.write_misses)++;
  } else {
    ++stats_.reads;
    stats_.bytes_read += bytes;
    (hit ? stats_.read_hits : stats_.read_misses)++;
  }
  stats_.latency_ps.add(resp - t);
  gp.set_response_status(tlm::TLM_OK_RESPONSE);
  return resp;
}

}  // namespace spartan::hw::gpu
