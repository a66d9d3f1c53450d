#include "spartan/hw/gpu/microbench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <sstream>

#include "spartan/common/build_info.h"
#include "spartan/hw/gpu/backing_store.h"
#include "spartan/hw/gpu/workloads.h"

namespace spartan::hw::gpu {
namespace {

// Disjoint regions so that one benchmark never sees another's data in L2.
constexpr std::uint64_t kReadBase = 1ull << 32, kWriteBase = 2ull << 32, kCopyBase = 3ull << 32,
                        kChaseBase = 5ull << 32, kSweepBase = 6ull << 32, kRandomBase = 1ull << 40;

template <class Make>
KernelResult run_all(GpuSystem& gpu, Make make) {
  std::vector<std::unique_ptr<RequestSource>> owned;
  std::vector<RequestSource*> ptrs;
  for (std::uint32_t i = 0; i < gpu.num_sms(); ++i) {
    owned.push_back(make(i, std::uint32_t(gpu.num_sms())));
    ptrs.push_back(owned.back().get());
  }
  return gpu.run(ptrs);
}

double mean_core_cycles(const GpuConfig& c, const KernelResult& k) {
  return c.core_clock().ps_to_cycles(ps_t(k.latency_ps.mean()));
}

}  // namespace

double find_knee(const std::vector<SweepPoint>& s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i].hit_rate >= 0.5) continue;
    if (i == 0) return double(s[0].working_set_bytes);
    double x0 = double(s[i - 1].working_set_bytes), x1 = double(s[i].working_set_bytes);
    double y0 = s[i - 1].hit_rate, y1 = s[i].hit_rate;
    return x0 + (y0 - 0.5) / (y0 - y1) * (x1 - x0);
  }
  return 0;
}

