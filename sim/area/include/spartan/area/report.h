// Assembles spartan-area's results: per unit area (logic, memories as flip-flops and as SRAM), timing,
// node scaling, per-GPU totals, share of die, and latency/throughput from RTL co-simulation cycle counts.
// Output: area.json (nlohmann::json) and area.md (Markdown tables).
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "spartan/area/flow.h"
#include "spartan/area/gpu.h"

namespace spartan::area {

/// How the total area counts memories.
enum class MemoryModel { kSram, kFlipFlops };

/// Cycle counts measured by the RTL co-simulation for one unit (the --cycles JSON, see docs/area.md):
///   {"source": "...", "units": {"<unit name>": {"tiles": N, "busy_cycles": C,
///                                                "tile_latency_cycles": L, "tile_bytes": B,
///                                                "gpu_model_busy_ns": T}}}
/// `busy_cycles` (L2 cycles) come from the RTL behind a fixed-latency memory; `gpu_model_busy_ns` is the
/// busy time of the same jobs in the simulated GPU's memory hierarchy (spartan-sim's TLM unit, engine only).
/// Every field but `tiles` + `busy_cycles` (together) is optional; `gpu_model_busy_ns` needs `tiles`.
struct UnitCycles {
  std::optional<double> tiles, busy_cycles, tile_latency_cycles, tile_bytes, gpu_model_busy_ns;
};
struct CycleCounts {
  std::string source;
  std::map<std::string, UnitCycles> units;
};

/// Largest value of a --cycles field (2^53, where doubles stop holding every integer): far above any
/// simulated count, and small enough that the report's products and quotients stay finite.
inline constexpr double kMaxCycleField = 9007199254740992.0;

/// Parses the --cycles file. Throws FormatError/ConfigError naming the file and field: every field is a
/// finite number from 0 to kMaxCycleField, `tiles` a whole number.
CycleCounts parse_cycle_counts(const std::string& text, const std::string& file);

struct ReportOptions {
  std::vector<int> nodes_nm = {180, 45, 16, 7, 5};
  MemoryModel memory_model = MemoryModel::kSram;
  double clock_ns = 10.0;
  std::string liberty;
  bool abc_buffering = true;
  /// The liberty's gate-equivalent reference (find_nand2_cell): units[].area_180nm.logic_kge = logic area /
  /// its area / 1000; without one the gate counts are null and area.md says why.
  std::optional<LibertyCell> nand2;
  /// The tools' own version lines (check_tools): `yosys -V` ("Yosys 0.23 (git sha1 ...)") and `sta -version`.
  std::string yosys_version = "Yosys", sta_version;
};

/// Builds the JSON report (all numbers; areas in um^2 per instance, mm^2 per GPU).
nlohmann::json build_report(const std::vector<UnitResult>& units, const GpuInfo& gpu,
                            const std::optional<CycleCounts>& cycles, const ReportOptions& opt);

/// Renders the JSON report as Markdown tables.
std::string render_markdown(const nlohmann::json& report);

}  // namespace spartan::area
