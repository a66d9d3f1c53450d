// MmioBus: the register bus from the host (driver) to the Spartan units. Unit i owns the 4 KiB window
// [i * kWindowBytes, (i + 1) * kWindowBytes); the bus subtracts the window base (the units see
// window-relative offsets) and answers an address beyond the last window with TLM_ADDRESS_ERROR_RESPONSE.
// The bus adds no delay; the host-side cost of an uncached MMIO access is accounted by the driver.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_initiator_socket.h>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

namespace spartan::hw {

class MmioBus : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<MmioBus> target;
  tlm_utils::multi_passthrough_initiator_socket<MmioBus> units;  ///< bind in window order

  explicit MmioBus(sc_core::sc_module_name name);
  /// Window base of the unit bound as the `index`-th.
  static std::uint64_t window_base(std::size_t index);

 private:
  void b_transport(tlm::tlm_generic_payload& p, sc_core::sc_time& delay);
  unsigned transport_dbg(tlm::tlm_generic_payload& p);
};

/// A host-side MMIO initiator usable from outside any SystemC process (between kernel runs): register
/// accesses are functions calls into the target (which never wait). Returns the TLM response.
class MmioHost : public sc_core::sc_module {
 public:
  tlm_utils::simple_initiator_socket<MmioHost> socket;
  explicit MmioHost(sc_core::sc_module_name name) : sc_module(name), socket("socket") {}

  /// One 4-byte register write of `v` (little-endian) at bus address `addr` = MmioBus::window_base(unit)
  /// + register offset. Counts in `writes`. Never throws for a bad access: returns the TLM response
  /// (TLM_OK_RESPONSE, or the unit's error response, docs/hw-units.md "Bad MMIO accesses"; an address
  /// beyond the last window: TLM_ADDRESS_ERROR_RESPONSE). The target's annotated delay is not waited (the
  /// host's cost is charged by the driver, host.mmio_write_ns); call between kernel runs.
  tlm::tlm_response_status write32(std::uint64_t addr, std::uint32_t v);
  /// One 4-byte register read at `addr`; `v` receives the value (0 on an error response: the units leave
  /// the payload untouched then). Counts in `reads`; otherwise as write32.
  tlm::tlm_response_status read32(std::uint64_t addr, std::uint32_t& v);
  /// Like write32/read32 but throws std::runtime_error naming `what` on an error response (driver bugs).
  void must_write(std::uint64_t addr, std::uint32_t v, const char* what);
  std::uint32_t must_read(std::uint64_t addr, const char* what);
  std::uint64_t reads = 0, writes = 0;
};

}  // namespace spartan::hw
