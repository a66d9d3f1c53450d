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
// Host memory: pages are carved out of 2 MiB chunks mapped anonymously (already zero, so no memset) and
// marked for transparent huge pages (madvise MADV_HUGEPAGE, Linux), so that writing N MiB of fresh memory
// takes ~N/2 page faults instead of 16 per 64 KiB page. Where the kernel gives no huge pages this is
// still correct, only the fault count stays (docs/bench/gpu.md, nineteenth session).
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
  static constexpr std::uint64_t kChunkBytes = 2 * 1024 * 1024;  ///< host allocation unit (x86-64 huge page)

 private:
  void b_transport(int id, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
  unsigned int transport_dbg(int id, tlm::tlm_generic_payload& gp);
  bool get_direct_mem_ptr(int id, tlm::tlm_generic_payload& gp, tlm::tlm_dmi& dmi);
  /// One anonymous mapping of kChunkBytes (aligned to kChunkBytes), unmapped on destruction.
  struct Chunk {
    std::uint8_t* base = nullptr;
    Chunk() = default;
    explicit Chunk(std::uint8_t* b) : base(b) {}
    Chunk(Chunk&& o) noexcept : base(o.base) { o.base = nullptr; }
    Chunk& operator=(Chunk&&) = delete;
    ~Chunk();
  };
  std::uint8_t* new_zero_page();  ///< a zero-filled kPageBytes page carved from the current chunk
  std::vector<Chunk> chunks_;
  std::uint64_t chunk_used_ = kChunkBytes;  ///< bytes of chunks_.back() handed out (full: none yet)
  std::unordered_map<std::uint64_t, std::uint8_t*> pages_;
  std::unordered_set<std::uint64_t> zero_granted_;  ///< unallocated pages with a read-only zero-page grant
};

}  // namespace spartan::hw::gpu
