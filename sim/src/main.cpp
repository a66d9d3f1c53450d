// spartan-sim: the co-simulation front end. Usage: spartan-sim <command> [options]; see --help.
#include <cstdio>
#include <string>
#include <vector>

#include "spartan/common/cli.h"
#include "spartan/common/error.h"
#include "spartan/sim/command.h"

namespace spartan::sim {
std::map<std::string, Command>& command_registry() {
  static std::map<std::string, Command> r;
  return r;
}
}  // namespace spartan::sim

int main(int argc, char** argv) {
  using namespace spartan::sim;
  return spartan::run_cli("spartan-sim", [&]() -> int {
    auto& reg = command_registry();
    // No command is bad input: one line on stderr and exit 2 (the usage goes with --help, on stdout, exit 0).
    if (argc < 2) throw spartan::InputError("no command given (spartan-sim --help lists them)");
    std::string cmd = argv[1];
    if (cmd == "--help" || cmd == "-h" || cmd == "help") {
      std::printf("usage: spartan-sim <command> [options]   (spartan-sim <command> --help for its options)\n\ncommands:\n");
      for (auto& [name, c] : reg) std::printf("  %-12s %s\n", name.c_str(), c.summary.c_str());
      return 0;
    }
    auto it = reg.find(cmd);
    if (it == reg.end()) throw spartan::InputError("unknown command '" + cmd + "' (see --help)");
    std::vector<std::string> args(argv + 2, argv + argc);
    return it->second.main(args);
  });
}
