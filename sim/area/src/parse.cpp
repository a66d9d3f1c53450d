// Parsers for Yosys `stat`/`dump` and OpenSTA `report_checks` text (see parse.h).
#include "spartan/area/parse.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <regex>
#include <sstream>

#include "spartan/common/error.h"

namespace spartan::area {
namespace {

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  return lines;
}

std::string strip_backslash(std::string s) {
  if (!s.empty() && s.front() == '\\') s.erase(0, 1);
  return s;
}

double to_double(const std::string& s, const std::string& report, const std::string& field, std::size_t line) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0') throw FormatError(report, field, line, "not a number: '" + s + "'", "line");
  return v;
}

std::uint64_t to_u64(const std::string& s, const std::string& report, const std::string& field, std::size_t line) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (end == s.c_str() || *end != '\0') throw FormatError(report, field, line, "not an integer: '" + s + "'", "line");
  return v;
}

}  // namespace

bool MemoryInfo::sram() const noexcept {
  return write_ports <= 1 && read_ports <= 2 && depth_words >= kSramMinDepthWords;
}

YosysStat parse_yosys_stat(const std::string& text, const std::string& report_name, const std::string& top) {
  static const std::regex header(R"(^=== (.+) ===\s*$)");
  static const std::regex counter(R"(^\s+Number of ([a-z ]+):\s+(\d+)\s*$)");
  static const std::regex cell_line(R"(^\s+(\S+)\s+(\d+)\s*$)");
  static const std::regex area_line(R"(^\s+Chip area for (?:top )?module '(.+)':\s+(\S+)\s*$)");
  const auto lines = split_lines(text);
  std::vector<YosysStat> blocks;
  std::vector<bool> got_cells;
  bool in_cells = false, in_hierarchy = false;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    std::smatch m;
    if (std::regex_match(l, m, header)) {
      in_cells = false;
      in_hierarchy = m[1] == "design hierarchy";
      if (!in_hierarchy) {
        blocks.push_back({});
        blocks.back().module = strip_backslash(m[1]);
        got_cells.push_back(false);
      }
      continue;
    }
    if (in_hierarchy) {
      // "Chip area for top module '\x': A" overrides the top block's own (submodules excluded) area.
      if (std::regex_match(l, m, area_line)) {
        const std::string mod = strip_backslash(m[1]);
        for (auto& b : blocks)
          if (b.module == mod) {
            b.chip_area_um2 = to_double(m[2], report_name, "chip area", i + 1);
            b.has_area = true;
          }
      }
      continue;
    }
    if (blocks.empty()) continue;
    YosysStat& b = blocks.back();
    if (std::regex_match(l, m, counter)) {
      in_cells = false;
      const std::string what = m[1];
      const std::uint64_t v = to_u64(m[2], report_name, what, i + 1);
      if (what == "cells") {
        b.cells = v;
        got_cells.back() = true;
        in_cells = true;
      } else if (what == "memories") {
        b.memories = v;
      } else if (what == "memory bits") {
        b.memory_bits = v;
      }
      continue;
    }
    if (std::regex_match(l, m, area_line)) {
      in_cells = false;
      b.chip_area_um2 = to_double(m[2], report_name, "chip area", i + 1);
      b.has_area = true;
      continue;
    }
    if (in_cells) {
      if (std::regex_match(l, m, cell_line)) {
        b.cell_counts[m[1]] += to_u64(m[2], report_name, "cell count", i + 1);
      } else {
        in_cells = false;
      }
    }
  }
  if (blocks.empty()) throw FormatError(report_name, "stat", lines.size(), "no '=== module ===' block in Yosys stat output", "line");
  std::size_t pick = blocks.size() - 1;
  if (!top.empty()) {
    bool found = false;
    for (std::size_t k = 0; k < blocks.size(); ++k)
      if (blocks[k].module == top) {
        pick = k;
        found = true;
      }
    if (!found) throw FormatError(report_name, "stat", lines.size(), "no statistics for module '" + top + "'", "line");
  }
  if (!got_cells[pick])
    throw FormatError(report_name, blocks[pick].module, lines.size(), "no 'Number of cells' line", "line");
  return blocks[pick];
}

