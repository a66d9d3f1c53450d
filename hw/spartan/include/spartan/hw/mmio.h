// MMIO helpers shared by the two Spartan units: the checks every register access goes through and the
// TLM response for each error code (docs/hw-units.md, "Bad MMIO accesses"; codes in regmap.h).
#pragma once
#include <cstdint>

#include <systemc>
#include <tlm>

#include "spartan/hw/regmap.h"
#include "spartan/hw/payload.h"

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

/// Issues one 4-byte register access through initiator socket `s`: `v` is the value written, or receives
/// the value read (little-endian payload). `delay` is the b_transport annotation, added to by the target;
/// the caller waits it or keeps it as local time. Returns the TLM response status.
template <class Socket>
tlm::tlm_response_status mmio_transport32(Socket& s, bool write, std::uint64_t addr, std::uint32_t& v,
                                          sc_core::sc_time& delay) {
  unsigned char b[4];
  mmio_store_u32(b, write ? v : 0u);
  tlm::tlm_generic_payload p;
  spartan::hw::prepare_payload(p, write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND, addr, b, 4);
  s->b_transport(p, delay);
  if (!write) v = mmio_load_u32(b);
  return p.get_response_status();
}

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

/// Serves one MMIO access of a unit's register file, the same way for both units: a TLM_IGNORE command is
/// answered OK; otherwise the payload is checked (mmio_check_payload), then `read(offset, value&)` or
/// `write(offset, value)` (each returning an MmioError) decodes the register; the access is counted in
/// `stats.mmio_reads`/`mmio_writes`, an error in `stats.mmio_errors` and latched in `err`; the response
/// status follows mmio_response_for. Never throws for a bad access: errors are TLM responses.
template <class Stats, class Read, class Write>
void serve_mmio(tlm::tlm_generic_payload& p, Stats& stats, MmioErrorLatch& err, Read&& read, Write&& write) {
  if (p.get_command() == tlm::TLM_IGNORE_COMMAND) {
    p.set_response_status(tlm::TLM_OK_RESPONSE);
    return;
  }
  const bool is_write = p.is_write();
  regmap::MmioError e = mmio_check_payload(p);
  const std::uint32_t off = static_cast<std::uint32_t>(p.get_address());
  if (e == regmap::MmioError::None) {
    if (is_write) {
      e = write(off, mmio_load_u32(p.get_data_ptr()));
    } else {
      std::uint32_t v = 0;
      e = read(off, v);
      if (e == regmap::MmioError::None) mmio_store_u32(p.get_data_ptr(), v);
    }
  }
  (is_write ? stats.mmio_writes : stats.mmio_reads)++;
  if (e != regmap::MmioError::None) {
    ++stats.mmio_errors;
    err.latch(e, p.get_address(), is_write);
  }
  p.set_response_status(mmio_response_for(e));
}

/// Debug (transport_dbg) access to a register file: aligned 4-byte reads only, no side effects.
/// Returns the bytes transferred (4), or 0 for anything else.
template <class Read>
unsigned serve_mmio_debug(tlm::tlm_generic_payload& p, Read&& read) {
  if (!p.is_read() || p.get_data_length() != 4 || p.get_address() % 4 != 0) return 0;
  std::uint32_t v = 0;
  if (read(static_cast<std::uint32_t>(p.get_address()), v) != regmap::MmioError::None) return 0;
  mmio_store_u32(p.get_data_ptr(), v);
  return 4;
}

}  // namespace spartan::hw
