// Private to spartan_rtl_cosim: the TLM response for an MMIO error code returned on an RTL unit's mmio_err
// pins (regmap MmioError; docs/hw-units.md "Bad MMIO accesses"), shared by the SystemC transactors of the
// monitor and the engine. (hw::mmio_response_for is the same table in spartan_hw_units, which this library
// does not require.)
#pragma once
#include <cstdint>

#include <tlm>

namespace spartan::rtl::detail {

inline tlm::tlm_response_status mmio_response_for(std::uint32_t err) {
  switch (err) {
    case 0: return tlm::TLM_OK_RESPONSE;
    case 1: case 2: return tlm::TLM_ADDRESS_ERROR_RESPONSE;
    case 3: return tlm::TLM_BURST_ERROR_RESPONSE;
    case 4: return tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE;
    default: return tlm::TLM_COMMAND_ERROR_RESPONSE;
  }
}

/// The structural checks the transactors decide before the pins (which carry only 4-byte accesses with
/// a 12-bit offset): byte enables (4), length / streaming width (3), outside the 4 KiB window (1); 0 when
/// the access may go to the pins. Codes as regmap MmioError.
inline std::uint32_t pin_mmio_structural_error(const tlm::tlm_generic_payload& p) {
  if (p.get_byte_enable_ptr() != nullptr) return 4;
  if (p.get_data_length() != 4 || p.get_streaming_width() < p.get_data_length()) return 3;
  if (p.get_address() >= 0x1000) return 1;
  return 0;
}

}  // namespace spartan::rtl::detail