std::vector<MemoryInfo> parse_yosys_memories(const std::string& text, const std::string& report_name) {
  static const std::regex cell_re(R"(^\s*cell \$mem(?:_v2)? (\S+)\s*$)");
  static const std::regex param_re(R"(^\s*parameter \\(\w+) (.+?)\s*$)");
  static const std::regex end_re(R"(^\s*end\s*$)");
  static const std::regex port_re(R"(^\s*connect \\(RD|WR)_(ADDR|CLK) (.+?)\s*$)");
  const auto lines = split_lines(text);
  std::vector<MemoryInfo> out;
  bool in_cell = false, has_w = false, has_s = false;
  std::string rd_addr, wr_addr, rd_clk, wr_clk;
  std::size_t cell_line = 0;
  auto finish = [&]() {
    if (!has_w || !has_s)
      throw FormatError(report_name, out.back().name, cell_line, "$mem_v2 cell without WIDTH/SIZE parameters", "line");
    MemoryInfo& mem = out.back();
    mem.shared_address = mem.read_ports == 1 && mem.write_ports == 1 && !rd_addr.empty() && rd_addr == wr_addr &&
                         !rd_clk.empty() && rd_clk == wr_clk;
  };
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    if (std::regex_match(lines[i], m, cell_re)) {
      if (in_cell) finish();
      out.push_back({});
      out.back().name = strip_backslash(m[1]);
      in_cell = true;
      has_w = has_s = false;
      rd_addr.clear();
      wr_addr.clear();
      rd_clk.clear();
      wr_clk.clear();
      cell_line = i + 1;
      continue;
    }
    if (!in_cell) continue;
    if (std::regex_match(lines[i], m, end_re)) {
      finish();
      in_cell = false;
      continue;
    }
    if (std::regex_match(lines[i], m, port_re)) {
      const bool rd = m[1] == "RD", addr = m[2] == "ADDR";
      (addr ? (rd ? rd_addr : wr_addr) : (rd ? rd_clk : wr_clk)) = m[3];
      continue;
    }
    if (!std::regex_match(lines[i], m, param_re)) continue;
    const std::string key = m[1], val = m[2];
    MemoryInfo& mem = out.back();
    if (key == "WIDTH") {
      mem.width_bits = to_u64(val, report_name, "WIDTH", i + 1);
      has_w = true;
    } else if (key == "SIZE") {
      mem.depth_words = to_u64(val, report_name, "SIZE", i + 1);
      has_s = true;
    } else if (key == "ABITS") {
      mem.abits = static_cast<unsigned>(to_u64(val, report_name, "ABITS", i + 1));
    } else if (key == "RD_PORTS") {
      mem.read_ports = static_cast<unsigned>(to_u64(val, report_name, "RD_PORTS", i + 1));
    } else if (key == "WR_PORTS") {
      mem.write_ports = static_cast<unsigned>(to_u64(val, report_name, "WR_PORTS", i + 1));
    } else if (key == "RD_CLK_ENABLE") {
      // RTLIL constant "<n>'<bits>": any 1 bit means a registered read port.
      const auto q = val.find('\'');
      mem.sync_read = q != std::string::npos && val.find('1', q) != std::string::npos;
    }
  }
  if (in_cell) finish();
  return out;
}

