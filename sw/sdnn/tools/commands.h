// Sub-commands of spartan-sdnn. Each takes the arguments after the sub-command name and returns the exit code.
#pragma once
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "spartan/sdnn/sparse.h"

namespace spartan::sdnn::cli {

/// The layer files 1..layers of a weights directory as (option, path) inputs for
/// spartan::check_outputs_not_inputs; layers whose file cannot be resolved are left out (loading reports them).
inline std::vector<std::pair<std::string, std::string>> weight_inputs(const std::string& dir, int layers) {
  std::vector<std::pair<std::string, std::string>> in;
  std::error_code ec;
  if (dir.empty() || !std::filesystem::is_directory(dir, ec)) return in;
  for (int k = 1; k <= layers && k <= 1000000; ++k) {
    try {
      in.emplace_back("--weights", find_layer_file(dir, k));
    } catch (const std::exception&) {
      break;
    }
  }
  return in;
}
int cmd_infer(const std::vector<std::string>& args);
int cmd_train(const std::vector<std::string>& args);
int cmd_partition(const std::vector<std::string>& args);
int cmd_generate(const std::vector<std::string>& args);
}  // namespace spartan::sdnn::cli
