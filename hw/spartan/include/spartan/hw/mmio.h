// MMIO helpers shared by the two Spartan units: the checks every register access goes through and the
// TLM response for each error code (docs/hw-units.md, "Bad MMIO accesses"; codes in regmap.h).
#pragma once
#include <cstdint>

#include <tlm>

#include "spartan/hw/regmap.h"

namespace spartan::hw {

/// TLM response status for an MMIO error code (None -> TLM_OK_RESPONSE).
tlm::tlm_response_status mmio_response_for(regmap::MmioError e);

/// Structural checks of one MMIO payload, in the documented order: byte enables, length/streaming
/// width, alignment, window bounds. Returns None if the access may proceed to register decode.
/// `offset` is the payload address (window-relative: the interconnect subtracts the window base).
regmap::MmioError mmio_check_payload(const tlm::tlm_generic_payload& p);

/// Little-endian 32-bit load/store from payload data.
std::uint32_t mmio_load_u32(const unsigned char* p);
void mmio_store_u32(unsigned char* p, std::uint32_t v);

/// Latched error register (ERR_CODE) shared logic: first error since the last clear wins.
struct MmioErrorLatch {
  std::uint32_t err_code = 0;  ///< ERR_CODE register value
  void latch(regmap::MmioError e, std::uint64_t offset, bool write) {
    if (err_code != 0 || e == regmap::MmioError::None) return;
    err_code = regmap::field_put(static_cast<std::uint32_t>(e), regmap::kErrCodeLsb, regmap::kErrCodeWidth) |
               regmap::field_put(static_cast<std::uint32_t>(offset), regmap::kErrOffsetLsb, regmap::kErrOffsetWidth) |
               (write ? (1u << regmap::kErrWriteBit) : 0u);
  }
  bool pending() const { return err_code != 0; }
  void clear() { err_code = 0; }
};

}  // namespace spartan::hw
