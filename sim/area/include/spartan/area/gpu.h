// The GPU facts spartan-area needs: die area, process, L2 slices (= sparsity monitors), L2 clock and
// the number of compaction engines. Read from a preset YAML (sim/configs/gpu/<name>.yaml, yaml-cpp) when
// one exists, else from a built-in table of public figures (../shared/reference/gpu-configs.md).
#pragma once
#include <string>

namespace spartan::area {

struct GpuInfo {
  std::string name;             ///< preset name, e.g. "v100"
  double die_area_mm2 = 0.0;    ///< whole die
  std::string process;          ///< e.g. "12nm", "7nm", "4N"
  int process_node_nm = 0;      ///< tabulated logic node used for "share of die" (gpu_process_node_nm)
  unsigned l2_slices = 0;       ///< one sparsity monitor per L2 slice (ARCHITECTURE.md)
  double l2_clock_mhz = 0.0;    ///< clock of the L2 / crossbar domain the units run in
  unsigned engines = 1;         ///< compaction engines per GPU (spartan-sim run models one)
  bool engines_assumed = true;  ///< true when the preset does not configure the engine count
  std::string source;           ///< the preset file, or the built-in table with its reference
};

/// Resolves `gpu` (a preset name or a path to a YAML file). Name lookup: `<config_dir>/<gpu>.yaml` if
/// it exists, else the built-in table (v100, r9nano, a100, h100, h200). Preset keys read (first found):
///   die_area_mm2 | gpu.die_area_mm2;  process | node_nm | process_node | gpu.process;
///   l2.slices | l2.num_slices | l2_slices | memory.l2_slices;  l2.clock_mhz | clocks.l2_mhz | l2_clock_mhz;
///   spartan.compaction_engines | units.compaction_engine.count | compaction_engines.
/// Keys missing in the preset are filled from the built-in table when it knows the GPU.
/// Throws ConfigError (missing file, bad YAML, still-missing die area / slices / clock) or InputError.
GpuInfo load_gpu(const std::string& gpu, const std::string& config_dir);

}  // namespace spartan::area
