// Sub-commands of spartan-sdnn. Each takes the arguments after the sub-command name and returns the exit code.
#pragma once
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace spartan::sdnn::cli {

/// Every file of a weights directory that could be the layer file of layers 1..layers (`*-l{k}.mtx[.gz]` or
/// `.tsv[.gz]`, find_layer_file's rule) as (option, path) inputs for spartan::check_outputs_not_inputs. One
/// directory scan (Graph Challenge directories hold up to 1920 layers); loading reports missing or ambiguous ones.
inline std::vector<std::pair<std::string, std::string>> weight_inputs(const std::string& dir, int layers) {
  std::vector<std::pair<std::string, std::string>> in;
  std::error_code ec;
  if (dir.empty() || !std::filesystem::is_directory(dir, ec)) return in;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (name.size() > 3 && name.compare(name.size() - 3, 3, ".gz") == 0) name.resize(name.size() - 3);
    if (name.size() < 4 || (name.compare(name.size() - 4, 4, ".mtx") != 0 && name.compare(name.size() - 4, 4, ".tsv") != 0))
      continue;
    name.resize(name.size() - 4);
    const std::size_t dash = name.rfind("-l");
    if (dash == std::string::npos || dash + 2 >= name.size() || name.size() - dash - 2 > 9 ||
        name.find_first_not_of("0123456789", dash + 2) != std::string::npos)
      continue;
    const long k = std::stol(name.substr(dash + 2));
    if (k >= 1 && k <= layers) in.emplace_back("--weights", e.path().string());
  }
  return in;
}
int cmd_infer(const std::vector<std::string>& args);
int cmd_train(const std::vector<std::string>& args);
int cmd_partition(const std::vector<std::string>& args);
int cmd_generate(const std::vector<std::string>& args);
}  // namespace spartan::sdnn::cli
