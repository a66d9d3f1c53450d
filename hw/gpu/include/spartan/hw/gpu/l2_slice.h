// One L2 slice: set-associative, write-back, write-allocate, sectored lines, LRU replacement, MSHRs with
// miss merging. Target socket from the crossbar (global addresses; a request must lie inside one line),
// initiator socket to its memory controller (fills and writebacks, slice-local addresses), and a socket
// to the BackingStore used through DMI for the data.
//
// Timing/functional split (as in GPGPU-Sim and gem5's functional accesses): the slice keeps tags and
// per-sector state (valid, dirty, time the sector's data arrives), not data; the values of every access go
// straight to the BackingStore, so what is written is what is read back whatever the cache state.
//
// Timing of a request arriving at t (L2 cycles, H = hit_latency_cycles):
//  - the data array is reserved for ceil(bytes / bytes_per_cycle) cycles from start = max(t, busy_until);
//  - all sectors valid and arrived:           response at start + H                       (hit)
//  - sectors valid but their fill still due:  at max(start + H, arrival + H/2)             (MSHR merge)
//  - some sector missing: an MSHR is taken (stall while all are busy), the missing sectors are read from
//    DRAM at start + H/2, response at fill + H/2 (miss). Writes never fetch: a full-sector write allocates
//    the sector valid, a partial write to a missing sector allocates it *partial* (written bytes only,
//    dirty, no fill: "lazy fetch on read", Accel-Sim's L2 write-allocate policy `L` in its QV100 config,
//    from the per-sector byte masks of NVIDIA's L2); a later read of a partial sector fetches it (miss),
//    and its write-back writes the whole sector (one masked DRAM burst). The slice keeps each partial
//    sector's byte mask: once partial writes have covered every byte of it (a row of 196 floats ends in
//    the middle of a sector, the next row's write completes it) the sector is whole and a read hits.
//    Until the eighteenth session a partial write fetched the sector first, which charged a DRAM round
//    trip to every small store (a software kernel's 4-byte count writes) that real L2s do not.
//  - a dirty victim is written back as a posted write through a write-back buffer of writeback_entries:
//    the requester does not wait for DRAM, but when every entry is still draining the request stalls
//    until one frees (this is what throttles a write stream to the DRAM bandwidth). Reading its dirty
//    sectors out occupies the data array for ceil(dirty bytes / bytes_per_cycle) cycles after the request's
//    own booking, which delays later requests, not this write-back (GPGPU-Sim's L2 data port charges an
//    eviction its modified bytes; thirty-ninth session). Fills are not charged: GPGPU-Sim writes them through
//    a separate fill port, and here requests already book the array before their misses go out, so fills
//    could only bunch through DRAM reordering (a fill port of bytes_per_cycle, tried, moved the streams'
//    end times by at most 0.05 %; docs/gpu-model.md).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include "spartan/hw/address_map.h"
#include "spartan/hw/gpu/busy_intervals.h"
#include "spartan/hw/gpu/min_heap.h"
#include "spartan/hw/gpu/sorted_queue.h"
#include "spartan/hw/gpu/request.h"
#include "spartan/hw/stats.h"

namespace spartan::hw::gpu {

class MemoryController;

struct L2SliceStats {
  std::uint64_t reads = 0, writes = 0;
  std::uint64_t read_hits = 0, read_misses = 0, write_hits = 0, write_misses = 0;  ///< per request
  std::uint64_t mshr_merges = 0;   ///< requests served by a fill already in flight (counted as hits too)
  std::uint64_t mshr_stalls = 0;   ///< misses that waited for a free MSHR
  std::uint64_t writeback_stalls = 0;  ///< requests that waited for a free write-back buffer entry
  std::uint64_t sector_misses = 0; ///< sectors fetched from DRAM
  std::uint64_t evictions = 0, writebacks = 0;  ///< valid lines replaced; of those, lines with dirty sectors
  std::uint64_t bytes_read = 0, bytes_written = 0;        ///< to/from requesters
  std::uint64_t fill_bytes = 0, writeback_bytes = 0;      ///< from/to DRAM
  LatencyHistogram latency_ps;                           ///< arrival -> response, all requests
  void register_with(StatsGroup& g) const;
};

class L2Slice : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<L2Slice> socket;          ///< from the crossbar
  tlm_utils::simple_initiator_socket<L2Slice> mem_socket;   ///< to the memory controller
  tlm_utils::simple_initiator_socket<L2Slice> store_socket; ///< to the BackingStore (DMI)

