#include "spartan/hw/gpu/backing_store.h"

#include <algorithm>
#include <cstring>
#include <new>

#include <sys/mman.h>
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

namespace spartan::hw::gpu {

BackingStore::BackingStore(sc_core::sc_module_name name) : sc_module(name), socket("socket") {
  socket.register_b_transport(this, &BackingStore::b_transport);
  socket.register_transport_dbg(this, &BackingStore::transport_dbg);
  socket.register_get_direct_mem_ptr(this, &BackingStore::get_direct_mem_ptr);
}

namespace {
// The page every read-only grant of a never-written page points to (never written through: the grant is
// READ-only and the store allocates a real page before any write).
alignas(64) std::uint8_t g_zero_page[BackingStore::kPageBytes];
}  // namespace

static_assert(BackingStore::kRegionBytes % (2u << 20) == 0, "regions are whole 2 MiB huge pages");

namespace {
constexpr std::uint64_t kHugeBytes = 2u << 20;  // x86-64 huge page: the alignment of a region
}  // namespace

BackingStore::Region::~Region() {
  if (!base) return;
#if defined(__SANITIZE_ADDRESS__)
  ASAN_UNPOISON_MEMORY_REGION(base, kRegionBytes);  // the address range may be reused by anything later
#endif
  munmap(base, kRegionBytes);
}

std::uint8_t* BackingStore::new_zero_page() {
  if (region_pages_ == pages_per_region()) {
    if (regions_.size() == regions_.capacity())  // before the mapping, so that emplace_back below cannot throw
      regions_.reserve(std::max<std::size_t>(4, 2 * regions_.capacity()));
    // Map a huge page more than the region and trim to a kHugeBytes-aligned region. MAP_NORESERVE: only
    // the pages touched are backed (and counted).
    const std::size_t len = kRegionBytes + kHugeBytes;
    void* m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
    auto* raw = static_cast<std::uint8_t*>(m);
    const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(raw);
    auto* base = reinterpret_cast<std::uint8_t*>((a + kHugeBytes - 1) / kHugeBytes * kHugeBytes);
    if (base > raw) munmap(raw, std::size_t(base - raw));
    if (base + kRegionBytes < raw + len) munmap(base + kRegionBytes, std::size_t(raw + len - (base + kRegionBytes)));
#ifdef MADV_HUGEPAGE
    madvise(base, kRegionBytes, MADV_HUGEPAGE);  // a hint: without huge pages the region is still valid memory
#endif
#if defined(__SANITIZE_ADDRESS__)
    ASAN_POISON_MEMORY_REGION(base, kRegionBytes);  // pages are unpoisoned as they are handed out
#endif
    regions_.emplace_back(base);
    region_pages_ = 0;
  }
  std::uint8_t* p = regions_.back().base + region_pages_ * (kPageBytes + kRedzoneBytes);  // zero-filled
  ++region_pages_;
#if defined(__SANITIZE_ADDRESS__)
  ASAN_UNPOISON_MEMORY_REGION(p, kPageBytes);
#endif
  return p;
}

std::uint8_t* BackingStore::page(std::uint64_t addr) {
  const std::uint64_t n = addr / kPageBytes;
  if (auto it = pages_.find(n); it != pages_.end()) return it->second;
  std::uint8_t* p = pages_.emplace(n, new_zero_page()).first->second;  // no null entry if either throws
  if (zero_granted_.erase(n)) {  // read-only grants on the zero page for this range are stale now
    const std::uint64_t base = n * kPageBytes;
    for (int i = 0; i < int(socket.size()); ++i) socket[i]->invalidate_direct_mem_ptr(base, base + kPageBytes - 1);
  }
  return p;
}

void BackingStore::write(std::uint64_t addr, const void* src, std::uint64_t bytes) {
  auto* s = static_cast<const std::uint8_t*>(src);
  while (bytes) {
    std::uint64_t off = addr % kPageBytes, n = std::min(bytes, kPageBytes - off);
    std::memcpy(page(addr) + off, s, n);
    addr += n, s += n, bytes -= n;
  }
}

void BackingStore::read(std::uint64_t addr, void* dst, std::uint64_t bytes) const {
  auto* d = static_cast<std::uint8_t*>(dst);
  while (bytes) {
    std::uint64_t off = addr % kPageBytes, n = std::min(bytes, kPageBytes - off);
    auto it = pages_.find(addr / kPageBytes);
    if (it == pages_.end()) std::memset(d, 0, n);
    else std::memcpy(d, it->second + off, n);
    addr += n, d += n, bytes -= n;
  }
}

unsigned int BackingStore::transport_dbg(int, tlm::tlm_generic_payload& gp) {
  if (gp.get_byte_enable_ptr()) {
    gp.set_response_status(tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE);
    return 0;
  }
  if (gp.is_write()) write(gp.get_address(), gp.get_data_ptr(), gp.get_data_length());
  else if (gp.is_read()) read(gp.get_address(), gp.get_data_ptr(), gp.get_data_length());
  gp.set_response_status(tlm::TLM_OK_RESPONSE);
  return gp.get_data_length();
}

void BackingStore::b_transport(int id, tlm::tlm_generic_payload& gp, sc_core::sc_time&) {
  transport_dbg(id, gp);
  gp.set_dmi_allowed(true);
}

bool BackingStore::get_direct_mem_ptr(int, tlm::tlm_generic_payload& gp, tlm::tlm_dmi& dmi) {
  std::uint64_t base = gp.get_address() / kPageBytes * kPageBytes;
  dmi.set_start_address(base);
  dmi.set_end_address(base + kPageBytes - 1);
  if (gp.is_read() && !pages_.count(base / kPageBytes)) {  // never written: the shared zero page, read-only
    zero_granted_.insert(base / kPageBytes);
    dmi.set_dmi_ptr(g_zero_page);
    dmi.set_granted_access(tlm::tlm_dmi::DMI_ACCESS_READ);
  } else {
    dmi.set_dmi_ptr(page(base));
    dmi.set_granted_access(tlm::tlm_dmi::DMI_ACCESS_READ_WRITE);
  }
  dmi.set_read_latency(sc_core::SC_ZERO_TIME);
  dmi.set_write_latency(sc_core::SC_ZERO_TIME);
  return true;
}

}  // namespace spartan::hw::gpu
