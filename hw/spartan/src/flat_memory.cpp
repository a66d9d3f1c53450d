#include "spartan/hw/flat_memory.h"

#include <algorithm>
#include <cstring>

namespace spartan::hw {

namespace {
constexpr std::uint64_t kPage = 4096;
}

FlatMemory::FlatMemory(sc_core::sc_module_name name, const FlatMemoryConfig& cfg)
    : sc_module(name), socket("socket"), cfg_(cfg) {
  socket.register_b_transport(this, &FlatMemory::b_transport);
  socket.register_transport_dbg(this, &FlatMemory::transport_dbg);
}

std::uint8_t* FlatMemory::page(std::uint64_t addr) {
  auto& v = pages_[addr / kPage];
  if (v.empty()) v.assign(kPage, 0);
  return v.data();
}
const std::uint8_t* FlatMemory::page_if(std::uint64_t addr) const {
  auto it = pages_.find(addr / kPage);
  return it == pages_.end() ? nullptr : it->second.data();
}

void FlatMemory::write_bytes(std::uint64_t addr, const void* src, std::size_t n) {
  const auto* s = static_cast<const std::uint8_t*>(src);
  while (n > 0) {
    const std::size_t k = std::min<std::size_t>(n, kPage - addr % kPage);
    std::memcpy(page(addr) + addr % kPage, s, k);
    addr += k;
    s += k;
    n -= k;
  }
}

void FlatMemory::read_bytes(std::uint64_t addr, void* dst, std::size_t n) const {
  auto* d = static_cast<std::uint8_t*>(dst);
  while (n > 0) {
    const std::size_t k = std::min<std::size_t>(n, kPage - addr % kPage);
    const std::uint8_t* p = page_if(addr);
    if (p)
      std::memcpy(d, p + addr % kPage, k);
    else
      std::memset(d, 0, k);
    addr += k;
    d += k;
    n -= k;
  }
}

void FlatMemory::b_transport(int, tlm::tlm_generic_payload& p, sc_core::sc_time& delay) {
  const std::uint32_t len = p.get_data_length();
  if (p.get_byte_enable_ptr() != nullptr || p.get_streaming_width() < len) {
    p.set_response_status(tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE);
    return;
  }
  const sc_core::sc_time arrive = sc_core::sc_time_stamp() + delay;
  sc_core::sc_time start = arrive;
  if (cfg_.bytes_per_ns > 0) {
    start = std::max(arrive, busy_until_);
    busy_until_ = start + sc_core::sc_time(double(len) / cfg_.bytes_per_ns, sc_core::SC_NS);
  }
  if (error_hook_ && (p.is_write() || p.is_read()) && error_hook_(p.get_address(), len, p.is_write())) {
    delay = (start - sc_core::sc_time_stamp()) + (p.is_write() ? cfg_.write_latency : cfg_.read_latency);
    p.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return;
  }
  if (p.is_write()) {
    write_bytes(p.get_address(), p.get_data_ptr(), len);
    ++writes;
    bytes_written += len;
    if (hook_) hook_(p.get_address(), p.get_data_ptr(), len, arrive);
    delay = (start - sc_core::sc_time_stamp()) + cfg_.write_latency;
  } else if (p.is_read()) {
    read_bytes(p.get_address(), p.get_data_ptr(), len);
    ++reads;
    bytes_read += len;
    delay = (start - sc_core::sc_time_stamp()) + cfg_.read_latency;
  }
  p.set_response_status(tlm::TLM_OK_RESPONSE);
}

unsigned FlatMemory::transport_dbg(int, tlm::tlm_generic_payload& p) {
  if (p.is_write())
    write_bytes(p.get_address(), p.get_data_ptr(), p.get_data_length());
  else if (p.is_read())
    read_bytes(p.get_address(), p.get_data_ptr(), p.get_data_length());
  return p.get_data_length();
}

}  // namespace spartan::hw
