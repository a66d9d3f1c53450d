// The GPU facts spartan-area needs: die area, process, L2 slices (= sparsity monitors), L2 clock and
// the number of compaction engines. Read from the simulator's preset YAML (sim/configs/gpu/<name>.yaml) with
// its strict loader; there is no built-in fallback table.
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
  double l2_slice_bytes_per_cycle = 0.0;  ///< one slice's data port (l2.bytes_per_cycle): what its monitor can see
  unsigned engines = 1;         ///< compaction engines per GPU (spartan-sim run models one)
  bool engines_assumed = true;  ///< true when the preset does not configure the engine count
  std::string source;           ///< the preset file read
};

/// Resolves `gpu` (a preset name or a path to a YAML file). Name lookup: with `config_dir` empty, the
/// simulator's (spartan::hw::resolve_gpu_preset: $SPARTAN_GPU_CONFIG_DIR, else the compiled-in
/// sim/configs/gpu), so it works from any directory; else `<config_dir>/<gpu>.yaml`, and `config_dir` must
/// exist. Never falls back to built-in figures. The file is read with the simulator's strict loader
/// (spartan::hw::load_gpu_config): unknown or missing keys are errors. Used keys: die_area_mm2, node_nm,
/// l2.slices, l2.bytes_per_cycle, clocks.l2_mhz. The engine count is not part of a preset: it is 1 (what `spartan-sim run`
/// models) unless `spartan-area --engines N`. Throws ConfigError (missing directory or file, unknown
/// preset name, bad YAML, unknown key, missing die area / slices / clock).
GpuInfo load_gpu(const std::string& gpu, const std::string& config_dir);

}  // namespace spartan::area
