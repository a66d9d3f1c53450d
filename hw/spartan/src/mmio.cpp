#include "spartan/hw/mmio.h"

namespace spartan::hw {

using regmap::MmioError;

tlm::tlm_response_status mmio_response_for(MmioError e) {
  switch (e) {
    case MmioError::None: return tlm::TLM_OK_RESPONSE;
    case MmioError::Unmapped:
    case MmioError::Misaligned: return tlm::TLM_ADDRESS_ERROR_RESPONSE;
    case MmioError::BadSize: return tlm::TLM_BURST_ERROR_RESPONSE;
    case MmioError::ByteEnable: return tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE;
    case MmioError::ReadOnly:
    case MmioError::BadValue:
    case MmioError::Busy:
    case MmioError::QueueFull: return tlm::TLM_COMMAND_ERROR_RESPONSE;
    case MmioError::DescFetch:
    case MmioError::ComplWrite: return tlm::TLM_GENERIC_ERROR_RESPONSE;  // latched only, never a response
  }
  return tlm::TLM_GENERIC_ERROR_RESPONSE;
}

MmioError mmio_check_payload(const tlm::tlm_generic_payload& p) {
  if (p.get_byte_enable_ptr() != nullptr && p.get_byte_enable_length() > 0) return MmioError::ByteEnable;
  const unsigned len = p.get_data_length();
  const unsigned sw = p.get_streaming_width();
  if (len != regmap::kRegBytes || (sw != 0 && sw < len) || p.get_data_ptr() == nullptr) return MmioError::BadSize;
  const std::uint64_t off = p.get_address();
  if (off % regmap::kRegBytes != 0) return MmioError::Misaligned;
  if (off >= regmap::kWindowBytes) return MmioError::Unmapped;
  return MmioError::None;
}

std::uint32_t mmio_load_u32(const unsigned char* p) {
  return std::uint32_t(p[0]) | (std::uint32_t(p[1]) << 8) | (std::uint32_t(p[2]) << 16) | (std::uint32_t(p[3]) << 24);
}
void mmio_store_u32(unsigned char* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}

}  // namespace spartan::hw
