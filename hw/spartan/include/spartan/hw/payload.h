// Generic-payload set-up shared by the units, the RTL wrappers and their tests.
#pragma once
#include <cstdint>

#include <tlm>

namespace spartan::hw {

/// Prepares `p` for one plain access: command `cmd`, `len` bytes at `addr` read into / written from `data`,
/// streaming width = `len` (no streaming), no byte enables, no DMI hint, response TLM_INCOMPLETE_RESPONSE --
/// the attributes an initiator must set before every b_transport / transport_dbg (IEEE 1666-2011, 14.7 and
/// 14.17). Extensions and other attributes are left as they are.
inline void prepare_payload(tlm::tlm_generic_payload& p, tlm::tlm_command cmd, std::uint64_t addr,
                            unsigned char* data, unsigned len) {
  p.set_command(cmd);
  p.set_address(addr);
  p.set_data_ptr(data);
  p.set_data_length(len);
  p.set_streaming_width(len);
  p.set_byte_enable_ptr(nullptr);
  p.set_dmi_allowed(false);
  p.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
}

}  // namespace spartan::hw
