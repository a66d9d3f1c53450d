// Yosys + OpenSTA flow for spartan-area (see flow.h).
#include "spartan/area/flow.h"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>
#include <utility>

#include "spartan/area/cleanup.h"
#include "spartan/common/atomic_file.h"
#include "spartan/common/error.h"

namespace spartan::area {
namespace fs = std::filesystem;

namespace {

// First "ERROR:" / "Error:" line of a tool log, or its last non-empty line.
std::string first_error(const std::string& log) {
  std::istringstream in(log);
  std::string line, last;
  while (std::getline(in, line)) {
    if (line.rfind("ERROR:", 0) == 0 || line.rfind("Error:", 0) == 0 || line.rfind("Error ", 0) == 0) return line;
    if (!line.empty()) last = line;
  }
  return last.empty() ? std::string("the tool printed nothing") : last;
}

// A path as one word of a Yosys command: in double quotes when it holds blanks (check_script_path() has refused
// the characters that would end the word or the command there).
std::string yosys_quote(const std::string& path) {
  if (path.find_first_of(" \t") == std::string::npos) return path;
  return "\"" + path + "\"";
}

// A Verilog constant that Yosys 0.23's `chparam -set` decodes, as one word: an unsigned decimal, a based number
// (8'hFF, 'd5, 4'sb1010: a negative value is a signed based one, 8'shFB) or a quoted string of printable
// characters other than '"', '\', ';', '#', '$', '[', ']' and '`'. Yosys refuses "-1", "+3", "1.5" and "1e1".
bool is_verilog_constant(const std::string& v) {
  static const std::regex re(
      R"re([0-9][0-9_]*|([0-9][0-9_]*)?'[sS]?[bBoOdDhH][0-9a-fA-FxXzZ?_]+|"[^"\\;#$\[\]`\x00-\x1f\x7f]*")re");
  return std::regex_match(v, re);
}

// Black box standing for an SRAM macro: same parameters and ports as Yosys's $mem_v2 cell (Yosys 0.23).
const char* kSramBlackbox = R"((* blackbox *)
module spartan_sram_macro(RD_CLK, RD_EN, RD_ARST, RD_SRST, RD_ADDR, RD_DATA, WR_CLK, WR_EN, WR_ADDR, WR_DATA);
  parameter MEMID = "", SIZE = 1, OFFSET = 0, ABITS = 1, WIDTH = 1, INIT = 0;
  parameter RD_PORTS = 1, RD_WIDE_CONTINUATION = 0, RD_CLK_ENABLE = 0, RD_CLK_POLARITY = 0, RD_TRANSPARENCY_MASK = 0;
  parameter RD_COLLISION_X_MASK = 0, RD_CE_OVER_SRST = 0, RD_INIT_VALUE = 0, RD_ARST_VALUE = 0, RD_SRST_VALUE = 0;
  parameter WR_PORTS = 1, WR_WIDE_CONTINUATION = 0, WR_CLK_ENABLE = 0, WR_CLK_POLARITY = 0, WR_PRIORITY_MASK = 0;
  input [RD_PORTS-1:0] RD_CLK, RD_EN, RD_ARST, RD_SRST;
  input [RD_PORTS*ABITS-1:0] RD_ADDR;
  output [RD_PORTS*WIDTH-1:0] RD_DATA;
  input [WR_PORTS-1:0] WR_CLK;
  input [WR_PORTS*WIDTH-1:0] WR_EN, WR_DATA;
  input [WR_PORTS*ABITS-1:0] WR_ADDR;
endmodule
)";

// The $mem_v2 parameters, removed from the macro instances so that OpenSTA's Verilog reader (which has no
// instance parameters) can read the netlist and treat the macro as a black box.
const char* kMemParams[] = {"MEMID", "SIZE", "OFFSET", "ABITS", "WIDTH", "INIT", "RD_PORTS", "RD_WIDE_CONTINUATION",
                            "RD_CLK_ENABLE", "RD_CLK_POLARITY", "RD_TRANSPARENCY_MASK", "RD_COLLISION_X_MASK",
                            "RD_CE_OVER_SRST", "RD_INIT_VALUE", "RD_ARST_VALUE", "RD_SRST_VALUE", "WR_PORTS",
                            "WR_WIDE_CONTINUATION", "WR_CLK_ENABLE", "WR_CLK_POLARITY", "WR_PRIORITY_MASK"};

// Yosys script for one unit. `macros`: record the memories, turn the SRAM-eligible ones into black-box
// macros (logic-only run, files logic_*); otherwise every memory becomes flip-flops (files ff_*).
// ABC script for mapping to the liberty with buffering and gate sizing: Yosys 0.23's default liberty flow
// (fraig, scorr, dc2, dretime, dch, &nf) followed by `buffer -N 10; upsize; dnsize` against the delay target.
// Without buffering, one X1 inverter drives hundreds of mux inputs and STA reports tens of ns.
const char* kAbcScript =
    "+strash;&get,-n;&fraig,-x;&put;scorr;dc2;dretime;strash;&get,-n;&dch,-f;&nf,{D};&put;"
    "buffer,-N,10;upsize,{D};dnsize,{D};stime,-p";

std::string abc_command(const ToolConfig& tools, const std::string& lib) {
  if (!tools.abc_buffering) return "abc -liberty " + lib;
  std::ostringstream c;
  c << "abc -D " << static_cast<long long>(tools.clock_ns * 1000.0 + 0.5) << " -liberty " << lib << " -script "
    << kAbcScript;
  return c.str();
}

// The front end both scripts share: the sources (and a black-box library, if any), the parameter overrides and
// `hierarchy`.
void front_end(std::ostream& ys, const UnitSpec& unit, const std::string& blackbox_lib) {
  for (const auto& f : unit.files) ys << "read_verilog -sv " << yosys_quote(f) << "\n";
  if (!blackbox_lib.empty()) ys << "read_verilog -lib " << yosys_quote(blackbox_lib) << "\n";
  for (const auto& [k, v] : unit.parameters) ys << "chparam -set " << k << " " << v << " " << unit.top << "\n";
  ys << "hierarchy -check -top " << unit.top << "\n";
}

std::string synth_script(const UnitSpec& unit, const ToolConfig& tools, const std::string& lib, const fs::path& wd,
                         bool macros) {
  std::ostringstream ys;
  front_end(ys, unit, macros ? (wd / "sram_macro.v").string() : std::string());
  const std::string tag = macros ? "logic_" : "ff_";
  if (macros && unit.clock_given)
    // The clock the manifest names must be an input of the top (a misspelt one used to give a virtual clock
    // and silently wrong timing): list the inputs for run_unit's message and stop here, before the synthesis.
    ys << "tee -q -o " << yosys_quote((wd / "inputs.txt").string()) << " select -list " << unit.top << "/i:*\n"
       << "select -assert-any " << unit.top << "/i:" << unit.clock << "\n";
  ys << "synth -flatten -top " << unit.top << " -run :fine\n";
  if (macros)
    ys << "tee -q -o " << yosys_quote((wd / "memories.txt").string()) << " dump t:$mem_v2\n"
       << "chtype -set spartan_sram_macro " << kSramYosysSelect << "\n";
  ys << "synth -flatten -top " << unit.top << " -run fine:\n"
     << "dfflibmap -liberty " << lib << "\n"
     << abc_command(tools, lib) << "\n"
     << "opt_clean\n"
     << "tee -q -o " << yosys_quote((wd / (tag + "stat.txt")).string()) << " stat -liberty " << lib << "\n";
  if (macros) {
    ys << "setparam";
    for (const char* p : kMemParams) ys << " -unset " << p;
    ys << " t:spartan_sram_macro\n";
  }
  // Netlist for OpenSTA, after the area was taken: its Verilog reader takes no `assign` with
  // concatenations, so wire-to-wire connections become buffers (a few BUFX2 on port nets).
  ys << "opt_clean -purge\nsetundef -zero\nsplitnets -ports\ninsbuf -buf " << tools.buffer_cell << "\nopt_clean\n"
     << "write_verilog -noattr -noexpr " << yosys_quote((wd / (tag + "netlist.v")).string()) << "\n";
  return ys.str();
}

// Yosys script of the port check (run_unit): the memories of the same front end with undefined mux inputs
// folded (`we ? addr : x` is then `addr`), so that a read and a write port on one address and one clock show
// the same signals. A run of its own: folding them in the synthesis run changed its netlist (ABC's mapping
// follows the design's order), and `design -save`/`-load` around it did too.
std::string ports_script(const UnitSpec& unit, const fs::path& wd) {
  std::ostringstream ys;
  front_end(ys, unit, "");
  ys << "synth -flatten -top " << unit.top << " -run :fine\n"
     << "opt_expr -mux_undef\nopt_clean\n"
     << "tee -q -o " << yosys_quote((wd / "ports.txt").string()) << " dump t:$mem_v2\n";
  return ys.str();
}

std::string read_if_exists(const std::string& p) { return fs::exists(p) ? read_file(p) : std::string(); }

}  // namespace

const char* role_name(UnitRole r) {
  switch (r) {
    case UnitRole::kMonitor: return "monitor";
    case UnitRole::kEngine: return "engine";
    default: return "other";
  }
}

int run_tool(const std::vector<std::string>& argv, const std::string& log_path, const std::string& tmpdir) {
  return run_process(argv, log_path, tmpdir);
}

ToolVersions check_tools(const ToolConfig& t) {
  if (access(t.yosys.c_str(), X_OK) != 0) throw InputError("yosys not found or not executable: " + t.yosys);
  if (access(t.sta.c_str(), X_OK) != 0) throw InputError("OpenSTA (sta) not found or not executable: " + t.sta);
  if (access(t.liberty.c_str(), R_OK) != 0 || fs::is_directory(t.liberty))
    throw InputError("liberty file not found or not readable: " + t.liberty);
  if (!(t.clock_ns > 0.0)) throw InputError("--clock-ns must be positive");
  // Run each tool once with its version switch, so that a wrong binary fails here and not after minutes of
  // synthesis with an empty reason ('--yosys /bin/false'): Yosys prints "Yosys <version>", OpenSTA its version.
  std::error_code ec;
  const fs::path tmp = fs::temp_directory_path(ec);  // TMPDIR, as the scratch dir
  if (ec) throw IoError("cannot find a directory for temporary files: " + ec.message());
  const TempDir dir(tmp.string(), "spartan-area-probe.", "spartan-area");
  const std::string log = dir.path() + "/version.log";
  auto probe = [&](const std::string& exe, const char* flag) {
    const int rc = run_tool({exe, flag}, log);
    std::string out = read_if_exists(log);
    fs::remove(log, ec);
    while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
    return std::pair<int, std::string>{rc, out};
  };
  const auto [yrc, yout] = probe(t.yosys, "-V");
  const auto [src, sout] = probe(t.sta, "-version");
  if (yrc != 0 || yout.rfind("Yosys", 0) != 0)
    throw InputError("--yosys " + t.yosys + " is not Yosys: '" + t.yosys + " -V' exited " + std::to_string(yrc) +
                     (yout.empty() ? " with no output" : " printing '" + yout.substr(0, 80) + "'"));
  if (src != 0 || sout.empty() || !std::isdigit(static_cast<unsigned char>(sout[0])))
    throw InputError("--sta " + t.sta + " is not OpenSTA: '" + t.sta + " -version' exited " + std::to_string(src) +
                     (sout.empty() ? " with no output" : " printing '" + sout.substr(0, 80) + "'"));
  // The flow gives OpenSTA its clock in ns and reads its reports in ns: the liberty must use 1 ns.
  const std::string lib = read_file(t.liberty);
  // std::regex on a whole (possibly 100 MB) library is slow: look at the attribute's own line only.
  const auto at = lib.find("time_unit");
  const std::string line = at == std::string::npos ? std::string() : lib.substr(at, lib.find('\n', at) - at);
  static const std::regex unit_re(R"re(time_unit\s*:\s*"?\s*([0-9.]+)\s*([a-zA-Z]+)\s*"?)re");
  std::smatch m;
  if (!std::regex_search(line, m, unit_re))
    throw InputError("liberty " + t.liberty + " has no time_unit (the flow needs \"1ns\")");
  if (std::stod(m[1].str()) != 1.0 || m[2].str() != "ns")
    throw InputError("liberty " + t.liberty + ": time_unit \"" + m[1].str() + m[2].str() +
                     "\" is not supported (the flow gives and reads OpenSTA times in ns: use a library with time_unit \"1ns\")");
  auto first_line = [](const std::string& text) { return text.substr(0, text.find('\n')); };
  return {first_line(yout), first_line(sout)};
}

bool is_verilog_identifier(const std::string& s) {
  static const std::regex ident(R"([A-Za-z_][A-Za-z0-9_]*)");  // no '$': OpenSTA's Tcl would substitute it
  return std::regex_match(s, ident);
}

void check_script_path(const std::string& path, const std::string& what, bool blanks_allowed) {
  for (const char ch : path) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || std::strchr("_./+-,:=@%~", ch) != nullptr || (blanks_allowed && ch == ' ')) continue;
    throw InputError(what + " '" + path + "': the path has a character other than letters, digits and _ . / + - , : = @ % ~" +
                     std::string(blanks_allowed ? " or a blank" : "") +
                     ", which the Yosys, ABC or OpenSTA scripts cannot carry; rename or move it");
  }
}

