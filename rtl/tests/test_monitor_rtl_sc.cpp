// The SystemC/TLM wrapper of the RTL monitor: TLM transactions in, pin activity, TLM transactions out.
// One elaboration per process (SystemC), so this executable holds one scenario.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <random>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include "monitor_reference.h"
#include "spartan/hw/regmap.h"
#include "spartan/rtl/monitor_rtl_sc.h"
#include "spartan/hw/payload.h"

extern "C" int sc_main(int, char**) { return 0; }

namespace {
using namespace spartan::rtl;
namespace mon = spartan::hw::regmap::monitor;

struct Memory : sc_core::sc_module {
  tlm_utils::simple_target_socket<Memory> sock;
  std::map<std::uint64_t, std::uint8_t> bytes;
  std::uint64_t reads = 0, writes = 0;
  explicit Memory(sc_core::sc_module_name n) : sc_module(n), sock("sock") {
    sock.register_b_transport(this, &Memory::bt);
  }
  void bt(tlm::tlm_generic_payload& p, sc_core::sc_time& d) {
    d += sc_core::sc_time(20, sc_core::SC_NS);
    for (unsigned i = 0; i < p.get_data_length(); ++i) {
      if (p.is_read()) p.get_data_ptr()[i] = bytes.count(p.get_address() + i) ? bytes[p.get_address() + i] : 0;
      else bytes[p.get_address() + i] = p.get_data_ptr()[i];
    }
    (p.is_read() ? reads : writes)++;
    p.set_response_status(tlm::TLM_OK_RESPONSE);
  }
  std::uint32_t u32(std::uint64_t a) {
    std::uint32_t v = 0;
    for (unsigned i = 0; i < 4; ++i) v |= std::uint32_t(bytes.count(a + i) ? bytes[a + i] : 0) << (8 * i);
    return v;
  }
};

struct Host : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<Host> mmio, wr;
  MonitorRtlSc* dut = nullptr;
  Memory* memory = nullptr;
  SC_HAS_PROCESS(Host);
  explicit Host(sc_core::sc_module_name n) : sc_module(n), mmio("mmio"), wr("wr") { SC_THREAD(run); }

  tlm::tlm_response_status reg(tlm::tlm_command cmd, std::uint32_t off, std::uint32_t& v, sc_core::sc_time& d,
                               unsigned len = 4) {
    tlm::tlm_generic_payload p;
    spartan::hw::prepare_payload(p, cmd, off, reinterpret_cast<unsigned char*>(&v), len);
    mmio->b_transport(p, d);
    return p.get_response_status();
  }
  void w(std::uint32_t off, std::uint32_t v, sc_core::sc_time& d) {
    EXPECT_EQ(reg(tlm::TLM_WRITE_COMMAND, off, v, d), tlm::TLM_OK_RESPONSE) << std::hex << off;
  }

