// The synthesis and timing flow of spartan-area: Yosys 0.23 -> OSU 0.18 um standard cells -> OpenSTA.
// Per unit: synth (flattened), memories recorded before they are mapped to flip-flops, dfflibmap + abc to
// the liberty, `stat -liberty`, gate-level netlist, then OpenSTA report_checks for the critical path.
// fmax = 1 / (worst path over all path groups), inputs and outputs constrained with zero external delay
// (the neighbours are assumed registered), so input-to-register logic counts as well.
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "spartan/area/parse.h"

namespace spartan::area {

/// What a unit is in the GPU: decides how many instances a GPU has.
enum class UnitRole { kMonitor, kEngine, kOther };
const char* role_name(UnitRole r);

/// One synthesis unit (a top module and its sources).
struct UnitSpec {
  std::string name;                 ///< report name
  std::string top;                  ///< top module
  std::vector<std::string> files;   ///< Verilog sources (absolute or relative to the cwd)
  UnitRole role = UnitRole::kOther;
  std::map<std::string, std::string> parameters;  ///< top-level parameter overrides (Yosys chparam)
  std::string clock = "clk";        ///< clock port; a virtual clock is used when the port does not exist
  unsigned count_override = 0;      ///< instances per GPU when role is kOther (0: not counted per GPU)
  /// The manifest named the clock (`clock:`): it must then be an input port of the top (run_unit refuses
  /// the unit otherwise, instead of timing it against a virtual clock).
  bool clock_given = false;
};

/// Reads a unit manifest: files ending in .txt go to load_units_txt(), everything else is YAML/JSON.
/// YAML/JSON format (paths relative to the manifest's directory):
///   units:
///     - {name: sparsity_monitor, top: sparsity_monitor, role: monitor, files: [a.v, b.v],
///        parameters: {LANES: 8}, clock: clk}
/// role: monitor (one per L2 slice) | engine (compaction engines per GPU) | other (count: N, default 0).
/// Throws ConfigError (one line, naming the key) on a path that is a directory, a root that is not a map,
/// `units` that is not a non-empty list, a unit that is not a map, an unknown key or one given twice (at the
/// root, in a unit, in `parameters`), a value of the wrong type, a missing key, an unknown role, a top or
/// clock that is not a Verilog identifier, a parameter name that is not one or a value that is not a
/// Verilog constant (is_verilog_constant), a listed file that does not exist, is not a regular file or
/// whose path the scripts cannot carry (check_script_path), and a unit name that is not a plain file name or
/// is used twice (check_unit_name).
std::vector<UnitSpec> load_manifest(const std::string& path);

/// Reads the RTL helper's text manifest (rtl/units.txt). Format: '#' comments; "top NAME" starts a unit;
/// the following indented lines are its files (relative to the manifest's directory, dependency order),
/// "params K=V K=V ..." (Yosys chparam), and optionally "role monitor|engine|other" and "count N".
/// Without a role line: top sparsity_monitor -> monitor, compaction_engine -> engine, others -> other.
/// Throws ConfigError (with the line number) on anything else, on a top listed twice (check_unit_name) or
/// not a Verilog identifier, on parameters as in load_manifest() (also one given twice) and on a count
/// above 4294967295.
std::vector<UnitSpec> load_units_txt(const std::string& path);

/// Checks a unit name, which names the unit's work directory and its netlist `netlists/<name>.v`: 1-200
/// letters, digits, '_', '-', '+' or '.', not starting with '.', and not in `seen` (a name used twice would
/// make two units share those files); adds it to `seen`. Throws ConfigError(file, key, ...).
void check_unit_name(const std::string& name, std::set<std::string>& seen, const std::string& file,
                     const std::string& key);

/// Default units when no manifest exists: sparsity_monitor (monitor) and compaction_engine (engine),
/// each with every *.v / *.sv file of `rtl_dir`. Throws InputError when rtl_dir has no Verilog.
std::vector<UnitSpec> default_units(const std::string& rtl_dir);

struct ToolConfig {
  std::string yosys = "/usr/bin/yosys";
  std::string sta = "/usr/bin/sta";
  std::string liberty = "/usr/share/qflow/tech/osu018/osu018_stdcells.lib";
  double clock_ns = 10.0;  ///< STA clock period; fmax follows from the slack, not from this value
  /// Above this many SRAM-eligible memory bits a unit is not synthesised with its memories as flip-flops
  /// (hours of ABC for a 32 KiB table): its timing then comes from the logic netlist with the macros
  /// as black boxes, and the flip-flop memory area is not reported.
  std::uint64_t ff_memory_limit_bits = 65536;
  /// ABC maps with the clock as delay target, buffers high-fanout nets and sizes gates (see flow.cpp);
  /// false gives the plain `abc -liberty` mapping (unbuffered, X1 cells: timing far too pessimistic).
  bool abc_buffering = true;
  /// "CELL IN OUT" buffer used by Yosys `insbuf` to replace assigns in the netlist given to OpenSTA.
  std::string buffer_cell = "BUFX2 A Y";
};

/// The tools' version lines, as they print them (for area.json).
struct ToolVersions {
  std::string yosys;  ///< first line of `yosys -V`, e.g. "Yosys 0.23 (git sha1 ...)"
  std::string sta;    ///< first line of `sta -version`, e.g. "2.0.17" (area.json: "OpenSTA 2.0.17")
};

/// Checks that the tools are executable and the liberty is readable, and returns the tools' versions.
/// Throws InputError (one line).
ToolVersions check_tools(const ToolConfig& tools);

/// Whether `s` is a plain Verilog identifier without '$' ([A-Za-z_][A-Za-z0-9_]*: OpenSTA's Tcl would
/// substitute a '$'): module, port and parameter names that go into the Yosys and OpenSTA scripts.
bool is_verilog_identifier(const std::string& s);

/// Whether `v` is a Verilog constant that Yosys 0.23's `chparam -set` decodes, as one word: an unsigned
/// decimal, a based number (8'hFF, 'd5; a negative value as a signed based one, 8'shFB) or a double-quoted
/// string of printable characters other than '"', '\', ';', '#', '$', '[', ']' and '`'. Manifest parameter
/// values must be one: they are written into the Yosys script (Yosys refuses -1, +3, 1.5 and 1e1 there).
bool is_verilog_constant(const std::string& v);

/// Throws InputError naming `what` unless every character of `path` is a letter, a digit or one of
/// _ . / + - , : = @ % ~ (and a blank where `blanks_allowed`: Verilog sources, which read_verilog takes
/// quoted). Paths go into the Yosys script, ABC's shell command line (the tools' TMPDIR) and OpenSTA's Tcl:
/// a newline ran a Yosys `!` command, `$(...)` in TMPDIR a shell command, `$` and `[` are Tcl substitutions,
/// and Yosys `tee -o` keeps the quotes around a path with blanks.
void check_script_path(const std::string& path, const std::string& what, bool blanks_allowed = false);

struct UnitResult {
  UnitSpec spec;
  YosysStat stat;                  ///< the netlist that was timed: memories as flip-flops if ff_synthesised
  bool ff_synthesised = true;      ///< memories were also synthesised as flip-flops (stat is that run)
  bool timed_with_macros = false;  ///< STA ran on the logic netlist, SRAM macros as black boxes
  std::vector<MemoryInfo> memories;
  /// Area of everything but the SRAM-eligible memories (MemoryInfo::sram()): the design synthesised
  /// again with each of them turned into a black-box macro (zero area), so the logic around them is kept
  /// exactly. Equals stat.chip_area_um2 when there is no SRAM-eligible memory.
  double logic_um2 = 0.0;
  bool has_reg2reg = false;
  StaPath reg2reg;                 ///< worst register-to-register path (reported)
  StaPath worst;                   ///< worst path of all, I/O with zero external delay (defines fmax)
  double critical_path_ns = 0.0;   ///< clock_ns - slack of the worst path
  double fmax_mhz = 0.0;           ///< 1000 / critical_path_ns
  std::string netlist;             ///< gate-level Verilog (write_verilog -noattr)
  std::string yosys_script, sta_script;
};

/// Runs the flow for one unit in `work_dir` (must exist). Throws InputError with the tool's first ERROR
/// line when Yosys rejects the RTL or OpenSTA cannot link the netlist, and when the unit's clock_given
/// clock is not an input port of its top (checked right after Yosys's `hierarchy`, before the synthesis).
UnitResult run_unit(const UnitSpec& unit, const ToolConfig& tools, const std::string& work_dir);

/// Runs `argv` with stdout+stderr to `log_path` and TMPDIR=`tmpdir` when not empty (run_process, cleanup.h:
/// an interrupt terminates it); returns the exit status (127 when it cannot start).
int run_tool(const std::vector<std::string>& argv, const std::string& log_path, const std::string& tmpdir = "");

}  // namespace spartan::area