void check_unit_name(const std::string& name, std::set<std::string>& seen, const std::string& file,
                     const std::string& key) {
  static const std::regex plain(R"([A-Za-z0-9_+-][A-Za-z0-9_.+-]*)");
  if (name.size() > 200 || !std::regex_match(name, plain))
    throw ConfigError(file, key, "unit name '" + name +
                                     "' is not a plain file name (it names the unit's netlist, netlists/<name>.v): "
                                     "1-200 letters, digits, '_', '-', '+' or '.', not starting with '.'");
  if (!seen.insert(name).second)
    throw ConfigError(file, key, "duplicate unit name '" + name + "' (give the units distinct 'name's)");
}

namespace {
// A top-level parameter override goes into the Yosys script as `chparam -set NAME VALUE TOP`: a value with a
// newline or ';' ran further Yosys commands, a shell command among them (forty-first session's review).
void check_parameter(const std::string& name, const std::string& value, const std::string& file, const std::string& key) {
  if (!is_verilog_identifier(name)) throw ConfigError(file, key, "parameter name '" + name + "' is not a Verilog identifier");
  if (!is_verilog_constant(value))
    throw ConfigError(file, key, "parameter " + name + ": '" + value +
                                     "' is not a Verilog constant Yosys takes (16, 8'hFF, 'd5, 8'shFB for a negative value, or a \"string\")");
}

// A unit count: decimal digits only (no sign, blank, "0x"), 0 to 4294967295.
unsigned parse_count(const std::string& text, const std::string& file, const std::string& key) {
  std::size_t nz = text.find_first_not_of('0');
  const std::string digits = nz == std::string::npos ? "0" : text.substr(nz);
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos || digits.size() > 10 ||
      std::stoull(digits) > 0xFFFFFFFFull)
    throw ConfigError(file, key, "count must be a whole number from 0 to 4294967295 (decimal digits), not '" + text + "'");
  return static_cast<unsigned>(std::stoull(digits));
}