  L2Slice(sc_core::sc_module_name name, const GpuConfig& cfg, const AddressMap& map, std::uint32_t index,
          StatsRegistry& stats);

  /// Attach a write-path observer (called for every write that reaches this slice, in order).
  void add_write_observer(L2WriteObserver& obs) { observers_.push_back(&obs); }
  std::uint32_t index() const { return index_; }
  const L2SliceStats& stats() const { return stats_; }
  /// True if the line holding global address `addr` is present (any sector valid). For tests.
  bool contains(std::uint64_t addr) const;
  /// Writes back all dirty lines (at the current time) and invalidates every line; returns the time (ps)
  /// the last writeback completes in DRAM.
  ps_t flush();

  /// Fast path used by the builder (GpuSystem): the memory controller `mem_socket` is bound to, called
  /// directly (MemoryController::access, integer ps) instead of through b_transport. Same timing; it only
  /// saves the payload set-up and the sc_time conversions of the socket call. nullptr: use the socket.
  void set_direct_memory_controller(MemoryController* mc) { mc_ = mc; }
  /// Page-pointer cache of the DMI regions granted by the BackingStore (direct-mapped by page number).
  /// The builder gives every slice of a GPU the same one: the slices bind one store whose pages never
  /// move, so a pointer one slice obtained is valid for all, and a page is looked up once per GPU instead
  /// of once per slice (a stream touches every page from every slice).
  struct DmiCache {
    struct Entry {
      std::uint64_t page = ~0ull;
      std::uint8_t* ptr = nullptr;
      bool writable = false;  ///< false: a read-only grant (the store's shared zero page)
    };
    explicit DmiCache(std::size_t entries) : e(entries) {}  // entries: a power of two
    std::vector<Entry> e;
    Entry& at(std::uint64_t page) { return e[page & (e.size() - 1)]; }
  };
  /// When the latest posted write-back reaches DRAM (ps; 0 if none): flush() returns no earlier.
  ps_t last_writeback_end_ps() const { return wb_free_.empty() ? 0 : wb_free_.back(); }
  void share_dmi_cache(std::shared_ptr<DmiCache> c) { dmi_ = std::move(c); }
  /// The slice's b_transport without sc_time: request `gp` arriving at `t_ps` (>= `now_ps`, the
  /// current simulation time); returns the response time (ps), or `t_ps` with an error response status.
  /// Used by the Crossbar's direct path; b_transport wraps it.
  ps_t access(tlm::tlm_generic_payload& gp, ps_t now_ps, ps_t t_ps);
  /// The same with the request's slice-local address (AddressMap::to_slice(address).local) already known.
  ps_t access(tlm::tlm_generic_payload& gp, ps_t now_ps, ps_t t_ps, std::uint64_t local);
  /// Host-cache hint, no effect on the model: starts loading the tag/LRU state of the set `addr` maps
  /// to and its data in the backing store, so that access() finds them (the Crossbar calls it before
  /// its own port reservations).
  void prefetch(std::uint64_t addr, std::uint64_t local) const;  ///< `local`: as for access()

 private:
  /// Per line: everything an access or a victim check reads of it, in one 32-byte record.
  struct Line {
    std::uint64_t key = 0;  ///< slice-local line number
    std::uint32_t valid = 0, dirty = 0;  ///< sector masks: allocated (including partial), modified
    ps_t ready_max = 0;  ///< latest arrival time of any sector's fill
    std::uint32_t partial = 0;  ///< sector mask, a subset of valid: only partly written, never fetched
  };
  /// Records the bytes [lo, hi) of sector `s` of line `li` written: `fresh` (the sector was absent) starts
  /// its byte mask anew. Returns true when every byte of the sector has now been written (no longer partial).
  bool mark_written(std::size_t li, std::uint32_t s, std::uint32_t lo, std::uint32_t hi, bool fresh);
  void b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
  /// Debug transport (TLM-2.0 transport_dbg): reads or writes the data functionally (the backing store holds
  /// every value), with no timing, no statistics and no change to the cache state. Returns the bytes
  /// transferred: 0 for an empty request, one crossing a line, or one with byte enables.
  unsigned int transport_dbg(tlm::tlm_generic_payload& gp);
  /// Pointer to `addr` in the backing store, for reading or (`write`) for writing, through the DMI cache.
  std::uint8_t* dmi_ptr(std::uint64_t addr, bool write);
  /// Backward path of store_socket: the store revoked the grants of [start, end] (a zero page became real).
  void invalidate_dmi(sc_dt::uint64 start, sc_dt::uint64 end);
  ps_t dram(std::uint64_t local, std::uint32_t bytes, bool write, ps_t t);
  ps_t busy_ps(std::uint32_t bytes) const {  // data-array occupancy of `bytes` (table: no lround, no divide)
    if (bytes < busy_bytes_ps_.size()) return busy_bytes_ps_[bytes];
    std::uint32_t cyc = (bytes + bytes_per_cycle_ - 1) / bytes_per_cycle_;
    return clk_.cycles_to_ps(double(cyc));
  }
  ps_t fetch(std::uint64_t line_local, std::uint32_t mask, ps_t t);  // returns fill time
  int victim(std::uint32_t set, ps_t t, int first_invalid);
  ps_t evict(Line& l, ps_t t);  // returns when the writeback (if any) is done in DRAM
  void book_writeback_read(const Line& l, ps_t t);  // a dirty line's sectors read out of the data array at t

