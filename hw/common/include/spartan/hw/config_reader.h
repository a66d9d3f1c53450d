// One strict YAML reader for every hardware config. A ConfigMap is a view of one YAML mapping that
// remembers which keys were read; finish() rejects any key nobody asked for, so a misspelt key is an
// error and never a silently-ignored default. Errors are spartan::ConfigError(file, "a.b.key", what).
#pragma once
#include <cstdint>
#include <set>
#include <string>

#include <yaml-cpp/yaml.h>

#include "spartan/common/error.h"

namespace spartan::hw {

class ConfigMap {
 public:
  /// `node` must be a mapping (else ConfigError naming `path`). `path` is the dotted key prefix
  /// ("" for the document root); `file` is named in every error.
  ConfigMap(const YAML::Node& node, std::string file, std::string path);

  bool has(const std::string& key) const;
  /// Required scalar: missing -> ConfigError "missing required key"; wrong type -> "expected ...".
  std::uint64_t u64(const std::string& key);
  std::uint64_t u64(const std::string& key, std::uint64_t def);
  std::uint32_t u32(const std::string& key) { return narrow(key, u64(key)); }
  std::uint32_t u32(const std::string& key, std::uint32_t def) { return narrow(key, u64(key, def)); }
  double f64(const std::string& key);
  double f64(const std::string& key, double def);
  std::string str(const std::string& key);
  std::string str(const std::string& key, const std::string& def);
  /// Required nested mapping.
  ConfigMap child(const std::string& key);

  /// Throws ConfigError for the first key of this mapping that was never read.
  void finish() const;

  /// Dotted name of `key` inside this mapping, for error messages.
  std::string key_path(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  const std::string& file() const { return file_; }
  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw spartan::ConfigError(file_, key_path(key), what);
  }

 private:
  YAML::Node get(const std::string& key, bool required);
  std::uint32_t narrow(const std::string& key, std::uint64_t v) const;
  YAML::Node node_;
  std::string file_, path_;
  std::set<std::string> used_;
};

/// Parses YAML text (ConfigError with the line on a syntax error). `file` labels errors.
YAML::Node parse_yaml(const std::string& text, const std::string& file);

}  // namespace spartan::hw