// A listed Verilog source: a regular file whose path the scripts can carry.
void check_manifest_file(const std::string& p, const std::string& file, const std::string& key) {
  if (!fs::is_regular_file(p)) throw ConfigError(file, key, "not a regular file: " + p);
  try {
    check_script_path(p, "file", true);  // (read_verilog takes a quoted path)
  } catch (const InputError& e) {
    throw ConfigError(file, key, e.what());
  }
}

UnitRole role_from(const std::string& role, const std::string& file, const std::string& key) {
  if (role == "monitor") return UnitRole::kMonitor;
  if (role == "engine") return UnitRole::kEngine;
  if (role == "other") return UnitRole::kOther;
  throw ConfigError(file, key, "unknown role '" + role + "' (monitor, engine, other)");
}
}  // namespace

std::vector<UnitSpec> load_units_txt(const std::string& path) {
  std::istringstream in(read_file(path));
  const fs::path base = fs::path(path).parent_path();
  std::vector<UnitSpec> out;
  std::set<std::string> names;
  std::string line;
  std::size_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    const auto hash = line.find('#');
    if (hash != std::string::npos) line.resize(hash);
    std::istringstream ls(line);
    std::string word;
    if (!(ls >> word)) continue;
    const std::string key = "line " + std::to_string(lineno);
    std::vector<std::string> rest;
    for (std::string w; ls >> w;) rest.push_back(w);
    if (word == "top") {
      if (rest.size() != 1) throw ConfigError(path, key, "expected 'top NAME'");
      UnitSpec s;
      s.name = s.top = rest[0];
      if (!is_verilog_identifier(s.top)) throw ConfigError(path, key, "top '" + s.top + "' is not a Verilog module name");
      check_unit_name(s.name, names, path, key);
      s.role = s.top == "sparsity_monitor" ? UnitRole::kMonitor
               : s.top == "compaction_engine" ? UnitRole::kEngine : UnitRole::kOther;
      out.push_back(s);
      continue;
    }
    if (out.empty()) throw ConfigError(path, key, "'" + word + "' before the first 'top' line");
    UnitSpec& s = out.back();
    if (word == "params") {
      for (const auto& kv : rest) {
        const auto eq = kv.find('=');
        if (eq == std::string::npos || eq == 0 || eq + 1 == kv.size())
          throw ConfigError(path, key, "parameter '" + kv + "' is not NAME=VALUE");
        check_parameter(kv.substr(0, eq), kv.substr(eq + 1), path, key);
        if (!s.parameters.emplace(kv.substr(0, eq), kv.substr(eq + 1)).second)
          throw ConfigError(path, key, "parameter '" + kv.substr(0, eq) + "' given twice");
      }
    } else if (word == "role") {
      if (rest.size() != 1) throw ConfigError(path, key, "expected 'role monitor|engine|other'");
      s.role = role_from(rest[0], path, key);
    } else if (word == "count") {
      // (A count above 2^32 - 1 used to wrap to another number, or end in "internal error".)
      if (rest.size() != 1) throw ConfigError(path, key, "expected 'count N'");
      s.count_override = parse_count(rest[0], path, key);
    } else {
      if (!rest.empty()) throw ConfigError(path, key, "unknown directive '" + word + "'");
      fs::path p = word;
      if (p.is_relative()) p = base / p;
      p = fs::absolute(p).lexically_normal();  // (the scripts kept by --keep-work run from anywhere)
      if (!fs::exists(p)) throw ConfigError(path, key, "file not found: " + p.string());
      check_manifest_file(p.string(), path, key);
      s.files.push_back(p.string());
    }
  }
  if (out.empty()) throw ConfigError(path, "top", "no unit in the manifest");
  for (const auto& s : out)
    if (s.files.empty()) throw ConfigError(path, "top " + s.top, "unit without files");
  return out;
}

