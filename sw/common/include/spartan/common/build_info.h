// Provenance of a build, recorded in the tools' JSON outputs (key "build": spartan-train's --out-json,
// spartan-sim run's stats.json, spartan-sim microbench's --out, spartan-area's area.json), so that a result
// names the code that produced it. Generated at build time by cmake/build_info.cmake.
#pragma once

namespace spartan {

struct BuildInfo {
  /// `git describe --always --dirty --abbrev=12` of the source tree when the binary was built: the commit
  /// hash, with "-dirty" when tracked files differed from it; "unknown" outside a git checkout.
  const char* commit;
  const char* build_type;  ///< CMAKE_BUILD_TYPE (Release, Debug, ...)
  const char* compiler;    ///< C++ compiler id and version
};

/// This binary's build information (never null fields).
const BuildInfo& build_info();

/// build_info() as a JSON object {"commit", "build_type", "compiler"}; templated on the JSON type so that
/// spartan_common needs no JSON library (callers use nlohmann::json).
template <class Json>
Json build_info_json() {
  const BuildInfo& b = build_info();
  Json j;
  j["commit"] = b.commit;
  j["build_type"] = b.build_type;
  j["compiler"] = b.compiler;
  return j;
}

}  // namespace spartan
