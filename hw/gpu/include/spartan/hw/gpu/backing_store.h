// Functional memory of the GPU: a sparse map of 64 KiB pages, allocated (zero-filled) on first write,
// so data written anywhere in a 64-bit address space is read back. Timing lives in the L2/DRAM models;
// this module only holds values. TLM target: b_transport and transport_dbg (zero delay), and DMI
// (get_direct_mem_ptr grants access to one whole page; allocated pages never move or disappear, so a
// read/write grant stays valid for the life of the store, which is what makes DMI safe here).
// Lazy zero pages: a DMI request with a READ command for a page never written is granted READ-only access
// to one shared all-zero page (no allocation, no zeroing, no page faults: a read stream over fresh memory
// stays in the host cache). When such a page is later allocated (a write by any path), the store
// invalidates the read-only grant on every bound initiator (invalidate_direct_mem_ptr, TLM-2.0 DMI rules)
// before it returns.
// Host memory: pages are carved in order out of large anonymous mappings (regions of kRegionBytes of address
// space, MAP_NORESERVE, 2 MiB-aligned, marked MADV_HUGEPAGE: Linux transparent huge pages), which are already
// zero (no memset) and are backed only where touched, about one fault per 2 MiB instead of 16 per 64 KiB page.
// Where the kernel gives no huge pages this is still correct, only the fault count stays (docs/bench/gpu.md,
// nineteenth session). One mapping per region keeps the process far from vm.max_map_count. Under
// AddressSanitizer each page is followed by a poisoned redzone and the unused rest of a region stays
// poisoned, so an overrun of a page is reported instead of landing in another address's page.
#pragma once
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_target_socket.h>

namespace spartan::hw::gpu {

class BackingStore : public sc_core::sc_module {
 public:
  static constexpr std::uint64_t kPageBytes = 64 * 1024;

  tlm_utils::multi_passthrough_target_socket<BackingStore> socket;

  explicit BackingStore(sc_core::sc_module_name name);

  /// Direct functional access (no timing). Any address and length; allocates pages on write, reads of
  /// untouched memory return zeros without allocating.
  void write(std::uint64_t addr, const void* src, std::uint64_t bytes);
  void read(std::uint64_t addr, void* dst, std::uint64_t bytes) const;
  /// Pointer to the page holding `addr` (allocating it); valid for the store's lifetime.
  std::uint8_t* page(std::uint64_t addr);
  std::uint64_t pages_allocated() const { return pages_.size(); }
  static constexpr std::uint64_t kRegionBytes = 32ull << 20;  ///< address space per host mapping
  /// Pages carved out of one region (fewer under AddressSanitizer: a redzone follows each page).
  static constexpr std::uint64_t pages_per_region() { return kRegionBytes / (kPageBytes + kRedzoneBytes); }

 private:
  void b_transport(int id, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
  unsigned int transport_dbg(int id, tlm::tlm_generic_payload& gp);
  bool get_direct_mem_ptr(int id, tlm::tlm_generic_payload& gp, tlm::tlm_dmi& dmi);
#if defined(__SANITIZE_ADDRESS__)
  static constexpr std::uint64_t kRedzoneBytes = 4096;
#else
  static constexpr std::uint64_t kRedzoneBytes = 0;
#endif
  /// One anonymous mapping of kRegionBytes, unmapped on destruction.
  struct Region {
    std::uint8_t* base = nullptr;
    Region() = default;
    explicit Region(std::uint8_t* b) : base(b) {}
    Region(Region&& o) noexcept : base(o.base) { o.base = nullptr; }
    Region& operator=(Region&&) = delete;
    ~Region();
  };
  std::uint8_t* new_zero_page();  ///< a zero-filled kPageBytes page carved from the current region
  std::vector<Region> regions_;
  std::uint64_t region_pages_ = pages_per_region();  ///< pages of regions_.back() handed out (full: none yet)
  std::unordered_map<std::uint64_t, std::uint8_t*> pages_;
  std::unordered_set<std::uint64_t> zero_granted_;  ///< unallocated pages with a read-only zero-page grant
};

}  // namespace spartan::hw::gpu