namespace {
// What a YAML node is, for "must be a map, not ..." messages.
std::string yaml_kind(const YAML::Node& n) {
  if (!n || n.IsNull()) return "empty";
  if (n.IsScalar()) return "a scalar ('" + n.Scalar().substr(0, 40) + "')";
  if (n.IsSequence()) return "a list";
  return "a map";
}

// A scalar value as a string; null, a list or a map is refused (yaml-cpp would give "null" for `~`).
std::string yaml_string(const YAML::Node& n, const std::string& file, const std::string& key) {
  if (!n.IsScalar()) throw ConfigError(file, key, "must be a string, not " + yaml_kind(n));
  return n.Scalar();
}
}  // namespace

std::vector<UnitSpec> load_manifest(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw ConfigError(path, "-", "is a directory, not a manifest file");
  if (fs::path(path).extension() == ".txt") return load_units_txt(path);
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw ConfigError(path, "-", "cannot open manifest");
  } catch (const YAML::Exception& e) {
    throw ConfigError(path, "-", std::string("cannot parse: ") + e.what());
  }
  const fs::path base = fs::path(path).parent_path();
  // Every shape error is a ConfigError naming the key; a yaml-cpp exception left (e.g. a map key that is
  // itself a list) is turned into one naming the innermost key reached (`where`), never an internal error.
  std::string where = "-";
  try {
    if (!root.IsMap()) throw ConfigError(path, "-", "the manifest must be a map with a 'units' list, not " + yaml_kind(root));
    for (const auto& kv : root) {
      const std::string k = yaml_string(kv.first, path, "-");
      if (k != "units") throw ConfigError(path, k, "unknown key (the manifest has only 'units')");
    }
    // yaml-cpp keeps the first of two equal keys and drops the other without a word.
    if (root.size() > 1) throw ConfigError(path, "units", "key given twice");
    where = "units";
    const YAML::Node units = root["units"];
    if (!units || !units.IsSequence() || units.size() == 0)
      throw ConfigError(path, "units", "missing or empty list" + (units && !units.IsSequence() ? " (it is " + yaml_kind(units) + ")" : std::string()));
    std::vector<UnitSpec> out;
    std::set<std::string> names;
    for (std::size_t i = 0; i < units.size(); ++i) {
      const YAML::Node u = units[i];
      const std::string key = "units[" + std::to_string(i) + "]";
      where = key;
      if (!u.IsMap()) throw ConfigError(path, key, "must be a map, not " + yaml_kind(u));
      std::set<std::string> seen;
      for (const auto& kv : u) {
        const std::string k = yaml_string(kv.first, path, key);
        static const std::set<std::string> known = {"name", "top", "role", "count", "clock", "files", "parameters"};
        if (!known.count(k))
          throw ConfigError(path, key + "." + k, "unknown key (known: name, top, role, files, parameters, clock, count)");
        if (!seen.insert(k).second) throw ConfigError(path, key + "." + k, "key given twice");
      }
      UnitSpec s;
      if (!u["top"]) throw ConfigError(path, key + ".top", "missing");
      s.top = yaml_string(u["top"], path, key + ".top");
      if (!is_verilog_identifier(s.top))
        throw ConfigError(path, key + ".top", "'" + s.top + "' is not a Verilog module name");
      s.name = u["name"] ? yaml_string(u["name"], path, key + ".name") : s.top;
      check_unit_name(s.name, names, path, key + (u["name"] ? ".name" : ".top"));
      s.role = role_from(u["role"] ? yaml_string(u["role"], path, key + ".role") : "other", path, key + ".role");
      if (u["count"]) {
        const YAML::Node c = u["count"];
        if (!c.IsScalar())
          throw ConfigError(path, key + ".count", "must be a whole number from 0 to 4294967295, not " + yaml_kind(c));
        s.count_override = parse_count(c.Scalar(), path, key + ".count");  // (yaml-cpp also took 0x10 and "+5")
      }
      if (u["clock"]) {
        s.clock = yaml_string(u["clock"], path, key + ".clock");
        s.clock_given = true;
        // It goes into the Yosys and OpenSTA scripts: a plain Verilog identifier only.
        if (!is_verilog_identifier(s.clock))
          throw ConfigError(path, key + ".clock", "'" + s.clock + "' is not a Verilog port name");
      }
      where = key + ".files";
      if (!u["files"] || !u["files"].IsSequence() || u["files"].size() == 0)
        throw ConfigError(path, key + ".files", "missing or empty list");
      for (const auto& f : u["files"]) {
        fs::path p = yaml_string(f, path, key + ".files");
        if (p.is_relative()) p = base / p;
        p = fs::absolute(p).lexically_normal();  // (the scripts kept by --keep-work run from anywhere)
        if (!fs::exists(p)) throw ConfigError(path, key + ".files", "file not found: " + p.string());
        check_manifest_file(p.string(), path, key + ".files");
        s.files.push_back(p.string());
      }
      if (u["parameters"]) {
        if (!u["parameters"].IsMap())
          throw ConfigError(path, key + ".parameters", "must be a map, not " + yaml_kind(u["parameters"]));
        for (const auto& kv : u["parameters"]) {
          const std::string pk = yaml_string(kv.first, path, key + ".parameters");
          const std::string pv = yaml_string(kv.second, path, key + ".parameters." + pk);
          check_parameter(pk, pv, path, key + ".parameters." + pk);
          if (!s.parameters.emplace(pk, pv).second) throw ConfigError(path, key + ".parameters." + pk, "key given twice");
        }
      }
      out.push_back(std::move(s));
    }
    return out;
  } catch (const YAML::Exception& e) {
    throw ConfigError(path, where, std::string("bad value: ") + e.what());
  }
}