MicrobenchReport run_microbench(GpuSystem& gpu, const MicrobenchOptions& opt) {
  auto wall0 = std::chrono::steady_clock::now();
  const GpuConfig& c = gpu.config();
  const std::uint32_t line = c.l2.slice.line_bytes;
  MicrobenchReport rep;
  rep.gpu = c.name;
  rep.gpu_file = c.file;
  rep.peak_bytes_per_s = c.peak_dram_bytes_per_s();
  rep.l2_size_bytes = c.l2.size_bytes();
  std::uint64_t tx = 0;

  if (opt.stream) {
    std::uint64_t bytes = std::max<std::uint64_t>(16ull << 20, std::uint64_t(opt.stream_l2_multiple * double(rep.l2_size_bytes)));
    bytes = bytes / line * line;
    auto bw = [&](const char* name, std::uint64_t moved, ps_t t0, ps_t t1) {
      BandwidthResult b;
      b.kernel = name;
      b.bytes = moved;
      b.seconds = double(t1 - t0) * 1e-12;
      b.bytes_per_s = double(moved) / b.seconds;
      b.peak_bytes_per_s = rep.peak_bytes_per_s;
      rep.bandwidth.push_back(b);
    };
    gpu.flush_l2();
    auto k = run_all(gpu, [&](std::uint32_t i, std::uint32_t n) {
      return std::make_unique<StreamSource>(kReadBase, bytes, line, i, n, false);
    });
    tx += k.requests;
    bw("stream_read", bytes, k.start_ps, k.end_ps);

    gpu.flush_l2();
    k = run_all(gpu, [&](std::uint32_t i, std::uint32_t n) {
      return std::make_unique<StreamSource>(kWriteBase, bytes, line, i, n, true, 1, 0x5a);
    });
    tx += k.requests;
    bw("stream_write", bytes, k.start_ps, gpu.flush_l2());  // counts until the data is in DRAM

    k = run_all(gpu, [&](std::uint32_t i, std::uint32_t n) {
      return std::make_unique<CopySource>(kWriteBase, kCopyBase, bytes, line, i, n,
                                          std::max<std::uint32_t>(1, c.sm.max_outstanding_lines / 2));
    });
    tx += k.requests;
    bw("copy", 2 * bytes, k.start_ps, gpu.flush_l2());

    // Random sector reads over 64 x L2: each SM its share of opt.random_requests, all independent.
    const std::uint32_t sector = c.l2.slice.sector_bytes;
    const std::uint64_t region = 64 * rep.l2_size_bytes;
    const std::uint64_t per_sm = std::max<std::uint64_t>(1, opt.random_requests / gpu.num_sms());
    gpu.flush_l2();
    k = run_all(gpu, [&](std::uint32_t i, std::uint32_t) {
      return std::make_unique<RandomReadSource>(kRandomBase, region, sector, per_sm, i, 7);
    });
    tx += k.requests;
    bw("random_read", k.requests * sector, k.start_ps, k.end_ps);
  }

  if (opt.chase) {
    // L2 hits: a 256-line chain (far below any L2), one warm-up lap, then measured laps.
    auto store_chain = [&](std::uint64_t base, std::uint64_t count, std::uint64_t stride, std::uint64_t seed) {
      for (auto& [a, v] : make_pointer_chain(base, count, stride, seed)) {
        std::uint8_t b[8];
        for (int i = 0; i < 8; ++i) b[i] = std::uint8_t(v >> (8 * i));
        gpu.backing_store().write(a, b, 8);
      }
    };
    store_chain(kChaseBase, 256, line, 1);
    gpu.flush_l2();
    // Rows closed and calendars rebased: the latencies do not depend on which groups ran before (the random
    // reads left other rows open than the streams did: r9nano's DRAM chase moved 253.2 -> 255.5 core cycles).
    gpu.align_to_refresh();
    PointerChaseSource warm(kChaseBase, 256);
    tx += gpu.run({&warm}).requests;
    PointerChaseSource hit(kChaseBase, opt.chase_steps);
    auto k = gpu.run({&hit});
    tx += k.requests;
    rep.latency.l2_hit_core_cycles = mean_core_cycles(c, k);
    // DRAM: a chain over lines 64 KiB apart (distinct rows), every load a first touch after a flush.
    const std::uint64_t stride = 64 * 1024 + line;
    std::uint64_t count = std::max<std::uint64_t>(opt.chase_steps + 1, 1024);
    store_chain(kChaseBase + (1ull << 30), count, stride, 2);
    gpu.flush_l2();
    PointerChaseSource miss(kChaseBase + (1ull << 30), std::min(opt.chase_steps, count));
    k = gpu.run({&miss});
    tx += k.requests;
    rep.latency.dram_core_cycles = mean_core_cycles(c, k);
    rep.latency.dram_p95_core_cycles = c.core_clock().ps_to_cycles(k.latency_ps.percentile(0.95));
    rep.latency.samples = k.requests;
  }

  if (opt.sweep) {
    auto& st = gpu.stats();
    for (double f : opt.sweep_fractions) {
      std::uint64_t ws = std::max<std::uint64_t>(line, std::uint64_t(f * double(rep.l2_size_bytes)) / line * line);
      gpu.flush_l2();
      auto k = run_all(gpu, [&](std::uint32_t i, std::uint32_t n) {
        return std::make_unique<StreamSource>(kSweepBase, ws, line, i, n, false, 1);
      });
      tx += k.requests;
      std::uint64_t h0 = st.total("l2_slice", "read_hits"), m0 = st.total("l2_slice", "read_misses");
      k = run_all(gpu, [&](std::uint32_t i, std::uint32_t n) {
        return std::make_unique<StreamSource>(kSweepBase, ws, line, i, n, false, opt.sweep_passes);
      });
      tx += k.requests;
      std::uint64_t h = st.total("l2_slice", "read_hits") - h0, m = st.total("l2_slice", "read_misses") - m0;
      rep.sweep.push_back({ws, h + m ? double(h) / double(h + m) : 0});
    }
    rep.knee_bytes = find_knee(rep.sweep);
  }
  rep.line_transactions = tx;
  rep.sim_seconds_wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return rep;
}

nlohmann::json MicrobenchReport::to_json() const {
  nlohmann::json j;
  j["build"] = spartan::build_info_json<nlohmann::json>();
  j["gpu"] = gpu;
  j["gpu_file"] = gpu_file;
  j["peak_dram_bytes_per_s"] = peak_bytes_per_s;
  j["l2_size_bytes"] = l2_size_bytes;
  for (auto& b : bandwidth)
    j["bandwidth"].push_back({{"kernel", b.kernel}, {"bytes", b.bytes}, {"seconds", b.seconds},
                              {"bytes_per_s", b.bytes_per_s}, {"fraction_of_peak", b.fraction_of_peak()}});
  // Only the groups that ran are written: a group that did not run has no results (not zeros).
  if (latency.samples)
    j["latency"] = {{"l2_hit_core_cycles", latency.l2_hit_core_cycles}, {"dram_core_cycles", latency.dram_core_cycles},
                    {"dram_p95_core_cycles", latency.dram_p95_core_cycles}, {"samples", latency.samples}};
  if (!sweep.empty()) {
    for (auto& p : sweep) j["l2_sweep"].push_back({{"working_set_bytes", p.working_set_bytes}, {"hit_rate", p.hit_rate}});
    // A sweep whose hit rate never falls below 50 % has no knee: null rather than 0.
    j["l2_knee_bytes"] = knee_bytes > 0 ? nlohmann::json(knee_bytes) : nlohmann::json(nullptr);
    j["l2_knee_over_size"] = knee_bytes > 0 && l2_size_bytes ? nlohmann::json(knee_bytes / double(l2_size_bytes)) : nlohmann::json(nullptr);
  }
  j["wall_seconds"] = sim_seconds_wall;
  j["line_transactions"] = line_transactions;
  return j;
}

