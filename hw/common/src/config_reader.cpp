#include "spartan/hw/config_reader.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <algorithm>
#include <map>
#include <vector>
#include <string>

namespace spartan::hw {

ConfigMap::ConfigMap(const YAML::Node& node, std::string file, std::string path)
    : node_(node), file_(std::move(file)), path_(std::move(path)) {
  if (!node_.IsMap()) throw spartan::ConfigError(file_, path_.empty() ? "<document>" : path_, "expected a mapping");
  // yaml-cpp keeps a repeated key as a second pair in the map node while node_[key] returns the first one,
  // so `ways: 24` then `ways: 16` would silently keep 24: refuse any repeated key (issue 12).
  std::map<std::string, int> line_of;
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    if (!it->first.IsScalar()) fail("<key>", "mapping keys must be scalars");
    const std::string k = it->first.Scalar();
    const int line = it->first.Mark().line + 1;
    const auto [pos, fresh] = line_of.emplace(k, line);
    if (!fresh)
      fail(k, "duplicate key (line " + std::to_string(pos->second) + " and line " + std::to_string(line) + ")");
  }
}

bool ConfigMap::has(const std::string& key) const { return bool(node_[key]); }

namespace {
/// Levenshtein distance of two short key names, capped: only "is it a likely misspelling" matters.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}
}  // namespace

YAML::Node ConfigMap::get(const std::string& key, bool required) {
  YAML::Node n = node_[key];
  if (!n) {
    if (required) {
      // A misspelt required key would otherwise read as "missing" while the misspelling goes unmentioned:
      // name a key of this mapping that nobody has read and that looks like this one: a prefix either way, or
      // one edit away for long names. (Unread keys include valid ones read later, so no wider net: size_bytes
      // and line_bytes are two edits apart; CL and WL one.)
      for (auto it = node_.begin(); it != node_.end(); ++it) {
        const std::string k = it->first.Scalar();
        if (used_.count(k)) continue;
        const std::size_t shorter = std::min(k.size(), key.size());
        const bool prefix = shorter >= 4 && (key.rfind(k, 0) == 0 || k.rfind(key, 0) == 0);
        if (prefix || (shorter >= 8 && edit_distance(k, key) == 1))
          fail(key, "missing required key (the file has '" + key_path(k) + "': misspelt?)");
      }
      fail(key, "missing required key");
    }
    return n;
  }
  used_.insert(key);
  if (n.IsNull()) fail(key, "has no value");
  return n;
}

static std::string scalar_text(const ConfigMap& m, const std::string& key, const YAML::Node& n) {
  if (!n.IsScalar()) m.fail(key, "expected a scalar value");
  return n.Scalar();
}

static std::uint64_t to_u64(const ConfigMap& m, const std::string& key, const YAML::Node& n) {
  std::string s = scalar_text(m, key, n);
  if (s.empty() || s[0] == '-' || s[0] == '+') m.fail(key, "expected a non-negative integer, got '" + s + "'");
  errno = 0;
  char* end = nullptr;
  // Decimal, or hexadecimal with 0x. A leading 0 is refused rather than read as octal (strtoull base 0
  // would take `ways: 024` as 20).
  const bool hex = s.size() >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');  // "0x" alone: malformed below
  if (!hex && s.size() > 1 && s[0] == '0')
    m.fail(key, "'" + s + "': a leading zero is not allowed (write the decimal value; octal is not read)");
  unsigned long long v = std::strtoull(s.c_str(), &end, hex ? 16 : 10);
  if (errno != 0 || end == s.c_str() || *end != '\0') m.fail(key, "expected a non-negative integer, got '" + s + "'");
  return v;
}

static double to_f64(const ConfigMap& m, const std::string& key, const YAML::Node& n) {
  std::string s = scalar_text(m, key, n);
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || end == s.c_str() || *end != '\0' || !std::isfinite(v))
    m.fail(key, "expected a number, got '" + s + "'");
  return v;
}

std::uint32_t ConfigMap::narrow(const std::string& key, std::uint64_t v) const {
  if (v > std::numeric_limits<std::uint32_t>::max()) fail(key, "value " + std::to_string(v) + " is too large");
  return std::uint32_t(v);
}

std::uint64_t ConfigMap::u64(const std::string& key) { return to_u64(*this, key, get(key, true)); }
std::uint64_t ConfigMap::u64(const std::string& key, std::uint64_t def) {
  auto n = get(key, false);
  return n ? to_u64(*this, key, n) : def;
}
double ConfigMap::f64(const std::string& key) { return to_f64(*this, key, get(key, true)); }
double ConfigMap::f64(const std::string& key, double def) {
  auto n = get(key, false);
  return n ? to_f64(*this, key, n) : def;
}
std::string ConfigMap::str(const std::string& key) { return scalar_text(*this, key, get(key, true)); }
std::string ConfigMap::str(const std::string& key, const std::string& def) {
  auto n = get(key, false);
  return n ? scalar_text(*this, key, n) : def;
}
ConfigMap ConfigMap::child(const std::string& key) { return ConfigMap(get(key, true), file_, key_path(key)); }

void ConfigMap::finish() const {
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    std::string k = it->first.as<std::string>();
    if (!used_.count(k)) fail(k, "unknown key");
  }
}

YAML::Node parse_yaml(const std::string& text, const std::string& file) {
  try {
    return YAML::Load(text);
  } catch (const YAML::Exception& e) {
    // YAML forbids tabs in indentation, and yaml-cpp's message for one does not say so: name the first line
    // that indents with a tab.
    std::string hint;
    std::size_t line = 1;
    for (std::size_t i = 0; i < text.size(); ++line) {
      std::size_t j = i;
      while (j < text.size() && (text[j] == ' ' || text[j] == '\t')) ++j;
      if (text.find('\t', i) < j) {
        hint = " (line " + std::to_string(line) + " indents with a tab: YAML indents with spaces only)";
        break;
      }
      const std::size_t nl = text.find('\n', i);
      if (nl == std::string::npos) break;
      i = nl + 1;
    }
    throw spartan::ConfigError(file, "<yaml>", "line " + std::to_string(e.mark.line + 1) + ": " + e.msg + hint);
  }
}

}  // namespace spartan::hw