std::vector<UnitSpec> default_units(const std::string& rtl_dir) {
  if (!fs::is_directory(rtl_dir)) throw InputError("RTL directory not found: " + rtl_dir);
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(rtl_dir)) {
    const auto ext = e.path().extension();
    if (e.is_regular_file() && (ext == ".v" || ext == ".sv")) {
      const std::string f = fs::absolute(e.path()).lexically_normal().string();
      check_script_path(f, "--rtl-dir file", true);  // (a file name with a newline and '!cmd' ran the command)
      files.push_back(f);
    }
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) throw InputError("no Verilog (*.v, *.sv) in " + rtl_dir + " and no manifest.yaml there");
  UnitSpec mon{"sparsity_monitor", "sparsity_monitor", files, UnitRole::kMonitor, {}, "clk", 0};
  UnitSpec eng{"compaction_engine", "compaction_engine", files, UnitRole::kEngine, {}, "clk", 0};
  return {mon, eng};
}

UnitResult run_unit(const UnitSpec& unit, const ToolConfig& tools, const std::string& work_dir) {
  UnitResult r;
  r.spec = unit;
  const fs::path wd = fs::path(work_dir) / unit.name;
  // The tools' TMPDIR (Yosys's yosys-abc-* directories): inside the work directory, so that they go with it
  // when an interrupt or an error removes it.
  // Paths go into the scripts as words (Yosys) or in braces (OpenSTA).
  check_script_path(wd.string(), "scratch directory (from TMPDIR)", false);
  check_script_path(tools.liberty, "--liberty", false);
  const std::string tmpdir = (wd / "tmp").string();
  fs::create_directories(tmpdir);
  const std::string lib = yosys_quote(tools.liberty);
  // --- Yosys. Run 1: memories recorded, SRAM-eligible ones as black-box macros -> logic area. If there are
  // none, this run is already the whole design. Run 2 (only then, and only up to ff_memory_limit_bits of
  // SRAM-eligible memory): every memory as flip-flops -> the synthesised area and the netlist timed.
  // A clock named in the manifest that is not among the top's inputs (the list `hierarchy` left in inputs.txt).
  auto check_clock_port = [&] {
    const std::string p = (wd / "inputs.txt").string();
    if (!unit.clock_given || !fs::exists(p)) return;
    std::istringstream in(read_file(p));
    std::string line, inputs;
    std::size_t n = 0;
    const std::string prefix = unit.top + "/";
    for (std::string l; std::getline(in, l);) {
      if (l.rfind(prefix, 0) != 0) continue;
      const std::string port = l.substr(prefix.size());
      if (port == unit.clock) return;
      if (++n <= 8) inputs += (inputs.empty() ? "" : ", ") + port;
    }
    if (n > 8) inputs += ", ...";
    throw InputError("unit '" + unit.name + "': clock '" + unit.clock + "' is not an input port of " + unit.top +
                     " (inputs: " + (inputs.empty() ? "none" : inputs) + ")");
  };
  auto run_yosys = [&](const std::string& script_text, const std::string& what) {
    const std::string script = (wd / (what + ".ys")).string();
    write_file_atomic(script, script_text);
    r.yosys_script += script_text;
    const std::string full = (wd / (what + ".full.log")).string(), out = (wd / (what + ".log")).string();
    if (run_tool({tools.yosys, "-q", "-l", full, "-s", script}, out, tmpdir) != 0) {
      check_clock_port();
      throw InputError("Yosys failed on unit '" + unit.name + "' (top " + unit.top +
                       "): " + first_error(read_if_exists(full) + read_if_exists(out)));
    }
  };
  write_file_atomic((wd / "sram_macro.v").string(), kSramBlackbox);
  run_yosys(synth_script(unit, tools, lib, wd, true), "logic");
  check_clock_port();
  r.memories = parse_yosys_memories(read_if_exists((wd / "memories.txt").string()), unit.name + " memories.txt");
  // Single-port arrays: a one-read one-write SRAM-eligible memory whose ports share address and clock in the
  // port check's dump (names as in memories.txt: the same front end).
  if (std::any_of(r.memories.begin(), r.memories.end(),
                  [](const MemoryInfo& m) { return m.sram() && m.read_ports == 1 && m.write_ports == 1; })) {
    run_yosys(ports_script(unit, wd), "ports");
    const auto folded = parse_yosys_memories(read_file((wd / "ports.txt").string()), unit.name + " ports.txt");
    for (auto& m : r.memories) {
      const auto f = std::find_if(folded.begin(), folded.end(), [&](const MemoryInfo& x) { return x.name == m.name; });
      m.shared_address = f != folded.end() && f->shared_address;
    }
  }
  const YosysStat logic_stat =
      parse_yosys_stat(read_file((wd / "logic_stat.txt").string()), unit.name + " logic_stat.txt", unit.top);
  // Yosys prints no chip area when no cell has one: a unit that is nothing but SRAM macros has no logic (0 um^2).
  const bool only_macros = !logic_stat.cell_counts.empty() &&
                           std::all_of(logic_stat.cell_counts.begin(), logic_stat.cell_counts.end(),
                                       [](const auto& c) { return c.first == "spartan_sram_macro"; });
  if (!logic_stat.has_area && !only_macros)
    throw InputError("Yosys reported no chip area for '" + unit.name + "' (liberty without areas?)");
  // A cell Yosys could not map to the liberty (e.g. a latch, which this flow's dfflibmap does not map) has no
  // area in `stat` and is a black box in STA: refuse rather than report a silently smaller, partly untimed unit
  // (reliability finding 77). The SRAM macros are the one intended black box.
  auto check_mapped = [&](const YosysStat& st, const char* run) {
    for (const auto& [cell, n] : st.cell_counts)
      if (!cell.empty() && cell[0] == '$')
        throw InputError("unit '" + unit.name + "' (top " + unit.top + "): " + std::to_string(n) + " cell(s) of type " +
                         cell + " left unmapped by the " + run + " synthesis (no liberty cell: area and timing would miss them)");
  };
  check_mapped(logic_stat, "logic");
  r.logic_um2 = logic_stat.chip_area_um2;
  std::uint64_t sram_bits = 0;
  for (const auto& m : r.memories)
    if (m.sram()) sram_bits += m.bits();
  std::string netlist_path = (wd / "logic_netlist.v").string();
  r.stat = logic_stat;
  r.ff_synthesised = sram_bits == 0 || sram_bits <= tools.ff_memory_limit_bits;
  r.timed_with_macros = sram_bits > 0 && !r.ff_synthesised;
  if (only_macros && r.timed_with_macros)
    throw InputError("unit '" + unit.name + "' (top " + unit.top + ") is nothing but SRAM-eligible memory (" +
                     std::to_string(sram_bits) + " bits): with it as black-box macros there is no path to time; " +
                     "--ff-memory-limit-bits " + std::to_string(sram_bits) + " synthesises it as flip-flops");
  if (sram_bits > 0 && r.ff_synthesised) {
    run_yosys(synth_script(unit, tools, lib, wd, false), "ff");
    r.stat = parse_yosys_stat(read_file((wd / "ff_stat.txt").string()), unit.name + " ff_stat.txt", unit.top);
    check_mapped(r.stat, "flip-flop");
    netlist_path = (wd / "ff_netlist.v").string();
  }
  r.netlist = read_file(netlist_path);
  // --- OpenSTA: worst path overall and worst register-to-register path.
  std::ostringstream tcl;
  tcl << "read_liberty {" << tools.liberty << "}\n"
      << "read_verilog {" << netlist_path << "}\n"
      << "link_design " << unit.top << "\n"
      << "if {[llength [get_ports -quiet " << unit.clock << "]] > 0} {\n"
      << "  create_clock -name clk -period " << tools.clock_ns << " [get_ports " << unit.clock << "]\n"
      << "  set spartan_inputs [delete_from_list [all_inputs] [get_ports " << unit.clock << "]]\n"
      << "} else {\n  create_clock -name clk -period " << tools.clock_ns << "\n  set spartan_inputs [all_inputs]\n}\n"
      << "set_input_delay 0 -clock clk $spartan_inputs\nset_output_delay 0 -clock clk [all_outputs]\n"
      << "puts \"@@SPARTAN all\"\nreport_checks -path_delay max -digits 4\n"
      << "puts \"@@SPARTAN reg2reg\"\n"
      << "if {[llength [all_registers]] > 0} {\n"
      << "  report_checks -path_delay max -from [all_registers -clock_pins] -to [all_registers -data_pins] -digits 4\n"
      << "}\nputs \"@@SPARTAN end\"\n";
  r.sta_script = tcl.str();
  write_file_atomic((wd / "sta.tcl").string(), r.sta_script);
  const std::string slog = (wd / "sta.log").string();
  const int src = run_tool({tools.sta, "-no_init", "-no_splash", "-exit", (wd / "sta.tcl").string()}, slog, tmpdir);
  const std::string sta_out = read_if_exists(slog);
  const auto p_all = sta_out.find("@@SPARTAN all"), p_r2r = sta_out.find("@@SPARTAN reg2reg"),
             p_end = sta_out.find("@@SPARTAN end");
  if (src != 0 || p_all == std::string::npos || p_r2r == std::string::npos || p_end == std::string::npos ||
      sta_out.find("\nError") != std::string::npos || sta_out.rfind("Error", 0) == 0)
    throw InputError("OpenSTA failed on unit '" + unit.name + "': " + first_error(sta_out));
  const auto all = parse_sta_paths(sta_out.substr(p_all, p_r2r - p_all), unit.name + " sta.log");
  const auto r2r = parse_sta_paths(sta_out.substr(p_r2r, p_end - p_r2r), unit.name + " sta.log");
  if (all.empty()) throw InputError("OpenSTA found no timing path in unit '" + unit.name + "' (no ports or logic?)");
  r.worst = all.front();
  r.has_reg2reg = !r2r.empty();
  if (r.has_reg2reg) r.reg2reg = r2r.front();
  r.critical_path_ns = tools.clock_ns - r.worst.slack_ns;
  if (!(r.critical_path_ns > 0.0)) throw InputError("OpenSTA reported a non-positive critical path for '" + unit.name + "'");
  r.fmax_mhz = 1000.0 / r.critical_path_ns;
  return r;
}

}  // namespace spartan::area
