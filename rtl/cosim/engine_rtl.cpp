// Pin-level driver of the Verilated compaction engine (see engine_rtl.h).
#include "spartan/rtl/engine_rtl.h"

#include <algorithm>
#include <deque>
#include <stdexcept>
#include <string>

#include "engine_pins.h"

namespace spartan::rtl {

namespace {
struct Driver {
  unsigned rd_lat, wr_lat;
  std::uint64_t cycle = 0;
  struct Rd {
    std::uint64_t addr, due;
  };
  std::deque<Rd> reads;
  struct Wr {
    std::uint64_t due;
    bool err;
  };
  std::deque<Wr> wresp;

  template <class Model>
  EngineRtlResult run(Model& m, const hw::regmap::Descriptor& d, const EngineRtl::LineReader& read_line,
                      std::uint64_t max_cycles, WrittenLines& written, const EngineRtl::LineFault& fault,
                      const EngineRtl::WriteTap& tap, const EngineRtl::Fetch* fetch = nullptr);
  std::uint64_t compl_ptr = 0;   // EngineRtl::set_completion
  std::uint32_t compl_index = 0;
};
}  // namespace

struct EngineRtl::Impl {
  Driver drv;
  std::unique_ptr<detail::EngineModel> m2;
  std::unique_ptr<detail::EngineModelTb1> m1;
};

EngineRtl::EngineRtl(unsigned rd, unsigned wr, unsigned tile_buffers) : impl_(std::make_unique<Impl>()) {
  if (!has_build(tile_buffers))
    throw std::invalid_argument("EngineRtl: the RTL is built with TILE_BUFFERS 1 and " +
                                std::to_string(kPipelinedTileBuffers) + " only, not " + std::to_string(tile_buffers));
  if (tile_buffers == 1) impl_->m1 = std::make_unique<detail::EngineModelTb1>();
  else impl_->m2 = std::make_unique<detail::EngineModel>();
  impl_->drv.rd_lat = rd;
  impl_->drv.wr_lat = wr;
}
EngineRtl::~EngineRtl() = default;

EngineRtlResult EngineRtl::run(const hw::regmap::Descriptor& d, const LineReader& read_line, std::uint64_t max_cycles) {
  written_.clear();
  impl_->drv.compl_ptr = compl_ptr_;
  impl_->drv.compl_index = compl_index_;
  return impl_->m1 ? impl_->drv.run(*impl_->m1, d, read_line, max_cycles, written_, fault_, tap_)
                   : impl_->drv.run(*impl_->m2, d, read_line, max_cycles, written_, fault_, tap_);
}

EngineRtlResult EngineRtl::run_fetched(const Fetch& f, const LineReader& read_line, std::uint64_t max_cycles) {
  written_.clear();
  impl_->drv.compl_ptr = compl_ptr_;
  impl_->drv.compl_index = compl_index_;
  const hw::regmap::Descriptor unused;
  return impl_->m1 ? impl_->drv.run(*impl_->m1, unused, read_line, max_cycles, written_, fault_, tap_, &f)
                   : impl_->drv.run(*impl_->m2, unused, read_line, max_cycles, written_, fault_, tap_, &f);
}

template <class Model>
EngineRtlResult Driver::run(Model& m, const hw::regmap::Descriptor& d, const EngineRtl::LineReader& read_line,
                            std::uint64_t max_cycles, WrittenLines& written, const EngineRtl::LineFault& fault,
                            const EngineRtl::WriteTap& tap, const EngineRtl::Fetch* fetch) {
  auto& I = *this;
  auto& t = *m.top;
  EngineRtlResult res;
  const std::uint64_t c0 = I.cycle;
  std::uint8_t line[128];
  // Per-tile latency of compacted tiles (rtl/src/compaction_engine.v: S_IDLE = 0, S_FETCH = 3, S_CNTD = 4,
  // S_PASS = 5, S_NEXT = 7): cycles from the start of the tile's fetch to its header being issued. Sequential
  // build: the job FSM enters S_FETCH. Pipelined build: the prefetcher starts the fetch (its buffer slot
  // advances), possibly several tiles ahead of the job FSM; compacted tiles are fetched and emitted in tile
  // order, so the starts queue up and the n-th header pairs with the n-th start.
  std::uint8_t prev_st = m.job_state();
  int prev_slot = m.prefetch_slot();
  std::uint64_t fetch_start = 0;
  std::uint64_t job_start = ~std::uint64_t(0);  // the cycle the job FSM first leaves IDLE in this run
  std::uint64_t job_end = ~std::uint64_t(0);    // the cycle it first returns to IDLE after that
  std::deque<std::uint64_t> prefetch_starts;
  auto tick = [&] {
    t.rd_ready = 1;
    t.wr_ready = 1;
    t.rd_resp_valid = 0;
    t.rd_resp_err = 0;
    if (!I.reads.empty() && I.reads.front().due <= I.cycle) {
      read_line(I.reads.front().addr, line);
      m.put_read_data(line);
      t.rd_resp_valid = 1;
      t.rd_resp_err = fault && fault(I.reads.front().addr & ~std::uint64_t(127), false);
    }
    t.wr_resp_valid = 0;
    t.wr_resp_err = 0;
    if (!I.wresp.empty() && I.wresp.front().due <= I.cycle) {
      t.wr_resp_valid = 1;
      t.wr_resp_err = I.wresp.front().err;
      I.wresp.pop_front();
    }
    // No settle eval before sampling: every output the driver samples (rd_valid/rd_addr, wr_*, rd_resp_ready,
    // mmio_r*, busy) comes from registers, so it already holds this cycle's value; the inputs set above are
    // seen by the rising-edge eval below.
    const bool rd_fire = t.rd_valid && t.rd_ready;
    const std::uint64_t rd_a = t.rd_addr;
    const bool resp_fire = t.rd_resp_valid && t.rd_resp_ready;
    if (t.wr_valid && t.wr_ready) {
      std::uint8_t bytes[128];
      std::uint64_t strb[2];
      m.take_write(bytes, strb);
      const bool err = fault && fault(t.wr_addr & ~std::uint64_t(127), true);
      if (tap) tap(t.wr_addr & ~std::uint64_t(127), bytes, strb);
      if (!err) written.write(t.wr_addr, bytes, strb);
      I.wresp.push_back({I.cycle + I.wr_lat, err});
    }
    m.clock();
    const std::uint8_t st = m.job_state();
    const int slot = m.prefetch_slot();
    if (slot >= 0 && slot != prev_slot && prev_st != 0) prefetch_starts.push_back(I.cycle);  // not the job-start reset
    prev_slot = slot;
    if (st == 3 && prev_st != 3) fetch_start = I.cycle;
    if (st == 7 && (prev_st == 5 || prev_st == 4)) {
      ++res.tiles_compacted;
      std::uint64_t start = fetch_start;
      if (slot >= 0) {
        if (prefetch_starts.empty()) throw std::logic_error("compaction engine RTL: a compacted tile's header without a prefetch start");
        start = prefetch_starts.front();
        prefetch_starts.pop_front();
      }
      res.compacted_tile_cycles += I.cycle - start;
    }
    if (st != 0 && prev_st == 0 && job_start == ~std::uint64_t(0)) job_start = I.cycle;
    if (st == 0 && prev_st != 0 && job_start != ~std::uint64_t(0) && job_end == ~std::uint64_t(0)) job_end = I.cycle;
    prev_st = st;
    if (resp_fire) I.reads.pop_front();
    if (rd_fire) {
      I.reads.push_back({rd_a, I.cycle + I.rd_lat});
      res.max_reads_in_flight = std::max<std::uint64_t>(res.max_reads_in_flight, I.reads.size());
    }
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
  std::uint32_t done0 = 0;
  if (I.compl_ptr != 0 || fetch) mmio(true, e::ERR_CODE, 0);
  mmio(true, e::COMPL_PTR_LO, static_cast<std::uint32_t>(I.compl_ptr));
  mmio(true, e::COMPL_PTR_HI, static_cast<std::uint32_t>(I.compl_ptr >> 32));
  if (I.compl_ptr != 0 && !fetch) mmio(true, e::ENGINE_INDEX, I.compl_index);
  if (!fetch) {
    const auto w = d.to_words();
    for (unsigned i = 0; i < e::kDescWords; ++i) mmio(true, e::DESC_BASE + 4 * i, w[i]);
    done0 = mmio(false, e::DONE_COUNT, 0);
    mmio(true, e::SUBMIT, 1);
    res.submit_error = t.mmio_err;  // a refused descriptor never completes: do not wait for it
    mmio(true, e::CTRL, 1);
  } else {
    mmio(true, e::DESC_PTR_LO, static_cast<std::uint32_t>(fetch->desc_ptr));
    mmio(true, e::DESC_PTR_HI, static_cast<std::uint32_t>(fetch->desc_ptr >> 32));
    mmio(true, e::ENGINE_INDEX, fetch->engine_index);
    mmio(true, e::CTRL, 1);  // enabled first: the fetched job starts on its own (fetch_to_start_cycles)
    done0 = mmio(false, e::DONE_COUNT, 0);
    const std::uint64_t fetch_cycle = I.cycle;  // the cycle that takes the FETCH write
    mmio(true, e::FETCH, fetch->engine_index + 1);
    res.submit_error = t.mmio_err;
    // the fetch's own errors are latched in ERR_CODE when its read completes
    while (res.submit_error == 0 && (mmio(false, e::STATUS, 0) >> e::STATUS_FETCH_BUSY_BIT) & 1u)
      if (I.cycle - c0 >= max_cycles) return res;
    if (res.submit_error == 0) res.submit_error = mmio(false, e::ERR_CODE, 0) & 0xFFu;
    if (res.submit_error == 0) {
      while (job_start == ~std::uint64_t(0) && I.cycle - c0 < max_cycles) tick();
      res.fetch_to_start_cycles = job_start - fetch_cycle;
    }
  }
  while (res.submit_error == 0 && I.cycle - c0 < max_cycles) {
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
  // a job without a record returns to IDLE in the cycle LAST_CYCLES counts to (checked: 0 in every such run)
  if (res.finished && job_end != ~std::uint64_t(0)) res.record_cycles = job_end - job_start - res.job_cycles;
  if (I.compl_ptr != 0) res.completion_error = mmio(false, e::ERR_CODE, 0);
  res.rtl_cycles = I.cycle - c0;
  return res;
}

}  // namespace spartan::rtl
