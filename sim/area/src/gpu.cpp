// GPU facts from presets or the built-in public-figures table (see gpu.h).
#include "spartan/area/gpu.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <map>
#include <sstream>

#include "spartan/area/scaling.h"
#include "spartan/common/error.h"

namespace spartan::area {
namespace {

// Public figures, ../shared/reference/gpu-configs.md. Slices/clock are left 0 where that page gives none.
const std::map<std::string, GpuInfo>& builtin() {
  static const std::map<std::string, GpuInfo> t = [] {
    std::map<std::string, GpuInfo> m;
    const std::string ref = "built-in table (gpu-configs.md: ";
    m["v100"] = {"v100", 815.0, "12nm", 0, 64, 1447.0, 1, true,
                 ref + "Accel-Sim QV100: 64 L2 slices, L2 clock 1447 MHz; die 815 mm^2)"};
    m["r9nano"] = {"r9nano", 596.0, "28nm", 0, 16, 0.0, 1, true, ref + "GCN3 R9 Nano: 16 L2 banks; die 596 mm^2)"};
    m["a100"] = {"a100", 826.0, "7nm", 0, 0, 0.0, 1, true, ref + "A100 SXM die 826 mm^2)"};
    m["h100"] = {"h100", 814.0, "4N", 0, 0, 0.0, 1, true, ref + "H100 SXM die 814 mm^2)"};
    m["h200"] = {"h200", 814.0, "4N", 0, 0, 0.0, 1, true, ref + "H200 = H100 die, 814 mm^2)"};
    return m;
  }();
  return t;
}

YAML::Node lookup(const YAML::Node& root, const std::string& dotted) {
  YAML::Node cur = YAML::Clone(root);
  std::stringstream ss(dotted);
  std::string part;
  while (std::getline(ss, part, '.')) {
    if (!cur.IsMap()) return YAML::Node();
    YAML::Node next = cur[part];
    if (!next.IsDefined() || next.IsNull()) return YAML::Node();
    cur = next;
  }
  return cur;
}

template <class T>
bool read_first(const YAML::Node& root, std::initializer_list<const char*> keys, const std::string& file, T& out) {
  for (const char* k : keys) {
    YAML::Node n = lookup(root, k);
    if (!n.IsDefined() || !n.IsScalar()) continue;
    try {
      out = n.as<T>();
    } catch (const YAML::Exception&) {
      throw ConfigError(file, k, "not a valid value: '" + n.Scalar() + "'");
    }
    return true;
  }
  return false;
}

}  // namespace

GpuInfo load_gpu(const std::string& gpu, const std::string& config_dir) {
  namespace fs = std::filesystem;
  std::string path;
  std::string name = gpu;
  if (gpu.find('/') != std::string::npos || (gpu.size() > 5 && gpu.substr(gpu.size() - 5) == ".yaml")) {
    path = gpu;
    name = fs::path(gpu).stem().string();
    if (!fs::exists(path)) throw ConfigError(path, "-", "GPU preset file not found");
  } else if (!config_dir.empty() && fs::exists(fs::path(config_dir) / (gpu + ".yaml"))) {
    path = (fs::path(config_dir) / (gpu + ".yaml")).string();
  }
  const auto b = builtin().find(name);
  GpuInfo g;
  if (b != builtin().end()) g = b->second;
  g.name = name;
  if (path.empty()) {
    if (b == builtin().end())
      throw InputError("unknown GPU '" + gpu + "' (no preset " + config_dir + "/" + gpu +
                       ".yaml; built-in: v100 r9nano a100 h100 h200)");
  } else {
    YAML::Node root;
    try {
      root = YAML::LoadFile(path);
    } catch (const YAML::Exception& e) {
      throw ConfigError(path, "-", std::string("cannot parse YAML: ") + e.what());
    }
    read_first(root, {"die_area_mm2", "gpu.die_area_mm2"}, path, g.die_area_mm2);
    read_first(root, {"process", "node_nm", "process_node", "gpu.process", "gpu.node_nm"}, path, g.process);
    read_first(root, {"l2.slices", "l2.num_slices", "l2_slices", "memory.l2_slices", "l2.slice_count"}, path,
               g.l2_slices);
    read_first(root, {"l2.clock_mhz", "clocks.l2_mhz", "l2_clock_mhz", "clocks.l2.mhz", "clocks.l2"}, path,
               g.l2_clock_mhz);
    if (read_first(root, {"spartan.compaction_engines", "units.compaction_engine.count", "compaction_engines"}, path,
                   g.engines))
      g.engines_assumed = false;
    g.source = path + (b != builtin().end() ? " (keys it lacks from the built-in table)" : "");
  }
  const std::string where = path.empty() ? "built-in table" : path;
  if (g.die_area_mm2 <= 0.0) throw ConfigError(where, "die_area_mm2", "missing or not positive");
  if (g.l2_slices == 0) throw ConfigError(where, "l2.slices", "missing or zero (needed: one monitor per L2 slice)");
  if (g.l2_clock_mhz <= 0.0) throw ConfigError(where, "l2.clock_mhz", "missing or not positive");
  if (g.engines == 0) throw ConfigError(where, "spartan.compaction_engines", "must be at least 1");
  g.process_node_nm = gpu_process_node_nm(g.process);
  return g;
}

}  // namespace spartan::area
