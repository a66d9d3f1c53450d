// libFuzzer target for the MMIO register interface of both Spartan units (SparsityMonitor and
// CompactionEngine): the input is a sequence of 8-byte operations (register reads/writes, malformed
// accesses, L2 write-path observations, simulated-time advances) sent through their TLM target sockets.
// Every access must be answered with a TLM response (never TLM_INCOMPLETE_RESPONSE), and no sequence may
// crash the model (ASan/UBSan), throw, or hang the simulation.
//
// One SystemC world (one monitor, one engine, one flat memory) is elaborated on the first input and
// reused: SystemC cannot re-elaborate in one process. Each input starts by disabling both units and
// clearing their error latches, so inputs are close to independent (queued jobs may still drain).
// Run: build-fuzz/bin/fuzz_hw_mmio hw/spartan/fuzz/corpus/fuzz_hw_mmio
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include "spartan/hw/compaction_engine.h"
#include "spartan/hw/flat_memory.h"
#include "spartan/hw/mmio.h"
#include "spartan/hw/regmap.h"
#include "spartan/hw/sparsity_monitor.h"

// libsystemc references sc_main; libFuzzer owns main().
extern "C" int sc_main(int, char**) { return 0; }

namespace {

using namespace spartan::hw;

struct Host : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<Host> mon{"mon"};
  tlm_utils::simple_initiator_socket<Host> eng{"eng"};
  explicit Host(sc_core::sc_module_name n) : sc_module(n) {}
};

struct World {
  FlatMemory mem{"mem"};
  SparsityMonitor mon{"monitor", MonitorConfig{}};
  CompactionEngine eng{"engine", EngineConfig{}};
  Host host{"host"};
  World() {
    host.mon.bind(mon.mmio);
    host.eng.bind(eng.mmio);
    mon.mem.bind(mem.socket);
    eng.mem.bind(mem.socket);
    sc_core::sc_start(sc_core::SC_ZERO_TIME);  // end of elaboration
  }
};

World& world() {
  static World* w = new World();  // never destroyed: SystemC objects die with the process
  return *w;
}

tlm::tlm_response_status access(tlm_utils::simple_initiator_socket<Host>& s, bool write, std::uint64_t addr,
                                unsigned char* data, unsigned len, unsigned stream, unsigned char* be,
                                unsigned be_len) {
  tlm::tlm_generic_payload p;
  p.set_command(write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
  p.set_address(addr);
  p.set_data_ptr(data);
  p.set_data_length(len);
  p.set_streaming_width(stream);
  p.set_byte_enable_ptr(be);
  p.set_byte_enable_length(be_len);
  p.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  sc_core::sc_time d = sc_core::SC_ZERO_TIME;
  s->b_transport(p, d);
  const tlm::tlm_response_status st = p.get_response_status();
  if (st == tlm::TLM_INCOMPLETE_RESPONSE) {
    std::fprintf(stderr, "fuzz_hw_mmio: %s 0x%llx len %u left TLM_INCOMPLETE_RESPONSE\n", write ? "write" : "read",
                 static_cast<unsigned long long>(addr), len);
    std::abort();
  }
  return st;
}

void write32(tlm_utils::simple_initiator_socket<Host>& s, std::uint32_t off, std::uint32_t v) {
  unsigned char b[4];
  mmio_store_u32(b, v);
  access(s, true, off, b, 4, 4, nullptr, 0);
}

void quiesce(World& w) {
  write32(w.host.mon, regmap::monitor::CTRL, 0);
  for (unsigned r = 0; r < regmap::monitor::kNumRegions; ++r)
    write32(w.host.mon, regmap::monitor::region_reg(r, regmap::monitor::R_CFG), 0);
  write32(w.host.mon, regmap::monitor::ERR_CODE, 0);
  write32(w.host.eng, regmap::engine::ERR_CODE, 0);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  World& w = world();
  quiesce(w);
  // Operations: [kind][off lo][off hi][v0][v1][v2][v3][flags].
  for (std::size_t i = 0; i + 8 <= size && i < 8 * 256; i += 8) {
    const std::uint8_t* op = data + i;
    const unsigned kind = op[0] % 8;
    std::uint32_t off = op[1] | (op[2] << 8);
    std::uint32_t v;
    std::memcpy(&v, op + 3, 4);
    const std::uint8_t flags = op[7];
    if (!(flags & 0x80)) off &= 0xFFC;  // mostly aligned, in-window accesses reach register decode
    auto& sock = (kind & 1) ? w.host.eng : w.host.mon;
    switch (kind) {
      case 0:
      case 1: {  // register write
        unsigned char b[4];
        mmio_store_u32(b, v);
        access(sock, true, off, b, 4, 4, nullptr, 0);
        break;
      }
      case 2:
      case 3: {  // register read
        unsigned char b[4] = {};
        access(sock, false, off, b, 4, 4, nullptr, 0);
        break;
      }
      case 4:
      case 5: {  // malformed access: odd length, streaming width, byte enables
        unsigned char b[16] = {};
        unsigned char be[16];
        for (unsigned k = 0; k < 16; ++k) be[k] = (v >> (k % 32)) & 1 ? 0xFF : 0x00;
        const unsigned len = 1 + (flags & 0x0F);
        const unsigned stream = (flags & 0x10) ? 1 + ((flags >> 5) & 3) : len;
        access(sock, (flags & 0x40) != 0, off, b, len, stream, (v & 1) ? be : nullptr, (v & 1) ? 1 + (v >> 28) : 0);
        break;
      }
      case 6: {  // an L2 write-path observation (the monitor's data input)
        unsigned char line[128];
        for (unsigned k = 0; k < sizeof line; ++k) line[k] = static_cast<unsigned char>((k * 0x9Du + v) & (flags | 1) ? k ^ v : 0);
        const std::uint64_t addr = (static_cast<std::uint64_t>(off) << 12) ^ v;
        w.mon.observe_write(addr, line, 1 + (flags & 0x7F), sc_core::sc_time_stamp());
        break;
      }
      default:  // let the flush / job threads run
        sc_core::sc_start(sc_core::sc_time(v % 4096, sc_core::SC_NS));
        break;
    }
  }
  sc_core::sc_start(sc_core::sc_time(20, sc_core::SC_US));  // drain flushes and queued jobs (bounded)
  return 0;
}
