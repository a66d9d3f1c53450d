// spartan-sdnn: sparse DNN inference, training, partitioning and network generation.
#include <cstdio>
#include <string>
#include <vector>

#include "commands.h"
#include "spartan/common/cli.h"
#include "spartan/common/error.h"

int main(int argc, char** argv) {
  return spartan::run_cli("spartan-sdnn", [&]() -> int {
    const char* usage =
        "usage: spartan-sdnn <command> [options]\n"
        "commands:\n"
        "  infer      Graph Challenge inference (single process, or under mpirun with --partition)\n"
        "  train      SGD on the fixed sparsity pattern (RadiX-Net body + softmax head)\n"
        "  partition  partition a network's neurons over P ranks (block, random, hypergraph, graph)\n"
        "  generate   write a RadiX-Net-style sparse network\n"
        "run 'spartan-sdnn <command> --help' for the options of a command\n";
    // One line, as every other bad input (the usage is on --help).
    if (argc < 2) throw spartan::InputError("missing command (infer, train, partition or generate; see --help)");
    const std::string cmd = argv[1];
    std::vector<std::string> args(argv + 2, argv + argc);
    if (cmd == "infer") return spartan::sdnn::cli::cmd_infer(args);
    if (cmd == "train") return spartan::sdnn::cli::cmd_train(args);
    if (cmd == "partition") return spartan::sdnn::cli::cmd_partition(args);
    if (cmd == "generate") return spartan::sdnn::cli::cmd_generate(args);
    if (cmd == "--help" || cmd == "-h") {
      std::fputs(usage, stdout);
      return 0;
    }
    throw spartan::InputError("unknown command '" + cmd + "' (expected infer, train, partition or generate)");
  });
}

// Sanitizer builds: OpenMPI and Zoltan keep internal allocations until process exit; suppress leak reports
// from those libraries only (no effect in normal builds).
extern "C" const char* __lsan_default_suppressions() { return "leak:libmpi\nleak:libopen-pal\nleak:libopen-rte\nleak:libpmix\nleak:libhwloc\nleak:libtrilinos_zoltan\n"; }
