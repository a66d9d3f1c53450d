// Functional memory of the GPU: a sparse map of 64 KiB pages, allocated (zero-filled) on first touch,
// so data written anywhere in a 64-bit address space is read back. Timing lives in the L2/DRAM models;
// this module only holds values. TLM target: b_transport and transport_dbg (zero delay), and DMI
// (get_direct_mem_ptr grants read/write access to one whole page; pages never move or disappear, so a
// granted pointer stays valid for the life of the store, which is what makes DMI safe here).
#pragma once
#include <cstdint>
#include <memory>
#include <unordered_map>

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

 private:
  void b_transport(int id, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
  unsigned int transport_dbg(int id, tlm::tlm_generic_payload& gp);
  bool get_direct_mem_ptr(int id, tlm::tlm_generic_payload& gp, tlm::tlm_dmi& dmi);
  std::unordered_map<std::uint64_t, std::unique_ptr<std::uint8_t[]>> pages_;
};

}  // namespace spartan::hw::gpu
