// Speed benchmark of the GPU memory model: simulated line transactions per second of host time on a
// streaming workload (every SM streams line-granular reads, then writes, over 8x the L2 size).
// Usage: bench_hw_gpu [preset=v100] [l2_multiple=8] [stats.json]. Prints CPU-time and wall-time rates
// beside the target (2 M line transactions/s on one core). Single-threaded (SystemC runs on one core).
// With a third argument, writes every component's stats after both workloads there, plus each workload's
// simulated kernel result (for checking that a speed change leaves the simulated results identical).
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "spartan/common/atomic_file.h"
#include "spartan/common/build_info.h"
#include "spartan/common/cli.h"
#include "spartan/common/cli_checks.h"
#include "spartan/common/error.h"
#include "spartan/hw/gpu/gpu_system.h"
#include "spartan/hw/gpu/workloads.h"

using namespace spartan::hw;
using namespace spartan::hw::gpu;

int main(int argc, char** argv) {
  return spartan::run_cli("bench_hw_gpu", [&] {
    const std::string usage =
        "usage: bench_hw_gpu [preset=v100] [l2_multiple=8] [stats.json]\n"
        "  preset: a preset name (v100, r9nano, a100, h100) or a YAML file; l2_multiple: bytes streamed per\n"
        "  workload as a multiple of the L2 size (> 0); stats.json: write the components' stats there\n";
    if (argc > 4) throw spartan::InputError("at most three arguments (see --help)");
    for (int i = 1; i < argc; ++i)
      if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") {
        std::fputs(usage.c_str(), stdout);
        return 0;
      }
    std::string preset = argc > 1 ? argv[1] : "v100";
    double mult = 8.0;
    if (argc > 2) {
      char* end = nullptr;
      mult = std::strtod(argv[2], &end);
      if (end == argv[2] || *end != '\0' || !(mult > 0) || !std::isfinite(mult) || mult > 1024)
        throw spartan::InputError(std::string("l2_multiple must be a number in (0, 1024], got '") + argv[2] + "'");
    }
    if (argc > 3) spartan::check_output_file("stats.json", argv[3]);
    auto g = std::make_unique<GpuSystem>(load_gpu_config(preset, "preset (first argument)"));
    const auto& c = g->config();
    std::uint64_t bytes = std::uint64_t(mult * double(c.l2.size_bytes())) / c.l2.slice.line_bytes * c.l2.slice.line_bytes;
    std::printf("preset %s: %u SMs, %u L2 slices, %u DRAM channels; streaming %.1f MiB read then write\n",
                c.name.c_str(), c.sm.count, c.l2.slices, c.dram.channels, double(bytes) / (1 << 20));
    nlohmann::json kernels = nlohmann::json::array();
    std::printf("%-14s %12s %10s %10s %12s %12s %8s\n", "workload", "line_tx", "cpu_s", "wall_s", "M_tx/s_cpu",
                "M_tx/s_wall", "GB/s_sim");
    for (int write = 0; write < 2; ++write) {
      std::vector<std::unique_ptr<RequestSource>> own;
      std::vector<RequestSource*> p;
      for (std::uint32_t i = 0; i < c.sm.count; ++i) {
        own.push_back(std::make_unique<StreamSource>((4ull + write) << 32, bytes, c.l2.slice.line_bytes, i,
                                                     c.sm.count, write == 1));
        p.push_back(own.back().get());
      }
      auto w0 = std::chrono::steady_clock::now();
      std::clock_t c0 = std::clock();
      auto k = g->run(p);
      double cpu = double(std::clock() - c0) / CLOCKS_PER_SEC;
      double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
      std::printf("%-14s %12llu %10.3f %10.3f %12.2f %12.2f %8.1f\n", write ? "stream_write" : "stream_read",
                  (unsigned long long)k.requests, cpu, wall, double(k.requests) / cpu / 1e6,
                  double(k.requests) / wall / 1e6, k.bytes_per_s() / 1e9);
      kernels.push_back({{"start_ps", k.start_ps}, {"end_ps", k.end_ps}, {"requests", k.requests},
                         {"bytes_read", k.bytes_read}, {"bytes_written", k.bytes_written},
                         {"latency", histogram_json(k.latency_ps, "ps")}});
    }
    if (argc > 3) {
      nlohmann::json j = g->stats_json();
      j["kernels"] = kernels;
      j["build"] = spartan::build_info_json<nlohmann::json>();
      spartan::write_file_atomic(argv[3], j.dump(1) + "\n");
    }
    std::printf("GB/s_sim: bytes the SMs moved / kernel time (first issue to last response). The L2 is write-back:\n"
                "  a write stream ends when the L2 has taken the data, so up to one L2 of dirty lines is still to be\n"
                "  written to DRAM then, and a stream of a few L2 sizes can show more than the DRAM peak.\n");
    std::printf("target: >= 2.00 M line transactions/s on one core\n");
    return 0;
  });
}
