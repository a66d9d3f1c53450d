// Helpers for SystemC unit tests: each scenario elaborates and simulates in its own child process
// (SystemC allows one elaboration per process), via GoogleTest's death-test machinery.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <vector>

#include <gtest/gtest.h>
#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include "spartan/hw/mmio.h"

namespace spartan::hw::test {

/// Runs `body` (which elaborates modules and calls sc_start) in a child process; the test fails if any
/// assertion inside fails (their messages are printed by the child).
[[noreturn]] inline void run_child(const std::function<void()>& body) {
  ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  body();
  std::fflush(stdout);
  std::_Exit(::testing::Test::HasFailure() ? 1 : 0);
}
/// SPARTAN_SC_TEST_INPROC=1 runs the body in the test process instead (to debug ONE test: the failure
/// messages are then printed normally; SystemC allows only one scenario per process).
inline void SC_SCENARIO(const std::function<void()>& body) {
  if (const char* e = std::getenv("SPARTAN_SC_TEST_INPROC"); e && *e == '1') {
    ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
    body();
    return;
  }
  ::testing::FLAGS_gtest_death_test_style = "threadsafe";
  EXPECT_EXIT(run_child(body), ::testing::ExitedWithCode(0), "");
}

/// An initiator with `n_mmio` MMIO sockets and one memory socket; runs `body` in an SC_THREAD.
class Driver : public sc_core::sc_module {
 public:
  std::vector<std::unique_ptr<tlm_utils::simple_initiator_socket<Driver>>> mmio;
  tlm_utils::simple_initiator_socket<Driver> mem;
  std::function<void(Driver&)> body;

  SC_HAS_PROCESS(Driver);
  Driver(sc_core::sc_module_name name, unsigned n_mmio) : sc_module(name), mem("mem") {
    for (unsigned i = 0; i < n_mmio; ++i)
      mmio.push_back(std::make_unique<tlm_utils::simple_initiator_socket<Driver>>(
          sc_core::sc_gen_unique_name("mmio")));
    SC_THREAD(run);
  }

  /// Raw access; returns the response status. `len`/`be` allow malformed accesses.
  tlm::tlm_response_status access(tlm_utils::simple_initiator_socket<Driver>& s, tlm::tlm_command cmd,
                                  std::uint64_t addr, unsigned char* data, unsigned len,
                                  unsigned char* be = nullptr, unsigned be_len = 0) {
    tlm::tlm_generic_payload p;
    p.set_command(cmd);
    p.set_address(addr);
    p.set_data_ptr(data);
    p.set_data_length(len);
    p.set_streaming_width(len);
    p.set_byte_enable_ptr(be);
    p.set_byte_enable_length(be_len);
    p.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    sc_core::sc_time d = sc_core::SC_ZERO_TIME;
    s->b_transport(p, d);
    sc_core::wait(d);
    return p.get_response_status();
  }
  tlm::tlm_response_status wr(unsigned unit, std::uint32_t off, std::uint32_t v) {
    unsigned char b[4];
    mmio_store_u32(b, v);
    return access(*mmio[unit], tlm::TLM_WRITE_COMMAND, off, b, 4);
  }
  std::uint32_t rd(unsigned unit, std::uint32_t off, tlm::tlm_response_status* st = nullptr) {
    unsigned char b[4] = {0, 0, 0, 0};
    auto s = access(*mmio[unit], tlm::TLM_READ_COMMAND, off, b, 4);
    if (st) *st = s;
    return mmio_load_u32(b);
  }
  void mem_write(std::uint64_t addr, const void* data, unsigned len) {
    std::vector<unsigned char> b(static_cast<const unsigned char*>(data), static_cast<const unsigned char*>(data) + len);
    access(mem, tlm::TLM_WRITE_COMMAND, addr, b.data(), len);
  }

 private:
  void run() {
    if (body) body(*this);
    sc_core::sc_stop();
  }
};

}  // namespace spartan::hw::test
