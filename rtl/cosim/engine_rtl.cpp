// Pin-level driver of the Verilated compaction engine (see engine_rtl.h).
#include "spartan/rtl/engine_rtl.h"

#include <deque>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include <verilated.h>

#include "Vcompaction_engine.h"
#pragma GCC diagnostic pop

namespace spartan::rtl {

struct EngineRtl::Impl {
  VerilatedContext ctx;
  std::unique_ptr<Vcompaction_engine> top;
  unsigned rd_lat, wr_lat;
  std::uint64_t cycle = 0;
  struct Rd {
    std::uint64_t addr, due;
  };
  std::deque<Rd> reads;
  std::deque<std::uint64_t> wresp;
};

EngineRtl::EngineRtl(unsigned rd, unsigned wr) : impl_(std::make_unique<Impl>()) {
  impl_->rd_lat = rd;
  impl_->wr_lat = wr;
  impl_->top = std::make_unique<Vcompaction_engine>(&impl_->ctx, "engine");
  auto& t = *impl_->top;
  t.rst = 1;
  for (int i = 0; i < 4; ++i) {
    t.clk = 1;
    t.eval();
    t.clk = 0;
    t.eval();
  }
  t.rst = 0;
}
EngineRtl::~EngineRtl() = default;

EngineRtlResult EngineRtl::run(const hw::regmap::Descriptor& d, const LineReader& read_line, std::uint64_t max_cycles) {
  auto& I = *impl_;
  auto& t = *I.top;
  written_.clear();
  EngineRtlResult res;
  const std::uint64_t c0 = I.cycle;
  std::uint8_t line[128];
  auto tick = [&] {
    t.rd_ready = 1;
    t.wr_ready = 1;
    t.rd_resp_valid = 0;
    t.rd_resp_err = 0;
    if (!I.reads.empty() && I.reads.front().due <= I.cycle) {
      read_line(I.reads.front().addr, line);
      for (int w = 0; w < 32; ++w)
        t.rd_resp_data[w] = std::uint32_t(line[4 * w]) | (std::uint32_t(line[4 * w + 1]) << 8) |
                            (std::uint32_t(line[4 * w + 2]) << 16) | (std::uint32_t(line[4 * w + 3]) << 24);
      t.rd_resp_valid = 1;
    }
    t.wr_resp_valid = 0;
    t.wr_resp_err = 0;
    if (!I.wresp.empty() && I.wresp.front() <= I.cycle) {
      t.wr_resp_valid = 1;
      I.wresp.pop_front();
    }
    t.eval();
    const bool rd_fire = t.rd_valid && t.rd_ready;
    const std::uint64_t rd_a = t.rd_addr;
    const bool resp_fire = t.rd_resp_valid && t.rd_resp_ready;
    if (t.wr_valid && t.wr_ready) {
      for (int i = 0; i < 128; ++i)
        if ((t.wr_strb[i / 32] >> (i % 32)) & 1u)
          written_[t.wr_addr + i] = static_cast<std::uint8_t>(t.wr_data[i / 4] >> (8 * (i % 4)));
      I.wresp.push_back(I.cycle + I.wr_lat);
    }
    t.clk = 1;
    t.eval();
    t.clk = 0;
    t.eval();
    if (resp_fire) I.reads.pop_front();
    if (rd_fire) I.reads.push_back({rd_a, I.cycle + I.rd_lat});
    ++I.cycle;
  };
  auto mmio = [&](bool we, std::uint32_t off, std::uint32_t v) {
    t.mmio_valid = 1;
    t.mmio_we = we;
    t.mmio_addr = off;
    t.mmio_wdata = v;
    tick();
    t.mmio_valid = 0;
    return t.mmio_rdata;
  };
  namespace e = hw::regmap::engine;
  const auto w = d.to_words();
  for (unsigned i = 0; i < e::kDescWords; ++i) mmio(true, e::DESC_BASE + 4 * i, w[i]);
  const std::uint32_t done0 = mmio(false, e::DONE_COUNT, 0);
  mmio(true, e::SUBMIT, 1);
  mmio(true, e::CTRL, 1);
  while (I.cycle - c0 < max_cycles) {
    tick();
    if (!t.busy && (I.cycle & 63) == 0 && mmio(false, e::DONE_COUNT, 0) != done0) {
      res.finished = true;
      break;
    }
  }
  mmio(true, e::CTRL, 0);
  res.status = mmio(false, e::LAST_STATUS, 0);
  res.out_bytes = mmio(false, e::LAST_OUT_BYTES, 0);
  res.job_cycles = mmio(false, e::LAST_CYCLES, 0);
  res.rtl_cycles = I.cycle - c0;
  return res;
}

}  // namespace spartan::rtl
