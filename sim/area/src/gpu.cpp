// GPU facts from the simulator's GPU presets (see gpu.h).
#include "spartan/area/gpu.h"

#include <filesystem>
#include <sstream>

#include "spartan/area/scaling.h"
#include "spartan/common/error.h"
#include "spartan/hw/gpu_config.h"

namespace spartan::area {

GpuInfo load_gpu(const std::string& gpu, const std::string& config_dir) {
  namespace fs = std::filesystem;
  std::string path;
  const bool is_path = gpu.find('/') != std::string::npos ||
                       (gpu.size() > 5 && gpu.substr(gpu.size() - 5) == ".yaml") ||
                       (gpu.size() > 4 && gpu.substr(gpu.size() - 4) == ".yml");
  if (is_path) {
    path = gpu;
    if (!fs::is_regular_file(path))
      throw ConfigError(path, "--gpu", fs::is_directory(path) ? "is a directory, expected a GPU preset (YAML) file"
                                                              : "GPU preset file not found");
  } else if (config_dir.empty()) {
    // The simulator's own lookup (SPARTAN_GPU_CONFIG_DIR, else the source tree's sim/configs/gpu compiled
    // in), so `spartan-area --gpu a100` works from any directory, exactly like `spartan-sim --gpu a100`.
    path = hw::resolve_gpu_preset(gpu);
  } else {
    if (!fs::is_directory(config_dir))
      throw ConfigError(config_dir, "--gpu-config-dir", "no such directory of GPU presets");
    const fs::path p = fs::path(config_dir) / (gpu + ".yaml");
    if (!fs::is_regular_file(p)) {
      std::string known;
      std::error_code ec;
      for (const auto& e : fs::directory_iterator(config_dir, ec))
        if (e.path().extension() == ".yaml") known += (known.empty() ? "" : ", ") + e.path().stem().string();
      throw ConfigError(p.string(), "--gpu", "unknown GPU preset '" + gpu + "' (presets in " + config_dir + ": " +
                                                 (known.empty() ? "none" : known) + ")");
    }
    path = p.string();
  }
  GpuInfo g;
  g.name = fs::path(path).stem().string();
  // The simulator's strict preset loader (one parser for every tool): unknown keys, missing keys and
  // impossible geometry are ConfigErrors naming the key, exactly as in `spartan-sim --gpu`.
  const hw::GpuConfig c = hw::load_gpu_config(path);
  g.die_area_mm2 = c.die_area_mm2;
  std::ostringstream node;
  node << c.node_nm << "nm";
  g.process = node.str();
  g.l2_slices = c.l2.slices;
  g.l2_clock_mhz = c.clocks.l2_mhz;
  g.l2_slice_bytes_per_cycle = c.l2.slice.bytes_per_cycle;
  g.source = path;
  if (g.die_area_mm2 <= 0.0) throw ConfigError(path, "die_area_mm2", "missing or not positive");
  if (g.l2_slices == 0) throw ConfigError(path, "l2.slices", "missing or zero (needed: one monitor per L2 slice)");
  if (g.l2_clock_mhz <= 0.0) throw ConfigError(path, "clocks.l2_mhz", "missing or not positive");
  g.process_node_nm = gpu_process_node_nm(g.process);
  // An unmapped node used to drop the share of die and the unit clock silently ("share computed at 0 nm";
  // reliability finding 77)
  if (g.process_node_nm == 0)
    throw ConfigError(path, "node_nm", g.process + " has no scaled node (known: " + gpu_process_names() + ")");
  return g;
}

}  // namespace spartan::area
