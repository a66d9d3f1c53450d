// A tiny GPU for unit tests: 1-2 SMs, 1 L2 slice of 2 sets x 2 ways x 128 B (4 sectors of 32 B), 1 channel.
#pragma once
#include <string>
#include <vector>

#include "spartan/hw/gpu/request.h"
#include "spartan/hw/gpu_config.h"

inline std::string tiny_gpu_yaml(unsigned sms = 1) {
  return "name: tiny\ndie_area_mm2: 1\nnode_nm: 7\n"
         "clocks: {core_mhz: 1000, l2_mhz: 1000, dram_mhz: 1000}\n"
         "sm: {count: " + std::to_string(sms) + ", max_outstanding_lines: 8}\n"
         "crossbar: {latency_cycles: 4, port_bytes_per_cycle: 32}\n"
         "l2: {slices: 1, sets: 2, ways: 2, line_bytes: 128, sector_bytes: 32, interleave_bytes: 256,\n"
         "     hit_latency_cycles: 20, bytes_per_cycle: 64, mshr_entries: 4}\n"
         "dram: {kind: HBM2, channels: 1, bank_groups: 4, banks_per_group: 4, bus_bytes: 16, burst_length: 2,\n"
         "       data_rate: 2, row_bytes: 1024, controller_latency_cycles: 10,\n"
         "       timing: {tRCD: 12, tRP: 12, tRAS: 28, tRC: 40, CL: 12, WL: 2, tCCDL: 2, tCCDS: 1, tRRD: 3, tFAW: 13,\n"
         "                tWR: 10, tRTP: 3, tWTR: 4, tRTW: 4, tBURST: 1, tREFI: 0}}\n";
}

inline spartan::hw::GpuConfig tiny_gpu(unsigned sms = 1) {
  return spartan::hw::parse_gpu_config(tiny_gpu_yaml(sms), "tiny.yaml");
}

/// A fixed list of requests (for exact, ordered scenarios).
class ListSource : public spartan::hw::gpu::RequestSource {
 public:
  explicit ListSource(std::vector<spartan::hw::gpu::MemRequest> reqs) : reqs_(std::move(reqs)) {}
  bool next(spartan::hw::gpu::MemRequest& r) override {
    if (i_ >= reqs_.size()) return false;
    r = reqs_[i_++];
    return true;
  }

 private:
  std::vector<spartan::hw::gpu::MemRequest> reqs_;
  std::size_t i_ = 0;
};
