// Sub-commands of spartan-sdnn. Each takes the arguments after the sub-command name and returns the exit code.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "spartan/sdnn/sparse.h"

namespace spartan::sdnn::cli {

/// Every file of a weights directory that loading layers 1..layers could read (layer_file_candidates, one
/// directory scan) as (option, path) inputs for spartan::check_outputs_not_inputs; loading reports missing or
/// ambiguous ones.
inline std::vector<std::pair<std::string, std::string>> weight_inputs(const std::string& dir, int layers) {
  std::vector<std::pair<std::string, std::string>> in;
  if (dir.empty()) return in;
  for (const auto& files : layer_file_candidates(dir, layers))
    for (const auto& f : files) in.emplace_back("--weights", f);
  return in;
}
int cmd_infer(const std::vector<std::string>& args);
int cmd_train(const std::vector<std::string>& args);
int cmd_partition(const std::vector<std::string>& args);
int cmd_generate(const std::vector<std::string>& args);
}  // namespace spartan::sdnn::cli
