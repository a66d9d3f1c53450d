// Sub-commands of spartan-sdnn. Each takes the arguments after the sub-command name and returns the exit code.
#pragma once
#include <string>
#include <vector>

namespace spartan::sdnn::cli {
int cmd_infer(const std::vector<std::string>& args);
int cmd_train(const std::vector<std::string>& args);
int cmd_partition(const std::vector<std::string>& args);
int cmd_generate(const std::vector<std::string>& args);
}  // namespace spartan::sdnn::cli
