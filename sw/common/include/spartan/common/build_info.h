// Provenance of a build, recorded in the tools' outputs (key "build": spartan-train's --out-json, spartan-sim
// run's stats.json and rtl_cycles.json, spartan-sim microbench's --out and --stats, spartan-area's area.json,
// bench_hw_gpu's JSON; the commit in the .sptrace `writer` metadata of spartan-train and spartan-sdnn), so that
// a result names the code that produced it. Generated at build time by cmake/build_info.cmake.
#pragma once

namespace spartan {

struct BuildInfo {
  /// The source tree's HEAD when the binary was built, as 12 hex digits (`git rev-parse --short=12`, more if
  /// ambiguous), followed by "-dirty-" and the first 8 hex digits of the work tree's git tree object when the
  /// work tree (tracked files and untracked ones not ignored) differed from HEAD, so that two different
  /// uncommitted trees get different strings; "unknown" when the source tree is not the top of a git checkout
  /// git can read, or has no commit.
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