  void run() {
    sc_core::sc_time d = sc_core::SC_ZERO_TIME;
    std::uint32_t v = 0;
    EXPECT_EQ(reg(tlm::TLM_READ_COMMAND, mon::ID, v, d), tlm::TLM_OK_RESPONSE);
    EXPECT_EQ(v, mon::kIdValue);
    EXPECT_EQ(d, dut->period() * 2.0) << "MMIO = 2 unit cycles";
    EXPECT_EQ(reg(tlm::TLM_WRITE_COMMAND, mon::ID, v, d), tlm::TLM_COMMAND_ERROR_RESPONSE);
    EXPECT_EQ(reg(tlm::TLM_READ_COMMAND, 0x003, v, d), tlm::TLM_ADDRESS_ERROR_RESPONSE);
    EXPECT_EQ(reg(tlm::TLM_READ_COMMAND, mon::ID, v, d, 2), tlm::TLM_BURST_ERROR_RESPONSE);
    w(mon::ERR_CODE, 0, d);

    spartan::rtl::test::RefMonitor ref;
    spartan::rtl::test::RefRegion g;
    g.rows = 48; g.cols = 40; g.pitch = 160; g.tr = 16; g.tc = 16; g.base = 0x200000; g.ct_base = 0x300000;
    g.en = true;
    ref.regions[0] = g;
    w(mon::region_reg(0, mon::R_TILE), 16u | (16u << 16), d);
    w(mon::region_reg(0, mon::R_BASE_LO), 0x200000, d);
    w(mon::region_reg(0, mon::R_ROWS), g.rows, d);
    w(mon::region_reg(0, mon::R_COLS), g.cols, d);
    w(mon::region_reg(0, mon::R_ROW_PITCH), g.pitch, d);
    w(mon::region_reg(0, mon::R_CT_BASE_LO), 0x300000, d);
    w(mon::region_reg(0, mon::R_CFG), 1, d);
    w(mon::CTRL, 1, d);
    wait(d);
    d = sc_core::SC_ZERO_TIME;

    std::mt19937_64 rng(42);
    std::vector<std::uint8_t> m(g.size());
    for (std::size_t i = 0; i < m.size(); i += 4) {
      const std::uint32_t x = (rng() % 3 == 0) ? static_cast<std::uint32_t>(rng()) | 1u : 0u;
      std::memcpy(&m[i], &x, 4);
    }
    const sc_core::sc_time t0 = sc_core::sc_time_stamp() + d;
    unsigned n = 0;
    for (std::uint64_t a = g.base; a < g.base + g.size(); ++n) {
      const std::uint64_t end = std::min<std::uint64_t>((a & ~127ull) + 128, g.base + g.size());
      tlm::tlm_generic_payload p;
      spartan::hw::prepare_payload(p, tlm::TLM_WRITE_COMMAND, a, &m[a - g.base], static_cast<unsigned>(end - a));
      wr->b_transport(p, d);  // all issued at the same local time: the transactor serialises them
      EXPECT_EQ(p.get_response_status(), tlm::TLM_OK_RESPONSE);
      ref.write(a, &m[a - g.base], static_cast<std::uint32_t>(end - a));
      a = end;
    }
    // back-to-back requests take at least one cycle each at the pins
    EXPECT_GE((sc_core::sc_time_stamp() + d - t0) / dut->period(), static_cast<double>(n));
    w(mon::FLUSH, 1, d);
    wait(d);
    const sc_core::sc_time done = dut->drain(sc_core::sc_time_stamp());
    wait(done - sc_core::sc_time_stamp());
    d = sc_core::SC_ZERO_TIME;
    EXPECT_EQ(reg(tlm::TLM_READ_COMMAND, mon::STATUS, v, d), tlm::TLM_OK_RESPONSE);
    EXPECT_EQ((v >> mon::STATUS_FLUSH_DONE_BIT) & 1, 1u) << "STATUS " << v;
    EXPECT_EQ(reg(tlm::TLM_READ_COMMAND, mon::FLUSH_CYCLES, v, d), tlm::TLM_OK_RESPONSE);
    EXPECT_GT(v, 0u);
    for (std::uint64_t t = 0; t < g.tiles(); ++t)
      EXPECT_EQ(memory->u32(g.ct_base + 4 * t), ref.counters[t]) << "tile " << t;
    EXPECT_GT(memory->reads, 0u);
    EXPECT_EQ(memory->reads, memory->writes);  // read-modify-write per group
    sc_core::sc_stop();
  }
};

TEST(MonitorRtlSc, TlmTransactorsDriveThePinsAndCompareWithReference) {
  ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  MonitorRtlScConfig cfg;
  cfg.clock_mhz = 1000.0;
  MonitorRtlSc dut("rtl_monitor", cfg);
  Memory memory("memory");
  Host host("host");
  host.dut = &dut;
  host.memory = &memory;
  host.mmio.bind(dut.mmio);
  host.wr.bind(dut.wr);
  dut.mem.bind(memory.sock);
  sc_core::sc_start();
}

}  // namespace
