// FlatMemory: a functional memory target with fixed read/write latencies and a write-path hook.
// It stands in for the GPU memory hierarchy in unit tests of the Spartan units and in RTL-harness tests
// (the full hierarchy is hw/gpu). Any number of initiators may bind to `socket`.
#pragma once
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_target_socket.h>

namespace spartan::hw {

struct FlatMemoryConfig {
  sc_core::sc_time read_latency = sc_core::sc_time(200, sc_core::SC_NS);
  sc_core::sc_time write_latency = sc_core::sc_time(50, sc_core::SC_NS);
  /// Bytes per ns the memory accepts (0 = unlimited); models one shared port with a busy-until time.
  double bytes_per_ns = 0.0;
};

class FlatMemory : public sc_core::sc_module {
 public:
  tlm_utils::multi_passthrough_target_socket<FlatMemory> socket;

  FlatMemory(sc_core::sc_module_name name, const FlatMemoryConfig& cfg = {});

  /// Called for every write (absolute time of arrival): the "L2 write path" for monitors in tests.
  using WriteHook = std::function<void(std::uint64_t addr, const std::uint8_t* data, std::uint32_t len,
                                       const sc_core::sc_time& when)>;
  void set_write_hook(WriteHook h) { hook_ = std::move(h); }
  /// Fault injection: a request for which `h(addr, len, is_write)` returns true is answered with
  /// TLM_ADDRESS_ERROR_RESPONSE after the usual latency and moves no data (a read leaves its buffer as it was).
  using ErrorHook = std::function<bool(std::uint64_t addr, std::uint32_t len, bool is_write)>;
  void set_error_hook(ErrorHook h) { error_hook_ = std::move(h); }

  /// Untimed functional access (no hook, no stats).
  void write_bytes(std::uint64_t addr, const void* src, std::size_t n);
  void read_bytes(std::uint64_t addr, void* dst, std::size_t n) const;

  std::uint64_t reads = 0, writes = 0, bytes_read = 0, bytes_written = 0;

 private:
  void b_transport(int id, tlm::tlm_generic_payload& p, sc_core::sc_time& delay);
  unsigned transport_dbg(int id, tlm::tlm_generic_payload& p);
  std::uint8_t* page(std::uint64_t addr);
  const std::uint8_t* page_if(std::uint64_t addr) const;

  FlatMemoryConfig cfg_;
  WriteHook hook_;
  ErrorHook error_hook_;
  sc_core::sc_time busy_until_;
  std::unordered_map<std::uint64_t, std::vector<std::uint8_t>> pages_;
};

}  // namespace spartan::hw
