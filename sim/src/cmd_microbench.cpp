// spartan-sim microbench: calibration microbenchmarks of the GPU memory-hierarchy model
// (streaming read/write/copy and random-read bandwidth, pointer-chase latency, L2 footprint sweep). See docs/gpu-model.md.
#include <cstdio>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "spartan/common/atomic_file.h"
#include "spartan/common/build_info.h"
#include "spartan/common/cli_checks.h"
#include "spartan/common/error.h"
#include "spartan/hw/gpu/gpu_system.h"
#include "spartan/hw/gpu/microbench.h"
#include "spartan/sim/command.h"

namespace po = boost::program_options;

namespace {

int microbench_main(const std::vector<std::string>& args) {
  std::string gpu_name = "v100", out, stats_out, only;
  po::options_description desc("spartan-sim microbench [options]");
  desc.add_options()("help,h", "show this help")(
      "gpu", po::value(&gpu_name)->default_value("v100"), "GPU preset name (<name>.yaml in $SPARTAN_GPU_CONFIG_DIR, else in the source tree's sim/configs/gpu) or YAML path")(
      "out", po::value(&out), "write the report as JSON to this file (atomically)")(
      "stats", po::value(&stats_out), "write every component's statistics as JSON to this file")(
      "only", po::value(&only), "run only one group: stream (read, write, copy, random read), chase or sweep");
  po::variables_map vm;
  if (!spartan::parse_options_or_help(args, desc, vm)) return 0;
  spartan::hw::gpu::MicrobenchOptions opt;
  if (vm.count("only")) {  // `--only ''` ran all three groups (sixteenth-session review)
    if (only != "stream" && only != "chase" && only != "sweep")
      throw spartan::InputError("--only: expected stream, chase or sweep, got '" + only + "'");
    opt.stream = only == "stream";
    opt.chase = only == "chase";
    opt.sweep = only == "sweep";
  }
  if (!out.empty()) spartan::check_output_file("--out", out);
  if (!stats_out.empty()) spartan::check_output_file("--stats", stats_out);
  spartan::check_distinct_outputs({{"--out", out}, {"--stats", stats_out}});
  auto gpu = spartan::hw::gpu::GpuSystem::from_preset(gpu_name);
  // Both outputs are opened (temporary files) before the run and committed together after it: an
  // unwritable path fails at once, and no run leaves one of the two behind.
  std::optional<spartan::AtomicFile> out_file, stats_file;
  if (!out.empty()) out_file.emplace(out);
  if (!stats_out.empty()) stats_file.emplace(stats_out);
  auto rep = spartan::hw::gpu::run_microbench(*gpu, opt);
  std::printf("%s", rep.to_text(gpu->config()).c_str());
  if (out_file) out_file->write(rep.to_json().dump(2) + "\n");
  if (stats_file) {
    nlohmann::json st = gpu->stats_json();
    st["build"] = spartan::build_info_json<nlohmann::json>();
    stats_file->write(st.dump(2) + "\n");
  }
  if (out_file) out_file->commit();
  if (stats_file) stats_file->commit();
  return 0;
}

spartan::sim::CommandRegistration reg("microbench", {"GPU memory-model calibration: bandwidth, latency, L2 sweep",
                                                     microbench_main});

}  // namespace
