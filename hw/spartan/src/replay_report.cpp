// Readable summary of a replay's stats.json, and the units YAML config.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <sstream>

#include "spartan/common/atomic_file.h"
#include "spartan/hw/config_reader.h"
#include "spartan/hw/replay.h"
#include "units_settings.h"

namespace spartan::hw {

using json = nlohmann::json;

namespace {
std::string f(const char* fmt_, double v) {
  char b[64];
  std::snprintf(b, sizeof b, fmt_, v);
  return b;
}
std::string us(double ns) { return f("%.2f", ns * 1e-3); }
std::string mb(std::uint64_t bytes) { return f("%.2f", double(bytes) / 1e6); }
}  // namespace

std::string layer_check_text(const json& L) {
  const auto& C = L["checks"];
  std::string t = C["passed"].get<bool>() ? "ok" : "FAILED";
  // With sampling the counts are estimates (not checked for exactness): show what they cost.
  if (C.contains("sampling"))
    t += ", sampled: " + std::to_string(C["sampling"]["dense_decisions_changed"].get<std::uint64_t>()) + "/" +
         std::to_string(L["tiles"].get<std::uint64_t>()) + " DENSE decisions changed, count error " +
         f("%.1f", 100.0 * C["sampling"]["relative_error"].get<double>()) + "%";
  return t;
}

std::string replay_summary(const json& doc) {
  std::ostringstream o;
  const auto& opt = doc["options"];
  o << "spartan-sim run: " << doc["trace"]["path"].get<std::string>() << " (model "
    << doc["trace"]["model"].get<std::string>() << ")\n";
  const std::uint32_t engines = doc["gpu"].value("engines", 1u);
  o << "GPU " << doc["gpu"]["preset"].get<std::string>();
  if (doc["gpu"].contains("file")) o << " (" << doc["gpu"]["file"].get<std::string>() << ")";
  o << ": " << doc["gpu"]["sms"] << " SMs, "
    << doc["gpu"]["l2_slices"] << " L2 slices (one SparsityMonitor each), " << engines
    << (engines == 1 ? " CompactionEngine" : " CompactionEngines (each a block of every layer, one job)")
    << "; format "
    << opt["format"].get<std::string>() << ", tile " << opt["tile"].get<std::string>() << ", threshold "
    << opt["threshold"] << ", sampling shift " << opt["sampling_shift"] << "\n";
  const auto& gp = doc["gpu"];
  if (gp.contains("monitor_mhz"))
    o << "unit clocks: monitors " << f("%.0f", gp["monitor_mhz"].get<double>()) << " MHz, engine "
      << f("%.0f", gp["engine_mhz"].get<double>()) << " MHz (L2 " << f("%.0f", gp["l2_mhz"].get<double>())
      << " MHz; the synthesised datapaths' fmax is in spartan-area's area.md; set clock_mhz with --units)\n";
  if (gp.contains("engine_port_bytes_per_cycle"))
    o << "engine crossbar port: " << gp["engine_port_bytes_per_cycle"].get<std::uint32_t>()
      << " B per crossbar cycle each way (SM ports: the preset's width; --units engine.port_bytes_per_cycle)\n";
  o << "assumed overheads: kernel launch " << opt["kernel_launch_ns"] << " ns (software kernels; not the count-table "
       "memset, issued ahead), host MMIO read "
    << opt["host_mmio_read_ns"] << " ns, posted MMIO write " << opt["host_mmio_write_ns"] << " ns";
  const auto host_flag = [&](const char* key, bool dflt) {
    return opt.contains("units") && opt["units"].contains("host") ? opt["units"]["host"].value(key, dflt) : dflt;
  };
  const bool mon_compl = host_flag("monitor_completion", false);
  const double poll_every =
      opt.contains("units") && opt["units"].contains("host") ? opt["units"]["host"].value("poll_interval_ns", 0.0) : 0.0;
  // the poller of the completion counter / records (ReplayOptions::host_poll_interval_ns)
  char every[32];
  std::snprintf(every, sizeof every, "%g", poll_every);
  // "(...; host.KEY)": the poller, then the key that turned the memory interface on
  const std::string poller = poll_every > 0 ? std::string(" (a poller reading every ") + every +
                                                  " ns from the FLUSH / SUBMIT / FETCH write, the wait for its read"
                                                  " charged: host.poll_interval_ns; "
                                            : std::string(" (a lower bound on a poller; ");
  if (opt.value("host_monitor_broadcast", true))
    o << "; monitor register writes broadcast to all monitors"
      << (mon_compl ? "" : " and one aggregated status read per flush")
      << " (an assumption: --units host.monitor_broadcast: false charges every monitor's writes"
      << (mon_compl ? ")" : " and read)");
  else
    o << "; every monitor's register writes" << (mon_compl ? "" : " and status read")
      << " charged (host.monitor_broadcast: false)";
  if (mon_compl)
    o << "; each monitor adds 1 to a completion counter at its flush's end (COMPL_PTR, programmed once per run, not"
         " charged; the counter zeroed in the count-table memset) and a GPU-side poll of its sector by one SM, issued"
         " once every flush has ended, replaces the status read"
      << poller << "host.monitor_completion)";
  const bool fetch = host_flag("engine_fetch", false), record = host_flag("engine_record", false);
  const bool eng_bcast = host_flag("engine_broadcast", true);
  // the completion status read(s), when no completion record replaces them
  const char* read_one = record ? "" : ", and one aggregated status read";
  const char* read_each = record ? "" : ", and a status read per engine";
  if (fetch)
    o << "; the engines fetch their descriptors from device memory, written there ahead of the layer (not"
         " charged): per layer CTRL, DESC_PTR_LO/HI and FETCH"
      << (engines > 1 ? (eng_bcast ? std::string(", each one broadcast write to all engines") + read_one +
                                         " (an assumption: host.engine_broadcast)"
                                   : std::string(", to each engine in use") + read_each + " (host.engine_broadcast: false)")
                      : std::string())
      << " (host.engine_fetch)";
  else if (engines > 1)
    o << (eng_bcast ? std::string("; an engine register write (CTRL, descriptor word, SUBMIT) whose value all engines share"
                                  " is one broadcast write when every engine has a block, else one per engine") +
                          read_one + " (an assumption: host.engine_broadcast)"
                    : std::string("; every engine's register writes") + (record ? "" : " and status read") +
                          " charged (host.engine_broadcast: false)");
  if (record)
    o << "; the engines write completion records (COMPL_PTR, programmed once per run, not charged) and a GPU-side poll"
         " of them, one read of their lines by one SM issued once they are written, replaces the status read"
      << poller << "host.engine_record)";
  o << "; FLUSH and the engine's set-up follow the producer in stream order, no host round trip charged\n";
  if (opt.contains("units_file"))
    o << "units: " << (opt["units_file"].get<std::string>().empty() ? "defaults" : opt["units_file"].get<std::string>())
      << " (every monitor, engine, baseline and host setting used: stats.json options.units)\n";
  o << "\n";
  o << "times in us; traffic in MB (L2 = bytes read+written at the L2 slices, DRAM = at the memory controllers)\n";
  o << "GEMM = dense_ms / tile_sparse_ms of the layer's forward GEMM as measured on the trace's device; spd SW / HW ="
       " dense / (tile-sparse + profile + convert), only for GEMM times measured on a GPU\n";
  o << "mon% = the monitors' mean busy time / the producer's writes; eng% = "
    << (engines == 1 ? "the engine's compactor busy time / its job time"
                     : "the engines' compactor busy time / (engines in use x first job start to last job end)")
    << " (0 when the size rule wrote every fetched tile DENSE)\n";
  char h[400];
  std::snprintf(h, sizeof h, "%-6s %-4s %-8s %13s %5s | %8s %8s %7s | %8s %8s %7s | %9s %9s | %9s %9s | %5s %5s | %6s %6s %6s | %s\n",
                "iter", "lyr", "name", "matrix", "dens", "prof SW", "prof HW", "ratio", "conv SW", "conv HW", "ratio",
                "L2 SW", "L2 HW", "DRAM SW", "DRAM HW", "mon%", "eng%", "GEMM", "spd SW", "spd HW", "checks");
  o << h;
  bool any_not_relu = false;
  for (const auto& L : doc["layers"]) {
    const auto& sw = L["software"];
    const auto& hw = L["hardware"];
    const std::uint64_t l2sw = sw["profile"]["l2_bytes"].get<std::uint64_t>() + sw["convert"]["l2_bytes"].get<std::uint64_t>();
    const std::uint64_t l2hw = hw["profile"]["l2_bytes"].get<std::uint64_t>() + hw["convert"]["l2_bytes"].get<std::uint64_t>();
    const std::uint64_t drsw = sw["profile"]["dram_bytes"].get<std::uint64_t>() + sw["convert"]["dram_bytes"].get<std::uint64_t>();
    const std::uint64_t drhw = hw["profile"]["dram_bytes"].get<std::uint64_t>() + hw["convert"]["dram_bytes"].get<std::uint64_t>();
    const auto& G = L["gemm"];
    const std::string ssw = G.contains("speedup_software") ? f("%.2f", G["speedup_software"].get<double>()) : "-";
    const std::string shw = G.contains("speedup_hardware") ? f("%.2f", G["speedup_hardware"].get<double>()) : "-";
    const std::string sg = G.contains("speedup_measured") ? f("%.2f", G["speedup_measured"].get<double>()) : "-";
    const std::string shape = std::to_string(L["rows"].get<std::uint64_t>()) + "x" + std::to_string(L["cols"].get<std::uint64_t>());
    const bool relu = !L.contains("relu_input") || L["relu_input"].get<bool>();
    any_not_relu = any_not_relu || !relu;
    const std::string name = L["name"].get<std::string>() + (relu ? "" : "*");
    char r[512];
    std::snprintf(r, sizeof r,
                  "%-6lld %-4lld %-8s %13s %5.2f | %8s %8s %6.1fx | %8s %8s %6.1fx | %9s %9s | %9s %9s | %5.1f %5.1f | %6s %6s %6s | %s\n",
                  L["iteration"].get<long long>(), L["layer"].get<long long>(), name.c_str(),
                  shape.c_str(), L["density"].get<double>(), us(sw["profile"]["time_ns"].get<double>()).c_str(),
                  us(hw["profile"]["time_ns"].get<double>()).c_str(), L["profile_ratio"].get<double>(),
                  us(sw["convert"]["time_ns"].get<double>()).c_str(), us(hw["convert"]["time_ns"].get<double>()).c_str(),
                  L["convert_ratio"].get<double>(), mb(l2sw).c_str(), mb(l2hw).c_str(), mb(drsw).c_str(),
                  mb(drhw).c_str(), 100.0 * hw["monitor_utilisation_mean"].get<double>(),
                  100.0 * hw["engine_utilisation"].get<double>(), sg.c_str(), ssw.c_str(), shw.c_str(),
                  layer_check_text(L).c_str());
    o << r;
  }
  if (any_not_relu) o << "* the layer's input is not a ReLU output (the network's input image)\n";
  {
    // A monitor's busy time / the producer's memory time above 1 (the busiest monitor; the mon% column is the
    // mean): it counts slower than its L2 slice takes the writes (a slow monitor clock). The model does not stall the writes for it; its FLUSH waits
    // until the counting has drained (the RTL's S_DRAIN), so that lag is in the hardware profile time.
    int slow = 0;
    double worst = 0;
    for (const auto& L : doc["layers"]) {
      const double u = L["hardware"].value("monitor_utilisation_max", 0.0);
      slow += u > 1.0;
      worst = std::max(worst, u);
    }
    if (slow > 0)
      o << "note: on " << slow << " layer(s) a monitor was busy longer than the producer's writes lasted (busiest "
        << f("%.0f", 100.0 * worst) << " %): it counts slower than its L2 slice takes the writes, which a real "
           "L2 would have to stall for; the model does not stall them, and the flush starts after the counting "
           "has drained\n";
  }
  const auto& ov = doc["overall"];
  o << "\noverall (" << ov["layers"] << " layers):\n";
  o << "  profiling:  software " << us(ov["profile"]["sw_ns"].get<double>())
    << " us, hardware (count-table memset + flush + monitor MMIO writes + "
    << (mon_compl ? "the completion counter's poll" : "status read") << ") "
    << us(ov["profile"]["hw_ns"].get<double>()) << " us -> " << f("%.1f", ov["profile"]["ratio"].get<double>())
    << "x of the total, " << f("%.1f", ov["profile"]["mean_layer_ratio"].get<double>()) << "x mean over layers, ";
  // null when no replayed layer's input is a ReLU output (e.g. only the first layer was replayed).
  if (ov["profile"]["mean_layer_ratio_relu_inputs"].is_number())
    o << f("%.1f", ov["profile"]["mean_layer_ratio_relu_inputs"].get<double>()) << "x over the "
      << ov["profile"]["relu_input_layers"].get<std::size_t>() << " whose input is a ReLU output";
  else
    o << "no replayed layer's input is a ReLU output";
  o << " (Spartan reports 52.5x on average, against profiling kernels on a real GPU at"
       " ImageNet scale; these ratios rest on the assumed launch and MMIO costs above)\n";
  if (ov["profile"].contains("memset_launched"))
    o << "              (the count-table memset is issued ahead, off the layer's critical path: memory time only;"
         " with one launch each, like the software kernels, hardware "
      << us(ov["profile"]["memset_launched"]["hw_ns"].get<double>()) << " us -> "
      << f("%.2f", ov["profile"]["memset_launched"]["ratio"].get<double>()) << "x)\n";
  o << "  conversion: software " << us(ov["convert"]["sw_ns"].get<double>()) << " us, "
    << (engines == 1 ? std::string("compaction engine ") : std::to_string(engines) + " compaction engines side by side ")
    << us(ov["convert"]["hw_ns"].get<double>()) << " us -> " << f("%.1f", ov["convert"]["ratio"].get<double>()) << "x\n";
  o << "  traffic:    profiling L2 " << mb(ov["profile"]["sw_l2_bytes"].get<std::uint64_t>()) << " MB (SW) vs "
    << mb(ov["profile"]["hw_l2_bytes"].get<std::uint64_t>()) << " MB (HW), DRAM "
    << mb(ov["profile"]["sw_dram_bytes"].get<std::uint64_t>()) << " vs " << mb(ov["profile"]["hw_dram_bytes"].get<std::uint64_t>())
    << " MB; conversion L2 " << mb(ov["convert"]["sw_l2_bytes"].get<std::uint64_t>()) << " vs "
    << mb(ov["convert"]["hw_l2_bytes"].get<std::uint64_t>()) << " MB, DRAM "
    << mb(ov["convert"]["sw_dram_bytes"].get<std::uint64_t>()) << " vs " << mb(ov["convert"]["hw_dram_bytes"].get<std::uint64_t>())
    << " MB\n";
  if (ov.contains("output")) {
    const auto& out = ov["output"];
    o << "  output:     compacted payload " << mb(out["payload_bytes"].get<std::uint64_t>()) << " MB + headers "
      << mb(out["header_bytes"].get<std::uint64_t>()) << " MB for " << mb(out["dense_bytes"].get<std::uint64_t>())
      << " MB of dense activations (" << out["tiles_dense_by_size"].get<std::uint64_t>()
      << " tiles kept DENSE by the size rule); the consumer read " << mb(out["consumer_l2_bytes"].get<std::uint64_t>())
      << " MB\n";
  }
  if (ov.contains("speedup")) {
    const auto& sp = ov["speedup"];
    o << "  tile-sparse GEMM: sum of dense / sum of tile-sparse forward GEMM times, measured on "
      << sp["device"].get<std::string>() << ": " << f("%.2f", sp["gemm_measured"].get<double>()) << "x\n";
    if (sp.contains("software"))
      o << "  layer speedup T_dense / (T_tile_sparse + T_profile + T_convert): software path "
        << f("%.2f", sp["software"].get<double>()) << "x, hardware path " << f("%.2f", sp["hardware"].get<double>())
        << "x (" << sp.value("note", std::string()) << ")\n";
    else
      o << "  layer speedup with profile and conversion: not computed (the GEMM times were measured on "
        << sp["device"].get<std::string>() << ", not on a GPU; they are not added to simulated GPU times)\n";
  } else {
    o << "  layer speedup: not available ("
      << ov.value("speedup_unavailable", std::string("the trace lacks tile-sparse GEMM times for some layers")) << ")\n";
  }
  o << "checks: " << (doc["checks"]["passed"].get<bool>() ? "all passed" : "FAILED (see stats.json layers[].checks)")
    << "\n";
  return o.str();
}

namespace {
/// Reads a units file's sections through detail::visit_units_settings. Each value is checked before it is
/// stored, so a failed load leaves that option as it was; a section absent from the file is skipped; every
/// section ends with ConfigMap::finish() (unknown keys name the file and the key).
class UnitsLoader {
 public:
  explicit UnitsLoader(ConfigMap& top) : top_(top) {}
  void section(const char* name) {
    end();
    if (top_.has(name)) m_.emplace(top_.child(name));
  }
  void end() {
    if (m_) m_->finish();
    m_.reset();
  }
  void u32(const char* key, std::uint32_t& field, std::uint64_t lo, std::uint64_t hi, const char* message) {
    if (present(key)) field = std::uint32_t(in_range(key, m_->u32(key), lo, hi, message));
  }
  void u64(const char* key, std::uint64_t& field, std::uint64_t lo, std::uint64_t hi, const char* message) {
    if (present(key)) field = in_range(key, m_->u64(key), lo, hi, message);
  }
  /// An assumed host/launch overhead in ns: finite, 0 .. 1e9 (one second; NaN fails too).
  void ns(const char* key, double& field) {
    if (!present(key)) return;
    const double x = m_->f64(key);
    if (!(x >= 0 && x <= 1e9)) m_->fail(key, "must be 0 .. 1e9 ns");
    field = x;
  }
  /// A unit's clock: 0 (the preset's L2 clock) or 1 .. 100000 MHz (the range of the GPU presets' clocks).
  void mhz(const char* key, double& field) {
    if (!present(key)) return;
    const double x = m_->f64(key);
    if (!(x == 0 || (x >= 1 && x <= 100000))) m_->fail(key, "must be 0 (the L2 clock) or 1 .. 100000 MHz");
    field = x;
  }
  void flag(const char* key, bool& field) {
    if (!present(key)) return;
    const std::string x = m_->str(key);
    if (x != "true" && x != "false") m_->fail(key, "expected true or false, got '" + x + "'");
    field = x == "true";
  }

 private:
  bool present(const char* key) const { return m_ && m_->has(key); }  // in a section the file has
  std::uint64_t in_range(const char* key, std::uint64_t x, std::uint64_t lo, std::uint64_t hi, const char* message) {
    if (x < lo || x > hi) m_->fail(key, message);
    return x;
  }
  ConfigMap& top_;
  std::optional<ConfigMap> m_;
};
}  // namespace

void load_units_config(const std::string& file, ReplayOptions& opt) {
  const YAML::Node root = parse_yaml(read_file(file), file);
  opt.units_file = file;
  ConfigMap top(root, file, "");
  UnitsLoader loader(top);
  detail::visit_units_settings(opt, loader);
  loader.end();
  top.finish();
}

}  // namespace spartan::hw
