#include "spartan/hw/mmio_bus.h"

#include <stdexcept>

#include "spartan/hw/mmio.h"
#include "spartan/hw/regmap.h"

namespace spartan::hw {

MmioBus::MmioBus(sc_core::sc_module_name name) : sc_module(name), target("target"), units("units") {
  target.register_b_transport(this, &MmioBus::b_transport);
  target.register_transport_dbg(this, &MmioBus::transport_dbg);
}

std::uint64_t MmioBus::window_base(std::size_t index) { return std::uint64_t(index) * regmap::kWindowBytes; }

void MmioBus::b_transport(tlm::tlm_generic_payload& p, sc_core::sc_time& delay) {
  const std::uint64_t a = p.get_address();
  const std::size_t unit = a / regmap::kWindowBytes;
  if (unit >= units.size()) {
    p.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return;
  }
  p.set_address(a % regmap::kWindowBytes);
  units[static_cast<int>(unit)]->b_transport(p, delay);
  p.set_address(a);
}

unsigned MmioBus::transport_dbg(tlm::tlm_generic_payload& p) {
  const std::uint64_t a = p.get_address();
  const std::size_t unit = a / regmap::kWindowBytes;
  if (unit >= units.size()) return 0;
  p.set_address(a % regmap::kWindowBytes);
  const unsigned n = units[static_cast<int>(unit)]->transport_dbg(p);
  p.set_address(a);
  return n;
}

namespace {
}  // namespace

tlm::tlm_response_status MmioHost::write32(std::uint64_t addr, std::uint32_t v) {
  ++writes;
  sc_core::sc_time d = sc_core::SC_ZERO_TIME;  // called between kernel runs: the annotation is not waited
  return mmio_transport32(socket, true, addr, v, d);
}

tlm::tlm_response_status MmioHost::read32(std::uint64_t addr, std::uint32_t& v) {
  ++reads;
  sc_core::sc_time d = sc_core::SC_ZERO_TIME;
  return mmio_transport32(socket, false, addr, v, d);
}

void MmioHost::must_write(std::uint64_t addr, std::uint32_t v, const char* what) {
  const auto st = write32(addr, v);
  if (st != tlm::TLM_OK_RESPONSE)
    throw std::runtime_error(std::string("MMIO write refused: ") + what + " at " + std::to_string(addr) +
                             " (TLM response " + std::to_string(static_cast<int>(st)) + ")");
}

std::uint32_t MmioHost::must_read(std::uint64_t addr, const char* what) {
  std::uint32_t v = 0;
  if (read32(addr, v) != tlm::TLM_OK_RESPONSE)
    throw std::runtime_error(std::string("MMIO read refused: ") + what + " at " + std::to_string(addr));
  return v;
}

}  // namespace spartan::hw