std::string MicrobenchReport::to_text(const GpuConfig& cfg) const {
  std::ostringstream o;
  char buf[1024];
  std::snprintf(buf, sizeof buf, "GPU %s: peak DRAM %.1f GB/s, L2 %.2f MiB\n", gpu.c_str(), peak_bytes_per_s / 1e9,
                double(l2_size_bytes) / (1 << 20));
  o << buf;
  if (!bandwidth.empty()) o << "\nbandwidth            GB/s    % of peak\n";
  for (auto& b : bandwidth) {
    std::snprintf(buf, sizeof buf, "  %-14s %9.1f   %6.1f%%\n", b.kernel.c_str(), b.bytes_per_s / 1e9,
                  100 * b.fraction_of_peak());
    o << buf;
  }
  if (latency.samples) {
    const auto& t = cfg.dram.timing;
    double dram_to_core = cfg.clocks.core_mhz / cfg.clocks.dram_mhz;
    std::snprintf(buf, sizeof buf,
                  "\npointer chase (core cycles @ %.0f MHz)   measured   preset parameters\n"
                  "  L2 hit                             %8.1f   l2.hit_latency_cycles %u (L2 clock) + 2 x crossbar %u\n"
                  "  DRAM (cold miss)                   %8.1f   controller %u + tRCD %u + CL %u DRAM cycles"
                  " (= %.0f core cycles); p95 %.1f (histogram bucket midpoint, within 6.25 %%)\n",
                  cfg.clocks.core_mhz, latency.l2_hit_core_cycles, cfg.l2.slice.hit_latency_cycles,
                  cfg.crossbar.latency_cycles, latency.dram_core_cycles, cfg.dram.controller_latency_cycles, t.tRCD,
                  t.CL, (cfg.dram.controller_latency_cycles + t.tRCD + t.CL) * dram_to_core,
                  latency.dram_p95_core_cycles);
    o << buf;
  }
  if (!sweep.empty()) {
    o << "\nL2 footprint sweep   working set (MiB)   x L2 size   hit rate\n";
    for (auto& p : sweep) {
      std::snprintf(buf, sizeof buf, "                     %12.2f   %9.2f   %7.3f\n",
                    double(p.working_set_bytes) / (1 << 20), double(p.working_set_bytes) / double(l2_size_bytes),
                    p.hit_rate);
      o << buf;
    }
    // The sweep's resolution is its step: name the two samples the 50 % crossing lies between (review F11).
    std::size_t k = 0;
    while (k < sweep.size() && sweep[k].hit_rate >= 0.5) ++k;
    if (k > 0 && k < sweep.size()) {
      std::snprintf(buf, sizeof buf,
                    "  knee (hit rate 50%%): between %.2f and %.2f MiB (%.2f-%.2f x L2 size; hit rate %.3f -> %.3f),"
                    " linearly interpolated %.2f MiB\n",
                    double(sweep[k - 1].working_set_bytes) / (1 << 20), double(sweep[k].working_set_bytes) / (1 << 20),
                    double(sweep[k - 1].working_set_bytes) / double(l2_size_bytes),
                    double(sweep[k].working_set_bytes) / double(l2_size_bytes), sweep[k - 1].hit_rate, sweep[k].hit_rate,
                    knee_bytes / (1 << 20));
    } else {
      std::snprintf(buf, sizeof buf, "  knee (hit rate 50%%): %s\n",
                    k == 0 ? "at or below the smallest working set" : "none (the hit rate never falls below 50 %)");
    }
    o << buf;
  }
  std::snprintf(buf, sizeof buf, "\n%llu line transactions in %.2f s wall (%.2f M/s)\n",
                (unsigned long long)line_transactions, sim_seconds_wall,
                sim_seconds_wall > 0 ? double(line_transactions) / sim_seconds_wall / 1e6 : 0);
  o << buf;
  return o.str();
}

}  // namespace spartan::hw::gpu
