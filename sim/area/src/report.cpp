// Report assembly for spartan-area (see report.h).
#include "spartan/area/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "spartan/area/scaling.h"
#include "spartan/common/build_info.h"
#include "spartan/common/error.h"

namespace spartan::area {
using nlohmann::json;

namespace {

// A --cycles field: a finite number from 0 to kMaxCycleField (whole for `tiles`). 1e308 used to give inf,
// -nan and a 309-digit latency in area.md with exit 0 (new-user review).
std::optional<double> opt_number(const json& obj, const char* key, const std::string& file, const std::string& where,
                                 bool whole = false) {
  if (!obj.contains(key) || obj[key].is_null()) return std::nullopt;
  const double v = obj[key].is_number() ? obj[key].get<double>() : -1.0;
  if (!obj[key].is_number() || !std::isfinite(v) || v < 0.0 || v > kMaxCycleField)
    throw FormatError(file, where + "." + key, 0, "must be a number from 0 to 2^53 (9007199254740992)", nullptr);
  if (whole && v != std::floor(v))
    throw FormatError(file, where + "." + key, 0, "must be a whole number, not " + spartan::format_g(v), nullptr);
  return v;
}

unsigned instances_per_gpu(const UnitSpec& s, const GpuInfo& g) {
  switch (s.role) {
    case UnitRole::kMonitor: return g.l2_slices;
    case UnitRole::kEngine: return g.engines;
    default: return s.count_override;
  }
}

std::string fmt(double v, int prec = 2) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", prec, v);
  return buf;
}

std::string fmt_g(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

}  // namespace

CycleCounts parse_cycle_counts(const std::string& text, const std::string& file) {
  json j;
  // A key given twice in one object: nlohmann::json keeps the last silently (thirty-seventh session's review:
  // a duplicate "units" was accepted); refused, naming the key.
  std::vector<std::vector<std::string>> keys;  // the keys of each object being parsed, innermost last
  std::string duplicate;
  const json::parser_callback_t cb = [&](int, json::parse_event_t ev, json& parsed) {
    if (ev == json::parse_event_t::object_start) keys.emplace_back();
    else if (ev == json::parse_event_t::object_end && !keys.empty()) keys.pop_back();
    else if (ev == json::parse_event_t::key && !keys.empty()) {
      const std::string k = parsed.get<std::string>();
      if (std::find(keys.back().begin(), keys.back().end(), k) != keys.back().end() && duplicate.empty()) duplicate = k;
      keys.back().push_back(k);
    }
    return true;
  };
  try {
    j = json::parse(text, cb);
  } catch (const json::parse_error& e) {
    throw FormatError(file, "", e.byte, "not valid JSON");
  } catch (const json::exception& e) {  // e.g. out_of_range: a number literal beyond double
    throw FormatError(file, "", 0, std::string("not valid JSON: ") + e.what());
  }
  if (!duplicate.empty()) throw FormatError(file, duplicate, 0, "key given twice in one object", nullptr);
  if (!j.is_object() || !j.contains("units") || !j["units"].is_object())
    throw FormatError(file, "units", 0, "missing object 'units'", nullptr);
  // spartan-sim run --rtl writes `build` (the provenance of the binary) beside `source` and `units`.
  for (const auto& [key, v] : j.items())
    if (key != "units" && key != "source" && key != "build")
      throw FormatError(file, key, 0, "unknown key (expected 'units' and optionally 'source' and 'build')", nullptr);
  if (j.contains("build") && !j["build"].is_object()) throw FormatError(file, "build", 0, "must be an object", nullptr);
  CycleCounts c;
  if (j.contains("source")) {
    if (!j["source"].is_string()) throw FormatError(file, "source", 0, "must be a string", nullptr);
    c.source = j["source"].get<std::string>();
  }
  for (const auto& [name, u] : j["units"].items()) {
    if (!u.is_object()) throw FormatError(file, "units." + name, 0, "must be an object", nullptr);
    UnitCycles uc;
    const std::string where = "units." + name;
    // Unknown fields are refused: a misspelt "tile_latency_cycles" was ignored and the report said "not available".
    static const char* const kFields[] = {"tiles", "busy_cycles", "tile_latency_cycles", "tile_bytes", "gpu_model_busy_ns"};
    for (const auto& [key, v] : u.items())
      if (std::find_if(std::begin(kFields), std::end(kFields), [&k = key](const char* f) { return k == f; }) == std::end(kFields))
        throw FormatError(file, where + "." + key, 0,
                          "unknown field (expected tiles, busy_cycles, tile_latency_cycles, tile_bytes, gpu_model_busy_ns)", nullptr);
    uc.tiles = opt_number(u, "tiles", file, where, true);
    // busy_cycles may be fractional: spartan-sim run --rtl derives the monitor's from simulated time / period.
    uc.busy_cycles = opt_number(u, "busy_cycles", file, where);
    uc.tile_latency_cycles = opt_number(u, "tile_latency_cycles", file, where);
    uc.tile_bytes = opt_number(u, "tile_bytes", file, where);
    uc.gpu_model_busy_ns = opt_number(u, "gpu_model_busy_ns", file, where);
    if (uc.tiles.has_value() != uc.busy_cycles.has_value())
      throw FormatError(file, where, 0, "'tiles' and 'busy_cycles' must be given together", nullptr);
    if (uc.busy_cycles && *uc.busy_cycles <= 0.0) throw FormatError(file, where + ".busy_cycles", 0, "must be > 0", nullptr);
    if (uc.gpu_model_busy_ns && !uc.tiles)
      throw FormatError(file, where + ".gpu_model_busy_ns", 0, "needs 'tiles'", nullptr);
    if (uc.gpu_model_busy_ns && *uc.gpu_model_busy_ns <= 0.0)
      throw FormatError(file, where + ".gpu_model_busy_ns", 0, "must be > 0", nullptr);
    c.units[name] = uc;
  }
  return c;
}

json build_report(const std::vector<UnitResult>& units, const GpuInfo& gpu, const std::optional<CycleCounts>& cycles,
                  const ReportOptions& opt) {
  json rep;
  const bool sram = opt.memory_model == MemoryModel::kSram;
  rep["tool"] = "spartan-area";
  rep["build"] = spartan::build_info_json<json>();
  rep["synthesis"] = {{"node_nm", kBaseNodeNm}, {"liberty", opt.liberty}, {"yosys", opt.yosys_version},
                      {"sta", opt.sta_version.empty() ? std::string("OpenSTA") : "OpenSTA " + opt.sta_version},
                      {"sta_clock_ns", opt.clock_ns},
                      {"abc", opt.abc_buffering ? "delay target = STA clock, buffer -N 10, upsize, dnsize"
                                                : "plain abc -liberty (no buffering, no sizing)"},
                      {"area_unit", "um^2 per instance (liberty area unit of OSU 0.18 um)"}};
  // Gate equivalents: technology-independent gate counts (1 GE = the liberty's smallest two-input NAND).
  rep["synthesis"]["gate_equivalent"] =
      opt.nand2 ? json{{"cell", opt.nand2->name}, {"area_um2", opt.nand2->area},
                       {"definition", "1 GE = the area of the liberty's smallest two-input NAND cell"}}
                : json(nullptr);
  rep["memory_model"] = {
      {"total_uses", sram ? "sram" : "flip_flops"},
      {"sram_array_efficiency", kSramArrayEfficiency},
      {"note", "flip_flops: memories as synthesised registers; sram: bits x published 6T bit cell / array efficiency"}};
  json nodes = json::array();
  for (int nm : opt.nodes_nm) {
    const TechNode& n = tech_node(nm);
    nodes.push_back({{"node_nm", nm}, {"area_factor", n.area_factor}, {"delay_factor", n.delay_factor},
                     {"vdd_v", n.vdd_v}, {"sram_bitcell_um2", n.sram_bitcell_um2},
                     {"sram_bitcell_source", sram_bitcell_source(nm)}, {"extrapolated", n.extrapolated},
                     {"source", n.source}});
  }
  rep["nodes"] = nodes;
  rep["gpu"] = {{"name", gpu.name}, {"die_area_mm2", gpu.die_area_mm2}, {"process", gpu.process},
                {"process_node_nm", gpu.process_node_nm}, {"l2_slices", gpu.l2_slices},
                {"l2_clock_mhz", gpu.l2_clock_mhz}, {"compaction_engines", gpu.engines},
                {"compaction_engines_assumed", gpu.engines_assumed}, {"source", gpu.source}};
  std::vector<int> share_nodes = opt.nodes_nm;
  if (gpu.process_node_nm != 0 &&
      std::find(share_nodes.begin(), share_nodes.end(), gpu.process_node_nm) == share_nodes.end())
    share_nodes.push_back(gpu.process_node_nm);

  json jus = json::array();
  std::map<int, double> gpu_total_mm2;
  for (const UnitResult& u : units) {
    json ju;
    ju["name"] = u.spec.name;
    ju["top"] = u.spec.top;
    ju["role"] = role_name(u.spec.role);
    // Top-level parameters set for synthesis (the manifest's overrides of the RTL defaults): the simulated
    // units (spartan-sim) use the RTL defaults, so overridden units are not the simulated ones.
    ju["parameter_overrides"] = u.spec.parameters;
    const unsigned inst = instances_per_gpu(u.spec, gpu);
    ju["instances_per_gpu"] = inst;
    ju["cells"] = u.stat.cells;
    ju["cell_counts"] = u.stat.cell_counts;
    double mem_bits = 0, mem_ff = 0;
    json jm = json::array();
    double reg_bits = 0;
    double async_bits = 0, two_port_bits = 0;
    for (const auto& m : u.memories) {
      (m.sram() ? mem_bits : reg_bits) += static_cast<double>(m.bits());
      if (m.sram() && !m.sync_read) async_bits += static_cast<double>(m.bits());
      // (A read and a write port on one address signal are a single-port array: Yosys lists the ports of
      // every written memory separately.)
      if (m.sram() && m.read_ports >= 1 && m.write_ports >= 1 && !m.shared_address)
        two_port_bits += static_cast<double>(m.bits());
      jm.push_back({{"name", m.name}, {"width_bits", m.width_bits}, {"depth_words", m.depth_words},
                    {"bits", m.bits()}, {"read_ports", m.read_ports}, {"write_ports", m.write_ports},
                    {"shared_address", m.shared_address},
                    {"sync_read", m.sync_read}, {"sram_eligible", m.sram()},
                    {"sram_area_um2", m.sram() ? json(sram_area_um2(static_cast<double>(m.bits()), kBaseNodeNm))
                                               : json(nullptr)}});
    }
    // What the single-port 6T pricing below leaves out (twelfth-session review): arrays with separate read and
    // write ports need two-port macros (larger cells), and an asynchronously read array needs a registered read
    // (an RTL change) before a compiler SRAM can stand for it.
    ju["sram_bits_two_port"] = two_port_bits;
    ju["sram_bits_async_read"] = async_bits;
    const double synth_area = u.stat.chip_area_um2;
    const double logic = u.logic_um2;
    if (!u.ff_synthesised && !sram)
      throw InputError("unit '" + u.spec.name + "': --memory-model ff needs the flip-flop synthesis of its " +
                       "memories (raise --ff-memory-limit-bits)");
    mem_ff = u.ff_synthesised ? std::max(0.0, synth_area - logic) : 0.0;
    ju["memories"] = jm;
    ju["memory_bits"] = mem_bits;           // SRAM-eligible memories
    ju["register_array_bits"] = reg_bits;   // inferred memories that stay flip-flops
    ju["area_180nm"] = {{"synthesised_um2", u.ff_synthesised ? json(synth_area) : json(nullptr)},
                        {"logic_um2", logic},
                        {"logic_kge", opt.nand2 ? json(logic / opt.nand2->area / 1000.0) : json(nullptr)},
                        {"memory_ff_um2", u.ff_synthesised ? json(mem_ff) : json(nullptr)},
                        {"memory_sram_um2", sram_area_um2(mem_bits, kBaseNodeNm)}};
    ju["memories_synthesised_as_ff"] = u.ff_synthesised;
    json t180 = {{"critical_path_ns", u.critical_path_ns}, {"fmax_mhz", u.fmax_mhz},
                 {"defined_by", "worst path, all path groups, zero external I/O delay"},
                 {"startpoint", u.worst.startpoint}, {"endpoint", u.worst.endpoint},
                 {"logic_stages", u.worst.stages},
                 {"netlist", u.timed_with_macros ? "logic only, SRAM macros as black boxes: paths into and out of "
                                                   "them are not timed (critical path a lower bound, fmax an upper bound)"
                                                 : "memories as flip-flops"},
                 // false: STA saw the SRAM macros as black boxes without timing arcs, so every path through a
                 // memory (e.g. a tile-buffer read into the compactor) is missing (reliability finding 77)
                 {"memory_paths_timed", !u.timed_with_macros}};
    if (u.has_reg2reg)
      t180["register_to_register"] = {{"arrival_ns", u.reg2reg.arrival_ns}, {"slack_ns", u.reg2reg.slack_ns},
                                      {"startpoint", u.reg2reg.startpoint}, {"endpoint", u.reg2reg.endpoint},
                                      {"logic_stages", u.reg2reg.stages}};
    ju["timing_180nm"] = t180;
    json per_node = json::array();
    for (int nm : share_nodes) {
      const TechNode& n = tech_node(nm);
      const double logic_n = logic * n.area_factor;
      const double mem_n = sram ? sram_area_um2(mem_bits, nm) : mem_ff * n.area_factor;
      const double total = logic_n + mem_n;
      const double cp = u.critical_path_ns * n.delay_factor;
      const double fmax = 1000.0 / cp;
      json jn = {{"node_nm", nm}, {"logic_um2", logic_n}, {"memory_um2", mem_n}, {"total_um2", total},
                 {"memory_ff_um2", u.ff_synthesised ? json(mem_ff * n.area_factor) : json(nullptr)},
                 {"critical_path_ns", cp}, {"fmax_mhz", fmax}, {"meets_l2_clock", fmax >= gpu.l2_clock_mhz},
                 {"fmax_is_upper_bound", u.timed_with_macros},
                 {"per_gpu_mm2", total * inst * 1e-6}, {"extrapolated", n.extrapolated}};
      if (nm == gpu.process_node_nm) jn["share_of_die_percent"] = 100.0 * total * inst * 1e-6 / gpu.die_area_mm2;
      gpu_total_mm2[nm] += total * inst * 1e-6;
      per_node.push_back(jn);
    }
    ju["scaled"] = per_node;
    // The unit's fmax at the GPU's process node (from its scaled critical path), where that node is scaled.
    double fmax_gpu_node = 0.0;
    for (const auto& jn : per_node)
      if (jn["node_nm"].get<int>() == gpu.process_node_nm) fmax_gpu_node = jn["fmax_mhz"].get<double>();
    // Latency / throughput from the RTL co-simulation cycle counts, in the GPU's L2 clock.
    json lat = {{"available", false}};
    const UnitCycles* uc = nullptr;
    if (cycles) {
      auto it = cycles->units.find(u.spec.name);
      if (it == cycles->units.end()) it = cycles->units.find(u.spec.top);
      if (it != cycles->units.end()) uc = &it->second;
    }
    if (uc) {
      lat["available"] = true;
      lat["source"] = cycles->source;
      lat["l2_clock_mhz"] = gpu.l2_clock_mhz;
      if (uc->tile_latency_cycles) {
        lat["tile_latency_cycles"] = *uc->tile_latency_cycles;
        lat["tile_latency_ns"] = *uc->tile_latency_cycles * 1000.0 / gpu.l2_clock_mhz;
      }
      if (uc->tiles && uc->busy_cycles) {
        const double tpc = *uc->tiles / *uc->busy_cycles;  // the RTL's rate, tiles per L2 cycle
        // A monitor sees only the writes its own L2 slice takes: it cannot count faster than that slice's data
        // port delivers (review finding F7: one RTL monitor that counted the whole stream, times the slices,
        // gave more than the L2's aggregate bandwidth). The port is a bandwidth (L2 clock x bytes per cycle), so
        // the cap depends on the unit clock; it scales tiles/s and GB/s alike.
        const bool monitor_cap = u.spec.role == UnitRole::kMonitor && uc->tile_bytes && gpu.l2_slice_bytes_per_cycle > 0.0;
        const double port_bytes_per_us = gpu.l2_slice_bytes_per_cycle * gpu.l2_clock_mhz;
        auto cap_at = [&](double clk_mhz) {
          const double bytes_per_us = monitor_cap ? tpc * *uc->tile_bytes * clk_mhz : 0.0;
          return bytes_per_us > port_bytes_per_us ? port_bytes_per_us / bytes_per_us : 1.0;
        };
        // Tiles per second per instance and GB/s per instance at a unit clock (MHz), capped as above.
        auto tiles_per_s = [&](double clk_mhz) { return tpc * cap_at(clk_mhz) * clk_mhz * 1e6; };
        auto gb_per_s = [&](double clk_mhz) { return tiles_per_s(clk_mhz) * *uc->tile_bytes / 1e9; };
        if (uc->tile_bytes) {
          lat["tile_bytes"] = *uc->tile_bytes;
          lat["rtl_bytes_per_cycle"] = tpc * *uc->tile_bytes;
          if (monitor_cap) {
            lat["l2_slice_bytes_per_cycle"] = gpu.l2_slice_bytes_per_cycle;
            lat["capped_at_l2_slice_port"] = cap_at(gpu.l2_clock_mhz) < 1.0;
          }
        }
        lat["tiles"] = *uc->tiles;
        lat["busy_cycles"] = *uc->busy_cycles;
        lat["tiles_per_cycle"] = tpc;
        lat["tiles_per_s_per_instance"] = tiles_per_s(gpu.l2_clock_mhz);
        // (Per-GPU figures only for units counted per GPU: a unit of count 0 is not in the GPU.)
        if (inst > 0) lat["tiles_per_s_per_gpu"] = tiles_per_s(gpu.l2_clock_mhz) * inst;
        if (uc->tile_bytes) {
          lat["gb_per_s_per_instance"] = gb_per_s(gpu.l2_clock_mhz);
          if (inst > 0) lat["gb_per_s_per_gpu"] = gb_per_s(gpu.l2_clock_mhz) * inst;
        }
        // The same cycle counts at the clock the synthesised unit reaches: min(fmax at the GPU's node, L2 clock)
        // (review finding F6: the datapaths are not pipelined for the L2 clock).
        if (fmax_gpu_node > 0.0) {
          const double clk = std::min(fmax_gpu_node, gpu.l2_clock_mhz);
          lat["unit_clock_mhz"] = clk;
          lat["unit_clock_node_nm"] = gpu.process_node_nm;
          lat["unit_clock_is_upper_bound"] = u.timed_with_macros;  // the true fmax may be below the L2 clock too
          if (inst > 0) lat["tiles_per_s_per_gpu_at_unit_clock"] = tiles_per_s(clk) * inst;
          if (uc->tile_bytes && inst > 0) lat["gb_per_s_per_gpu_at_unit_clock"] = gb_per_s(clk) * inst;
          if (uc->tile_latency_cycles) lat["tile_latency_ns_at_unit_clock"] = *uc->tile_latency_cycles * 1000.0 / clk;
        }
      }
      if (uc->tiles && uc->gpu_model_busy_ns) {
        // The same jobs in the simulated GPU (its crossbar, L2 and DRAM behind the unit): simulated throughput.
        const double tps = *uc->tiles / (*uc->gpu_model_busy_ns * 1e-9);
        lat["gpu_model_busy_ns"] = *uc->gpu_model_busy_ns;
        if (inst > 0) lat["gpu_model_tiles_per_s_per_gpu"] = tps * inst;
        if (uc->tile_bytes && inst > 0) lat["gpu_model_gb_per_s_per_gpu"] = tps * *uc->tile_bytes * inst / 1e9;
      }
    }
    ju["latency"] = lat;
    jus.push_back(ju);
  }
  rep["units"] = jus;
  json tot = json::array();
  for (int nm : share_nodes) {
    json t = {{"node_nm", nm}, {"per_gpu_mm2", gpu_total_mm2[nm]}};
    if (nm == gpu.process_node_nm) t["share_of_die_percent"] = 100.0 * gpu_total_mm2[nm] / gpu.die_area_mm2;
    tot.push_back(t);
  }
  rep["gpu_totals"] = tot;
  rep["cycles_source"] = cycles ? json(cycles->source) : json("not available");
  if (cycles) {  // a typo in a unit name would otherwise just leave "not available" in the table
    json unused = json::array();
    for (const auto& [name, uc] : cycles->units) {
      bool used = false;
      for (const UnitResult& u : units) used = used || u.spec.name == name || u.spec.top == name;
      if (!used) unused.push_back(name);
    }
    rep["cycles_units_unused"] = unused;
  }
  return rep;
}

std::string render_markdown(const json& r) {
  std::ostringstream md;
  const json& g = r["gpu"];
  md << "# spartan-area: " << g["name"].get<std::string>() << "\n\n";
  md << "Synthesis: Yosys to the liberty " << r["synthesis"]["liberty"].get<std::string>()
     << " (taken as a 180 nm library: the scaling starts there; the default is OSU 0.18 um), ABC: " << r["synthesis"]["abc"].get<std::string>() << "; OpenSTA, clock "
     << fmt(r["synthesis"]["sta_clock_ns"].get<double>(), 2) << " ns. "
     << "GPU: die " << fmt(g["die_area_mm2"].get<double>(), 0) << " mm^2 (" << g["process"].get<std::string>()
     << ", share computed at " << g["process_node_nm"].get<int>() << " nm), " << g["l2_slices"].get<unsigned>()
     << " L2 slices (= monitors), " << g["compaction_engines"].get<unsigned>() << " compaction engine(s)"
     << (g["compaction_engines_assumed"].get<bool>() ? " (assumed: not given with --engines)" : "")
     << ", L2 clock " << fmt(g["l2_clock_mhz"].get<double>(), 0) << " MHz. Source: " << g["source"].get<std::string>()
     << ".\n\n" << (r.contains("manifest") ? "Units: " + r["manifest"].get<std::string>() + ".\n\n" : std::string())
     << "Totals count memories as **" << r["memory_model"]["total_uses"].get<std::string>()
     << "** (SRAM array efficiency " << fmt(r["memory_model"]["sram_array_efficiency"].get<double>(), 2) << ").\n\n";
  md << "## 180 nm synthesis\n\n| unit | role | cells | synthesised area um^2 | logic um^2 | logic kGE | memory bits (SRAM-eligible) | "
        "register-array bits (kept as FF) | memory as FF um^2 | memory as SRAM um^2 | critical path ns | fmax MHz | stages |\n"
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  auto num0 = [](const json& v) { return v.is_null() ? std::string("not synthesised") : fmt(v.get<double>(), 0); };
  for (const auto& u : r["units"]) {
    const auto& a = u["area_180nm"];
    const auto& t = u["timing_180nm"];
    md << "| " << u["name"].get<std::string>() << " | " << u["role"].get<std::string>() << " | "
       << u["cells"].get<std::uint64_t>() << " | " << num0(a["synthesised_um2"]) << " | "
       << fmt(a["logic_um2"].get<double>(), 0) << " | "
       << (a.value("logic_kge", json()).is_number() ? fmt_g(a["logic_kge"].get<double>()) : std::string("-")) << " | "
       << fmt(u["memory_bits"].get<double>(), 0) << " | "
       << fmt(u["register_array_bits"].get<double>(), 0) << " | "
       << num0(a["memory_ff_um2"]) << " | " << fmt(a["memory_sram_um2"].get<double>(), 0) << " | "
       << fmt(t["critical_path_ns"].get<double>(), 3) << " | " << fmt(t["fmax_mhz"].get<double>(), 1) << " | "
       << t["logic_stages"].get<unsigned>() << " |\n";
  }
  {
    const json& ge = r["synthesis"].value("gate_equivalent", json());
    if (ge.is_object())
      md << "\nlogic kGE: logic area in thousands of gate equivalents, 1 GE = " << ge["cell"].get<std::string>() << " ("
         << fmt_g(ge["area_um2"].get<double>()) << " um^2), the liberty's smallest two-input NAND: gate counts compare "
            "across libraries and nodes, where the um^2 carry this library's cell density (docs/area.md).\n";
    else
      md << "\nlogic kGE: not available (the liberty has no cell named as a two-input NAND, e.g. NAND2X1; docs/area.md).\n";
  }
  for (const auto& u : r["units"]) {
    if (!u.contains("parameter_overrides") || u["parameter_overrides"].empty()) continue;
    std::string ps;
    for (const auto& [k, v] : u["parameter_overrides"].items()) ps += (ps.empty() ? "" : " ") + k + "=" + v.get<std::string>();
    md << "\n**" << u["name"].get<std::string>() << " was synthesised with " << ps
       << "**, not the RTL defaults that spartan-sim simulates: its area, and the per-GPU totals below, are for "
          "these parameters (docs/area.md).\n";
  }
  for (const auto& u : r["units"]) {
    const double tp = u.value("sram_bits_two_port", 0.0), as = u.value("sram_bits_async_read", 0.0);
    if (tp <= 0 && as <= 0) continue;
    md << "\n" << u["name"].get<std::string>() << ": its SRAM-eligible memories are priced as single-port 6T "
       << "high-density cells; " << fmt(tp, 0) << " of their bits have separate read and write ports (two-port "
       << "macros, larger per bit, not applied)";
    if (as > 0) md << ", and " << fmt(as, 0) << " are read asynchronously (a compiler SRAM needs a registered read: "
                   << "an RTL change)";
    md << ": the SRAM area is a lower bound.\n";
  }
  md << "\n## Scaled (Stillmaker & Baas 2017; 5 nm extrapolated)\n\n| unit | node nm | total um^2 | instances | "
        "per GPU mm^2 | share of die % | critical path ns | fmax MHz | meets L2 clock |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---|\n";
  for (const auto& u : r["units"])
    for (const auto& n : u["scaled"]) {
      md << "| " << u["name"].get<std::string>() << " | " << n["node_nm"].get<int>()
         << (n["extrapolated"].get<bool>() ? " (extrap.)" : "") << " | " << fmt_g(n["total_um2"].get<double>())
         << " | " << u["instances_per_gpu"].get<unsigned>() << " | " << fmt_g(n["per_gpu_mm2"].get<double>()) << " | "
         << (n.contains("share_of_die_percent") ? fmt_g(n["share_of_die_percent"].get<double>()) : std::string("-"))
         << " | " << fmt(n["critical_path_ns"].get<double>(), 3) << " | "
         << (n.value("fmax_is_upper_bound", false) ? "<= " : "") << fmt(n["fmax_mhz"].get<double>(), 0) << " | "
         << (n["meets_l2_clock"].get<bool>() ? (n.value("fmax_is_upper_bound", false) ? "not established" : "yes") : "no")
         << " |\n";
    }
  for (const auto& u : r["units"])
    if (!u["timing_180nm"].value("memory_paths_timed", true))
      md << "\n**" << u["name"].get<std::string>() << "** was timed with its SRAM-eligible memories as black-box macros "
         << "(none synthesised as flip-flops: above `--ff-memory-limit-bits`): the macros have no timing arcs, so "
            "no path into or out of a memory is timed. Its critical path is a lower bound and its fmax, 'meets L2 "
            "clock' and unit clock are upper bounds (`<=`), and so the GB/s at the unit clock an upper and the tile "
            "latency ns at it a lower bound. A larger `--ff-memory-limit-bits` times the memories as "
            "flip-flops (pessimistic for an SRAM read, but every path timed).\n";
  md << "\n## Whole GPU\n\n";
  for (const char* role : {"monitor", "engine"}) {
    bool found = false;
    for (const auto& u : r["units"]) found = found || u["role"].get<std::string>() == role;
    if (!found)
      md << "**No unit with role '" << role << "' in the manifest: the GPU totals do not include "
         << (std::string(role) == "monitor" ? "sparsity monitors" : "compaction engines") << ".**\n\n";
  }
  md << "| node nm | all units per GPU mm^2 | share of die % |\n|---:|---:|---:|\n";
  for (const auto& t : r["gpu_totals"])
    md << "| " << t["node_nm"].get<int>() << " | " << fmt_g(t["per_gpu_mm2"].get<double>()) << " | "
       << (t.contains("share_of_die_percent") ? fmt_g(t["share_of_die_percent"].get<double>()) : std::string("-"))
       << " |\n";
  md << "\n## Latency and throughput (L2 clock " << fmt(g["l2_clock_mhz"].get<double>(), 0) << " MHz)\n\n";
  md << "| unit | tile latency cycles | tile latency ns | tiles/cycle | tiles/s per GPU | GB/s per GPU | "
        "unit clock MHz = min(fmax at " << g["process_node_nm"].get<int>() << " nm, L2) | tile latency ns at it | "
        "GB/s per GPU at it | GB/s per GPU in the GPU model |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& u : r["units"]) {
    const auto& l = u["latency"];
    const bool counted = u["instances_per_gpu"].get<unsigned>() > 0;
    auto cell = [&](const char* k, bool sci) {
      if (!l.contains(k)) return std::string(!counted && std::string(k).find("per_gpu") != std::string::npos ? "-" : "not available");
      return sci ? fmt_g(l[k].get<double>()) : fmt(l[k].get<double>(), 2);
    };
    md << "| " << u["name"].get<std::string>() << " | " << cell("tile_latency_cycles", false) << " | "
       << cell("tile_latency_ns", false) << " | " << cell("tiles_per_cycle", true) << " | "
       << cell("tiles_per_s_per_gpu", true) << (l.value("capped_at_l2_slice_port", false) ? " (capped)" : "") << " | "
       << cell("gb_per_s_per_gpu", true) << (l.value("capped_at_l2_slice_port", false) ? " (capped)" : "") << " | "
       << (l.contains("unit_clock_mhz") ? std::string(l.value("unit_clock_is_upper_bound", false) ? "<= " : "") +
                                              fmt(l["unit_clock_mhz"].get<double>(), 0)
                                        : std::string("not available")) << " | "
       << cell("tile_latency_ns_at_unit_clock", false) << " | " << cell("gb_per_s_per_gpu_at_unit_clock", true) << " | "
       << cell("gpu_model_gb_per_s_per_gpu", true) << " |\n";
  }
  for (const auto& u : r["units"]) {
    const auto& l = u["latency"];
    if (l.value("capped_at_l2_slice_port", false))
      md << "\n**" << u["name"].get<std::string>() << "**: the RTL counted " << fmt(l["rtl_bytes_per_cycle"].get<double>(), 1)
         << " B/cycle, more than its L2 slice's data port delivers (" << fmt(l["l2_slice_bytes_per_cycle"].get<double>(), 0)
         << " B/cycle): tiles/s and GB/s per GPU are capped at the slices' aggregate (tiles/cycle is the RTL's rate).\n";
  }
  md << "\nCycle counts: " << r["cycles_source"].get<std::string>()
     << ". Per-GPU figures multiply one instance by the instances per GPU and assume each is kept busy at the L2 "
        "clock, whether or not the fmax above reaches it and whatever the memory system delivers: they are "
        "upper bounds, not simulated throughput (a monitor's also at most its L2 slice's data port). The 'at it' "
        "columns take the same cycle counts at the clock the synthesised unit reaches at the GPU's node (its fmax, "
        "if below the L2 clock: the datapaths are not pipelined for speed). The last "
        "column, where the cycle file gives it, is the throughput of the same jobs in the simulated GPU (spartan-sim's "
        "memory hierarchy behind the unit, at the L2 clock; one simulated engine's jobs times the engines per GPU, "
        "which are not simulated together). An engine's GB/s count the activation bytes of every tile it handles, "
        "DENSE and all-zero tiles (header only, never read) included.\n";
  if (r.contains("cycles_units_unused") && !r["cycles_units_unused"].empty()) {
    md << "\nUnits in the cycle file that match no synthesised unit (ignored):";
    for (const auto& n : r["cycles_units_unused"]) md << " " << n.get<std::string>();
    md << ".\n";
  }
  md << "\n## Scaling factors\n\n"
     << "| node nm | area factor | delay factor | Vdd V | SRAM bit cell um^2 | source |\n|---:|---:|---:|---:|---:|---|\n";
  for (const auto& n : r["nodes"])
    md << "| " << n["node_nm"].get<int>() << " | " << fmt_g(n["area_factor"].get<double>()) << " | "
       << fmt_g(n["delay_factor"].get<double>()) << " | " << fmt(n["vdd_v"].get<double>(), 2) << " | "
       << fmt_g(n["sram_bitcell_um2"].get<double>()) << " | " << n["source"].get<std::string>() << "; "
       << n["sram_bitcell_source"].get<std::string>() << " |\n";
  return md.str();
}

}  // namespace spartan::area