std::vector<StaPath> parse_sta_paths(const std::string& text, const std::string& report_name) {
  static const std::regex start_re(R"(^Startpoint: (\S+).*$)");
  static const std::regex end_re(R"(^Endpoint: (\S+).*$)");
  static const std::regex group_re(R"(^Path Group: (\S+).*$)");
  static const std::regex arrival_re(R"(^\s+(-?[0-9.]+)\s+data arrival time\s*$)");
  static const std::regex required_re(R"(^\s+(-?[0-9.]+)\s+data required time\s*$)");
  static const std::regex slack_re(R"(^\s+(-?[0-9.]+)\s+slack \((MET|VIOLATED)\)\s*$)");
  static const std::regex pin_re(R"(^\s+-?[0-9.]+\s+-?[0-9.]+\s+[v^]\s+(\S+)/(\S+) \(.*$)");
  const auto lines = split_lines(text);
  std::vector<StaPath> out;
  bool in_path = false, have_arrival = false, have_required = false, arrival_section = false;
  std::size_t start_line = 0;
  std::vector<std::pair<std::string, std::string>> pins;
  auto close_missing = [&](std::size_t at) {
    throw FormatError(report_name, "path from " + out.back().startpoint, at,
                      "timing path without data arrival/required time or slack", "line");
  };
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    std::smatch m;
    if (std::regex_match(l, m, start_re)) {
      if (in_path) close_missing(start_line);
      out.push_back({});
      out.back().startpoint = m[1];
      in_path = arrival_section = true;
      have_arrival = have_required = false;
      pins.clear();
      start_line = i + 1;
      continue;
    }
    if (!in_path) continue;
    StaPath& p = out.back();
    if (std::regex_match(l, m, end_re)) {
      p.endpoint = m[1];
    } else if (std::regex_match(l, m, group_re)) {
      p.path_group = m[1];
    } else if (std::regex_match(l, m, arrival_re)) {
      if (arrival_section) {
        p.arrival_ns = to_double(m[1], report_name, "data arrival time", i + 1);
        have_arrival = true;
        arrival_section = false;
      }
    } else if (std::regex_match(l, m, required_re)) {
      p.required_ns = to_double(m[1], report_name, "data required time", i + 1);
      have_required = true;
    } else if (std::regex_match(l, m, slack_re)) {
      p.slack_ns = to_double(m[1], report_name, "slack", i + 1);
      p.met = m[2] == "MET";
      if (!have_arrival || !have_required) close_missing(i + 1);
      // Logic depth: consecutive distinct instances on the data path, without the endpoint pin.
      if (!pins.empty() && (pins.back().first == p.endpoint || pins.back().first + "/" + pins.back().second == p.endpoint))
        pins.pop_back();
      std::string last;
      for (const auto& pin : pins)
        if (pin.first != last) {
          ++p.stages;
          last = pin.first;
        }
      in_path = false;
    } else if (arrival_section && std::regex_match(l, m, pin_re)) {
      pins.emplace_back(m[1], m[2]);
    }
  }
  if (in_path) close_missing(start_line);
  return out;
}

namespace {
bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// find_nand2_cell's name rule (parse.h).
bool is_nand2_name(const std::string& name) {
  std::string n;
  for (char c : name) n += char(std::tolower(static_cast<unsigned char>(c)));
  for (std::size_t p = n.find("nand2"); p != std::string::npos; p = n.find("nand2", p + 1)) {
    if (p != 0 && n[p - 1] != '_') continue;
    const std::size_t q = p + 5;
    if (q == n.size() || n[q] == 'x' || n[q] == '_' || std::isdigit(static_cast<unsigned char>(n[q]))) return true;
  }
  return false;
}
}  // namespace

