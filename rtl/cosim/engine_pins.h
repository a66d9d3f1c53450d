// Private to spartan_rtl_cosim: the Verilated compaction engine (rtl/src/compaction_engine.v) and the pin
// helpers shared by its two drivers, EngineRtl (engine_rtl.cpp, pin-level) and EngineRtlSc
// (engine_rtl_sc.cpp, SystemC/TLM transactors): reset, one clock, the 1024-bit line packing of rd_resp_data
// and wr_data/wr_strb (byte i of a line = bits [8i+7:8i], little-endian words), and the few internal
// signals the drivers observe.
#pragma once
#include <cstdint>
#include <memory>
#include <type_traits>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include <verilated.h>

#include "Vcompaction_engine.h"
#include "Vcompaction_engine___024root.h"
#include "Vcompaction_engine_tb1.h"
#include "Vcompaction_engine_tb1___024root.h"
#pragma GCC diagnostic pop

namespace spartan::rtl::detail {

/// `V`: Vcompaction_engine (the default build: TILE_BUFFERS = 4) or Vcompaction_engine_tb1 (TILE_BUFFERS = 1).
template <class V>
struct EngineModelT {
  VerilatedContext ctx;
  std::unique_ptr<V> top;

  /// Builds the model and applies the synchronous reset (4 clocks).
  EngineModelT() : top(std::make_unique<V>(&ctx, "engine")) { reset(); }
  EngineModelT(const EngineModelT&) = delete;
  EngineModelT& operator=(const EngineModelT&) = delete;

  void reset() {
    top->rst = 1;
    for (int i = 0; i < 4; ++i) clock();
    top->rst = 0;
  }
  /// One clock: rising edge (inputs set before are sampled), then the falling edge.
  void clock() {
    top->clk = 1;
    top->eval();
    top->clk = 0;
    top->eval();
  }
  /// Puts the 128 bytes of a line on rd_resp_data.
  void put_read_data(const std::uint8_t* line) {
    for (int w = 0; w < 32; ++w)
      top->rd_resp_data[w] = std::uint32_t(line[4 * w]) | (std::uint32_t(line[4 * w + 1]) << 8) |
                             (std::uint32_t(line[4 * w + 2]) << 16) | (std::uint32_t(line[4 * w + 3]) << 24);
  }
  /// The line on wr_data and its byte strobes (strb bit i: byte i written).
  void take_write(std::uint8_t bytes[128], std::uint64_t strb[2]) const {
    for (int w = 0; w < 32; ++w)
      for (int b = 0; b < 4; ++b) bytes[4 * w + b] = static_cast<std::uint8_t>(top->wr_data[w] >> (8 * b));
    strb[0] = top->wr_strb[0] | (std::uint64_t(top->wr_strb[1]) << 32);
    strb[1] = top->wr_strb[2] | (std::uint64_t(top->wr_strb[3]) << 32);
  }
  /// Job FSM state (S_IDLE = 0, S_FETCH = 3, S_CNTD = 4, S_PASS = 5, S_NEXT = 7, ...).
  std::uint8_t job_state() const { return top->rootp->compaction_engine__DOT__st; }
  /// Tile buffer the prefetcher fills next (pipelined build; it advances when the prefetcher starts the
  /// fetch of a compacted tile, and is reset to 0 at a job start); -1 in the sequential build.
  int prefetch_slot() const {
    if constexpr (std::is_same_v<V, Vcompaction_engine>) return top->rootp->compaction_engine__DOT__p_slot;
    else return -1;
  }
  /// A queued descriptor will start (CTRL.ENABLE set and the descriptor FIFO not empty).
  bool job_pending() const {
    return top->rootp->compaction_engine__DOT__enable && top->rootp->compaction_engine__DOT__q_level != 0;
  }
};
using EngineModel = EngineModelT<Vcompaction_engine>;        ///< TILE_BUFFERS = 4 (the default)
using EngineModelTb1 = EngineModelT<Vcompaction_engine_tb1>; ///< TILE_BUFFERS = 1 (sequential)

}  // namespace spartan::rtl::detail
