// Pin-level driver of the Verilated sparsity monitor (see monitor_rtl.h).
#include "spartan/rtl/monitor_rtl.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <stdexcept>

// Verilator's runtime headers are not -Wextra clean; they are third-party code.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include <verilated.h>
#include <verilated_vcd_c.h>

#include "Vsparsity_monitor.h"
#pragma GCC diagnostic pop

namespace spartan::rtl {

namespace {
constexpr unsigned kLineBytes = 128;
}

struct MonitorRtl::Impl {
  VerilatedContext ctx;
  std::unique_ptr<Vsparsity_monitor> top;
  std::unique_ptr<VerilatedVcdC> vcd;
  std::uint64_t wave_from = 0, wave_to = 0, wave_origin = 0;
  double wave_period_ps = 1000.0;  ///< VCD time is in ps (the file's $timescale): one clock period per cycle
  bool wave_armed = false;
  std::mt19937_64 rng;
};

MonitorRtl::MonitorRtl(const MonitorRtlConfig& cfg, FlushSink sink)
    : impl_(std::make_unique<Impl>()), cfg_(cfg), sink_(std::move(sink)) {
  impl_->rng.seed(cfg.seed);
  impl_->top = std::make_unique<Vsparsity_monitor>(&impl_->ctx, "monitor");
  auto& t = *impl_->top;
  t.slice_id = cfg.slice_id;
  t.s_valid = 0;
  t.mmio_valid = 0;
  t.m_ready = 0;
  t.m_done = 0;
  t.clk = 0;
  t.eval();
  reset();
}

MonitorRtl::~MonitorRtl() {
  if (impl_->vcd) impl_->vcd->close();
  impl_->top->final();
#if defined(SPARTAN_RTL_COVERAGE)
  // Coverage build: each model instance writes its own coverage file (merged by the report).
  if (const char* dir = std::getenv("SPARTAN_RTL_COVERAGE_DIR")) {
    static std::atomic<unsigned> n{0};
    const std::string path = std::string(dir) + "/monitor_" + std::to_string(n++) + ".dat";
    impl_->ctx.coveragep()->write(path.c_str());
  }
#endif
}

void MonitorRtl::open_wave(const std::string& path, std::uint64_t from, std::uint64_t to, double period_ps) {
  impl_->ctx.traceEverOn(true);
  impl_->vcd = std::make_unique<VerilatedVcdC>();
  impl_->top->trace(impl_->vcd.get(), 99);
  impl_->vcd->open(path.c_str());
  impl_->wave_from = from;
  impl_->wave_to = to;
  impl_->wave_origin = cycle_;
  impl_->wave_period_ps = period_ps > 2.0 ? period_ps : 2.0;
  impl_->wave_armed = true;
}

void MonitorRtl::tick() {
  auto& t = *impl_->top;
  // Memory side of the flush port: atomic adds are posted; each completes after the latency the sink
  // returns, reported on m_done (one completion per cycle). m_ready is high unless the test's random
  // back-pressure drops it.
  bool ready = !(cfg_.flush_ready_stall_pct && (impl_->rng() % 100) < cfg_.flush_ready_stall_pct);
  t.m_ready = ready;
  t.m_done = 0;
  if (!done_at_.empty() && *done_at_.begin() <= cycle_) {
    done_at_.erase(done_at_.begin());
    t.m_done = 1;
  }
  if (t.m_valid && ready) {
    AtomicAdd32B a;
    a.addr = t.m_addr;
    for (unsigned i = 0; i < 8; ++i) a.words[i] = t.m_data[i];
    a.mask = static_cast<std::uint8_t>(t.m_wmask);
    const std::uint32_t lat = sink_ ? sink_(a) : 0;
    done_at_.insert(cycle_ + 1 + lat);
    max_adds_in_flight_ = std::max(max_adds_in_flight_, done_at_.size());
  }
  t.clk = 1;
  t.eval();
  t.clk = 0;
  t.eval();
  if (impl_->vcd && cycle_ >= impl_->wave_from && cycle_ < impl_->wave_to) {
    // Two samples per clock (after the rising and the falling edge) at their times in ps, counted from the
    // cycle open_wave() was called, so that a viewer shows real time at the unit's clock ($timescale 1ps).
    const double k = double(cycle_ - impl_->wave_origin), p = impl_->wave_period_ps;
    impl_->vcd->dump(static_cast<std::uint64_t>(std::llround((k + 0.5) * p)));
    impl_->vcd->dump(static_cast<std::uint64_t>(std::llround((k + 1.0) * p)));
  }
  if (impl_->vcd && cycle_ + 1 == impl_->wave_to) {
    impl_->vcd->close();
    impl_->vcd.reset();
  }
  ++cycle_;
}

void MonitorRtl::reset() {
  auto& t = *impl_->top;
  t.rst = 1;
  t.s_valid = 0;
  t.mmio_valid = 0;
  done_at_.clear();
  tick();
  tick();
  t.rst = 0;
  run_until_idle();
}

bool MonitorRtl::busy() const { return impl_->top->busy || impl_->top->m_valid || !done_at_.empty(); }

void MonitorRtl::idle(std::uint64_t n) {
  for (std::uint64_t i = 0; i < n; ++i) tick();
}

void MonitorRtl::run_until_idle(std::uint64_t max_cycles) {
  std::uint64_t n = 0;
  while (busy()) {
    tick();
    if (++n > max_cycles) throw std::runtime_error("sparsity_monitor RTL: no idle within the cycle limit");
  }
}

std::uint32_t MonitorRtl::mmio_write(std::uint32_t offset, std::uint32_t value) {
  auto& t = *impl_->top;
  t.mmio_valid = 1;
  t.mmio_we = 1;
  t.mmio_addr = offset & 0xFFF;
  t.mmio_wdata = value;
  while (!t.mmio_ready) tick();
  tick();
  t.mmio_valid = 0;
  t.mmio_we = 0;
  while (!t.mmio_rvalid) tick();
  const std::uint32_t err = t.mmio_err;
  tick();
  return err;
}

std::uint32_t MonitorRtl::mmio_read(std::uint32_t offset, std::uint32_t& value) {
  auto& t = *impl_->top;
  t.mmio_valid = 1;
  t.mmio_we = 0;
  t.mmio_addr = offset & 0xFFF;
  while (!t.mmio_ready) tick();
  tick();
  t.mmio_valid = 0;
  while (!t.mmio_rvalid) tick();
  value = t.mmio_rdata;
  const std::uint32_t err = t.mmio_err;
  tick();
  return err;
}

std::uint64_t MonitorRtl::write_request(std::uint64_t addr, const std::uint8_t* data, std::uint32_t len) {
  const std::uint64_t line = addr & ~std::uint64_t(kLineBytes - 1);
  if (len == 0 || len > kLineBytes || addr + len > line + kLineBytes)
    throw std::invalid_argument("sparsity_monitor RTL: a write request must lie inside one 128 B line");
  auto& t = *impl_->top;
  t.s_addr = addr;
  t.s_len = len;
  std::uint8_t buf[kLineBytes] = {};
  std::memcpy(buf + (addr - line), data, len);
  for (unsigned w = 0; w < kLineBytes / 4; ++w) {
    std::uint32_t v;
    std::memcpy(&v, buf + 4 * w, 4);
    t.s_data[w] = v;
  }
  t.s_valid = 1;
  std::uint64_t waited = 0;
  while (!t.s_ready) {
    tick();
    ++waited;
  }
  tick();
  t.s_valid = 0;
  stall_cycles_ += waited;
  return waited;
}

}  // namespace spartan::rtl
