#include "spartan/hw/gpu/backing_store.h"

#include <algorithm>
#include <cstring>
#include <new>

#include <sys/mman.h>

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

static_assert(BackingStore::kChunkBytes % BackingStore::kPageBytes == 0, "chunks hold whole pages");

BackingStore::Chunk::~Chunk() {
  if (base) munmap(base, kChunkBytes);
}

std::uint8_t* BackingStore::new_zero_page() {
  if (chunk_used_ == kChunkBytes) {
    chunks_.reserve(chunks_.size() + 1);  // before the mapping, so that emplace_back below cannot throw
    // Map twice the chunk and trim to a kChunkBytes-aligned chunk, so that it can be one huge page.
    void* m = mmap(nullptr, 2 * kChunkBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
    auto* raw = static_cast<std::uint8_t*>(m);
    const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(raw);
    auto* base = reinterpret_cast<std::uint8_t*>((a + kChunkBytes - 1) / kChunkBytes * kChunkBytes);
    if (base > raw) munmap(raw, std::size_t(base - raw));
    if (base + kChunkBytes < raw + 2 * kChunkBytes)
      munmap(base + kChunkBytes, std::size_t(raw + 2 * kChunkBytes - (base + kChunkBytes)));
#ifdef MADV_HUGEPAGE
    madvise(base, kChunkBytes, MADV_HUGEPAGE);  // a hint: without huge pages the chunk is still valid memory
#endif
    chunks_.emplace_back(base);
    chunk_used_ = 0;
  }
  std::uint8_t* p = chunks_.back().base + chunk_used_;  // anonymous mappings are zero-filled
  chunk_used_ += kPageBytes;
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