  const AddressMap& map_;
  std::uint32_t index_, sets_, ways_, line_bytes_, sector_bytes_, spl_, bytes_per_cycle_;
  FastDiv line_div_, sector_div_;
  ClockDomain clk_;
  ps_t hit_ps_, half_hit_ps_;
  // Per line (index set * ways + way): the Line records, and the tags apart so that a lookup reads one
  // short contiguous run per set.
  std::vector<Line> lines_;
  std::vector<std::uint64_t> tag_;       ///< key + 1 while the line is valid, 0 when invalid
  /// Per set: its ways from least to most recently used (LRU order; every access moves its way last).
  std::vector<std::uint16_t> lru_order_;
  void touch(std::size_t set_base, std::uint32_t way);
  void set_tag(std::size_t i) {
    tag_[i] = lines_[i].valid ? lines_[i].key + 1 : 0;
    fp_[i] = lines_[i].valid ? fingerprint(lines_[i].key) : 0;
  }
  /// 8-bit tag fingerprint (1..255; 0 = invalid way) of a line key: the bits above the set index.
  std::uint8_t fingerprint(std::uint64_t key) const {
    const std::uint64_t h = key >> set_bits_;
    const std::uint8_t f = std::uint8_t(h ^ (h >> 8) ^ (h >> 16));
    return f ? f : 1;
  }
  /// The way of set `set_base / ways` holding line key `key` (-1: none) and, when none, its first invalid
  /// way (-1: none). Compares the set's fingerprints 16 at a time, then the full tags of the matches.
  void lookup(std::size_t set_base, std::uint64_t key, int& way, int& first_invalid) const;
  std::vector<std::uint8_t> fp_;  ///< per line: fingerprint(key) while valid, else 0 (padded by 64 bytes)
  unsigned set_bits_ = 0;         ///< log2(sets)
  std::vector<ps_t> ready_;  ///< per line per sector: time its data is in the array
  /// Per line per sector, `words_per_sector_` 64-bit words: the byte mask of a partial sector (bit b: byte b
  /// written). Meaningful only while the sector's Line::partial bit is set; read and written only for the
  /// first and last sector of a write that covers them partly.
  std::vector<std::uint64_t> written_;
  std::uint32_t words_per_sector_ = 1;
  SortedQueue<ps_t> mshr_free_, wb_free_;  ///< times each MSHR / write-back buffer entry is free
  ps_t now_ = 0;  ///< sc_time_stamp() of the access being processed
  MemoryController* mc_ = nullptr;
  std::vector<ps_t> busy_bytes_ps_;  ///< busy_ps(bytes) for bytes 0..line_bytes
  std::vector<L2WriteObserver*> observers_;
  std::shared_ptr<DmiCache> dmi_;
  /// The data array's bookings (busy_intervals.h): in time order exactly a busy-until register; a request
  /// arriving after a later-in-time one takes a hole at its own time. (After the fields every access reads:
  /// it holds 1 KiB of intervals.)
  BusyIntervals<64> data_busy_;
  tlm::tlm_generic_payload mem_gp_;
  std::vector<std::uint8_t> scratch_;
  L2SliceStats stats_;
};

}  // namespace spartan::hw::gpu
