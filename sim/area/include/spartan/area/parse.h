// Parsers for the text reports of the synthesis and timing tools used by spartan-area.
// Yosys 0.23 `stat -liberty` and `dump t:$mem_v2`; OpenSTA 2.x `report_checks -path_delay max`.
// All parsers take the report text and a name for error messages; malformed reports throw
// spartan::FormatError naming the report and the line.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace spartan::area {

/// One module's statistics from Yosys `stat -liberty FILE` (after mapping to standard cells).
struct YosysStat {
  std::string module;                        ///< module name without the leading backslash
  std::uint64_t cells = 0;                   ///< "Number of cells"
  std::map<std::string, std::uint64_t> cell_counts;  ///< liberty cell name -> instances
  double chip_area_um2 = 0.0;                ///< "Chip area for module" (liberty area unit: um^2 for OSU 0.18)
  std::uint64_t memories = 0;                ///< "Number of memories" (0 after memory mapping)
  std::uint64_t memory_bits = 0;             ///< "Number of memory bits"
  bool has_area = false;                     ///< the report carried a chip area line
};

/// Parses the report of `stat -liberty` for a flattened design: exactly one module block is expected;
/// if several are present (hierarchical design) the one named `top` is returned, or the last one when
/// `top` is empty. Throws FormatError if no module block or no cell count is found.
YosysStat parse_yosys_stat(const std::string& text, const std::string& report_name, const std::string& top = "");

/// A memory inferred by Yosys (`$mem_v2` cell after `memory -nomap`), from an RTLIL `dump`.
struct MemoryInfo {
  std::string name;            ///< memory id (hierarchical after flattening, without backslash)
  std::uint64_t width_bits = 0;   ///< WIDTH parameter: bits per word
  std::uint64_t depth_words = 0;  ///< SIZE parameter: words
  unsigned abits = 0;          ///< ABITS parameter: address bits
  unsigned read_ports = 0;     ///< RD_PORTS
  unsigned write_ports = 0;    ///< WR_PORTS
  bool sync_read = false;      ///< any RD_CLK_ENABLE bit set (registered read port)
  /// One read and one write port on the same address signal and the same clock (RD_ADDR / WR_ADDR and
  /// RD_CLK / WR_CLK connected alike in the dump): a single-port array, which a single-port SRAM macro can
  /// stand for. False for separate addresses or clocks (a two-port macro; an asynchronous read port has no
  /// clock and counts as two-port too) and for any other port count.
  bool shared_address = false;
  std::uint64_t bits() const noexcept { return width_bits * depth_words; }
  /// Whether an SRAM macro can stand for this memory (sram_eligible()).
  bool sram() const noexcept;
};

/// SRAM-macro rule: at most one write and two read ports and at least kSramMinDepthWords words. Smaller
/// or more heavily ported arrays (register banks such as per-region configuration registers, which Yosys
/// also infers as memories) stay flip-flops in every model. The same rule is given to Yosys as the
/// selection kSramYosysSelect.
inline constexpr std::uint64_t kSramMinDepthWords = 16;
inline constexpr const char* kSramYosysSelect = "t:$mem_v2 r:WR_PORTS<=1 %i r:RD_PORTS<=2 %i r:SIZE>=16 %i";

/// Parses the RTLIL text of `dump t:$mem_v2` (Yosys 0.23). An empty dump means no memories.
/// Throws FormatError on a `$mem_v2` cell that lacks WIDTH or SIZE.
std::vector<MemoryInfo> parse_yosys_memories(const std::string& text, const std::string& report_name);

/// One timing path from OpenSTA `report_checks -path_delay max` (times in the liberty time unit, ns).
struct StaPath {
  std::string startpoint, endpoint;
  std::string path_group;
  double arrival_ns = 0.0;    ///< "data arrival time"
  double required_ns = 0.0;   ///< "data required time"
  double slack_ns = 0.0;      ///< "slack (MET|VIOLATED)"
  bool met = true;
  unsigned stages = 0;        ///< cell output pins on the path (logic depth incl. the launching flop)
};

/// Parses every path in an OpenSTA report_checks text (several reports may be concatenated).
/// Returns an empty vector when the report says "No paths found." Throws FormatError when a path
/// block lacks its arrival, required or slack line.
std::vector<StaPath> parse_sta_paths(const std::string& text, const std::string& report_name);

/// A standard cell of a liberty library and its area (the library's area unit: um^2 for OSU 0.18 um).
struct LibertyCell {
  std::string name;
  double area = 0.0;
};

/// The gate-equivalent reference of a liberty: its smallest-area two-input NAND (1 GE, the usual unit of gate
/// counts, which compare across libraries where um^2 carry each library's density). A cell counts as a two-input
/// NAND by its name, case-insensitively: `nand2` at the start or after `_`, followed by the end, `x`, `_` or a
/// digit (NAND2X1 in OSU, NAND2_X1 in Nangate, sky130_fd_sc_hd__nand2_1), so NAND2B (an inverted input) does not.
/// `cell (NAME) { area : A; ... }` groups are read with comments and quoted strings skipped; only an `area`
/// attribute directly in the cell group counts. Returns nullopt when the library has no such cell with a positive
/// finite area (e.g. TSMC-style ND2D1 names).
std::optional<LibertyCell> find_nand2_cell(const std::string& liberty_text);

/// Whether the liberty text defines cell `cell` with an output pin `out` whose function is the input `in`
/// (a buffer: `function : "A"`, also written "(A)"), as `--buffer-cell` must name one. A light text search
/// (the cell group up to the next `cell (`), not a liberty parser.
bool liberty_has_buffer(const std::string& liberty_text, const std::string& cell, const std::string& in,
                        const std::string& out);

}  // namespace spartan::area
