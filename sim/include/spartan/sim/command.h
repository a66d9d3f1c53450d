// Sub-command registry of spartan-sim. Each sub-command lives in its own sim/src/cmd_*.cpp and
// registers itself with a static CommandRegistration, so adding one touches no shared file.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace spartan::sim {

struct Command {
  std::string summary;                                        ///< one line for `spartan-sim --help`
  std::function<int(const std::vector<std::string>&)> main;  ///< gets the arguments after the name
};

std::map<std::string, Command>& command_registry();

struct CommandRegistration {
  CommandRegistration(const std::string& name, Command cmd) { command_registry()[name] = std::move(cmd); }
};

}  // namespace spartan::sim
