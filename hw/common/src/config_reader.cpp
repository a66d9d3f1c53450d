#include "spartan/hw/config_reader.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
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

YAML::Node ConfigMap::get(const std::string& key, bool required) {
  YAML::Node n = node_[key];
  if (!n) {
    if (required) fail(key, "missing required key");
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
  unsigned long long v = std::strtoull(s.c_str(), &end, 0);
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
    throw spartan::ConfigError(file, "<yaml>", "line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
}

}  // namespace spartan::hw