std::optional<LibertyCell> find_nand2_cell(const std::string& lib) {
  std::optional<LibertyCell> best;
  const std::size_t n = lib.size();
  std::size_t i = 0;
  int depth = 0;
  int cell_depth = -1;  // the brace depth inside the current cell group (-1: not in one)
  std::string cell;
  // Past a quoted string starting at i (a backslash escapes the next character, as in `"A\"B"`).
  auto skip_string = [&] {
    for (++i; i < n && lib[i] != '"'; ++i)
      if (lib[i] == '\\') ++i;
    if (i < n) ++i;
  };
  // Past blanks, line continuations and /* */ comments (which may sit between any two tokens).
  auto skip_space = [&] {
    for (;;) {
      while (i < n && (std::isspace(static_cast<unsigned char>(lib[i])) || lib[i] == '\\')) ++i;
      if (i + 1 < n && lib[i] == '/' && lib[i + 1] == '*') {
        const std::size_t e = lib.find("*/", i + 2);
        i = e == std::string::npos ? n : e + 2;
        continue;
      }
      return;
    }
  };
  while (i < n) {
    const char c = lib[i];
    if (c == '/' && i + 1 < n && lib[i + 1] == '*') {
      skip_space();
    } else if (c == '"') {  // quoted string (may hold braces)
      skip_string();
    } else if (c == '{') {
      ++depth, ++i;
    } else if (c == '}') {
      if (depth == cell_depth) cell_depth = -1;
      --depth, ++i;
    } else if (is_ident_char(c)) {
      const std::size_t s = i;
      while (i < n && is_ident_char(lib[i])) ++i;
      const std::string word = lib.substr(s, i - s);
      if (word == "cell" && cell_depth < 0) {
        skip_space();
        if (i >= n || lib[i] != '(') continue;
        ++i;
        skip_space();
        std::string name;
        if (i < n && lib[i] == '"') {
          const std::size_t q = i;
          skip_string();
          name = lib.substr(q + 1, i > q + 1 ? i - q - 2 : 0);
        } else {
          while (i < n && !std::isspace(static_cast<unsigned char>(lib[i])) && lib[i] != ')' && lib[i] != '/') name += lib[i++];
        }
        skip_space();
        if (i >= n || lib[i] != ')') continue;
        ++i;
        skip_space();
        if (i < n && lib[i] == '{') cell = name, cell_depth = depth + 1;  // the brace itself is counted above
      } else if (word == "area" && depth == cell_depth && is_nand2_name(cell)) {
        skip_space();
        if (i >= n || lib[i] != ':') continue;
        ++i;
        skip_space();
        const bool quoted = i < n && lib[i] == '"';  // area : "24"; (accepted by Yosys and OpenSTA)
        if (quoted) ++i;
        const char* start = lib.c_str() + i;
        char* end = nullptr;
        const double area = std::strtod(start, &end);
        if (end == start) continue;
        i += std::size_t(end - start);
        if (quoted && i < n && lib[i] == '"') ++i;
        if (std::isfinite(area) && area > 0.0 && (!best || area < best->area)) best = LibertyCell{cell, area};
      }
    } else {
      ++i;
    }
  }
  return best;
}

bool liberty_has_buffer(const std::string& lib, const std::string& cell, const std::string& in, const std::string& out) {
  // A `cell (` group header at p (the word itself, not e.g. cell_footprint): the header's end, or npos.
  auto cell_header = [&](std::size_t p) {
    if (p > 0 && is_ident_char(lib[p - 1])) return std::string::npos;
    std::size_t q = p + 4;
    while (q < lib.size() && std::isspace(static_cast<unsigned char>(lib[q]))) ++q;
    return q < lib.size() && lib[q] == '(' ? q + 1 : std::string::npos;
  };
  // Names are plain identifiers here (--buffer-cell is checked first), so they need no regex escaping; the
  // regexes run on one cell group (a few KB), not on the library (std::regex recurses per character).
  const std::regex name_re("^\\s*\"?" + cell + "\"?\\s*\\)");
  const std::regex out_re("\\bpin\\s*\\(\\s*\"?" + out + "\"?\\s*\\)");
  const std::regex in_re("\\bpin\\s*\\(\\s*\"?" + in + "\"?\\s*\\)");
  const std::regex function_re("\\bfunction\\s*:\\s*\"\\s*\\(?\\s*" + in + "\\s*\\)?\\s*\"");
  static const std::regex next_pin(R"(\bpin\s*\()");
  for (std::size_t p = lib.find("cell"); p != std::string::npos; p = lib.find("cell", p + 4)) {
    const std::size_t h = cell_header(p);
    if (h == std::string::npos || !std::regex_search(lib.substr(h, 256), name_re)) continue;
    std::size_t e = lib.find("cell", h);
    while (e != std::string::npos && cell_header(e) == std::string::npos) e = lib.find("cell", e + 4);
    const std::string group = lib.substr(h, e == std::string::npos ? std::string::npos : e - h);
    std::smatch m;
    if (!std::regex_search(group, in_re) || !std::regex_search(group, m, out_re)) return false;
    // The output pin's attributes: up to the next pin (its function may follow nested timing or power groups).
    const std::string rest = m.suffix().str();
    std::smatch n;
    const std::string pin = std::regex_search(rest, n, next_pin) ? rest.substr(0, std::size_t(n.position(0))) : rest;
    return std::regex_search(pin, function_re);
  }
  return false;
}

}  // namespace spartan::area
