// spartan-sdnn partition: partition a network's neurons over P ranks and report volume and imbalance.
#include <boost/program_options.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "commands.h"
#include "spartan/common/cli_checks.h"
#include "spartan/common/error.h"
#include "spartan/sdnn/infer.h"
#include "spartan/sdnn/partition.h"
#include "spartan/sdnn/mpi_session.h"

namespace po = boost::program_options;

namespace spartan::sdnn::cli {

int cmd_partition(const std::vector<std::string>& args) {
  std::string weights, method, out;
  int layers = 0, parts = 0;
  std::uint64_t seed = 1;
  double tol = 0.05;
  po::options_description desc("spartan-sdnn partition options");
  desc.add_options()("help,h", "show this help")("weights", po::value(&weights)->required(), "directory with the layer files")(
      "layers", po::value(&layers)->required(), "number of layers")("parts", po::value(&parts)->required(), "number of parts (MPI ranks)")(
      "method", po::value(&method)->default_value("hypergraph"), "block | random | hypergraph (Zoltan PHG) | graph (METIS)")(
      "out", po::value(&out)->required(), "partition file to write")("seed", po::value(&seed)->default_value(1), "seed (random, hypergraph, graph)")(
      "imbalance", po::value(&tol)->default_value(0.05, "0.05"), "allowed per-layer load imbalance, 0..1 (0.05 = 5%)");
  po::variables_map vm;
  if (!spartan::parse_options_or_help(args, desc, vm)) return 0;
  refuse_ranks_for_serial_command("partition");
  if (!std::isfinite(tol) || tol < 0 || tol > 1)
    throw InputError("--imbalance must be a finite tolerance from 0 to 1 (0.05 = 5%), got " + std::to_string(tol));
  spartan::check_output_file("--out", out);
  spartan::check_outputs_not_inputs({{"--out", out}}, weight_inputs(weights, layers));
  const auto w = load_weights(weights, layers);
  auto partitioner = make_partitioner(method, seed, tol);
  partitioner->initialize();  // one-time MPI/Zoltan start-up, not part of time_s
  const auto t0 = std::chrono::steady_clock::now();
  const Partition p = partitioner->run(w, parts);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  write_partition(out, p);
  const auto vol = expand_volume(w, p);
  const auto imb = layer_imbalance(w, p);
  std::printf("method %s parts %d neurons %lld layers %d time_s %.3f\n", method.c_str(), parts, static_cast<long long>(p.neurons), layers, secs);
  std::printf("%6s %14s %10s\n", "layer", "volume_entries", "imbalance");
  std::int64_t total = 0;
  double worst = 0;
  for (int k = 0; k < layers; ++k) {
    std::printf("%6d %14lld %9.2f%%\n", k + 1, static_cast<long long>(vol[k]), 100.0 * imb[k]);
    total += vol[k];
    worst = std::max(worst, imb[k]);
  }
  std::printf("total volume %lld entries per image (connectivity-1; forward expand, = backward fold), max imbalance %.2f%%\n",
              static_cast<long long>(total), 100.0 * worst);
  std::printf("wrote %s\n", out.c_str());
  // Zoltan's and METIS's tolerances are targets, not guarantees (block and random ignore it): say so when missed.
  if (worst > tol + 1e-12)
    std::fprintf(stderr, "spartan-sdnn partition: note: max imbalance %.2f%% exceeds --imbalance %.2f%% (%s does not guarantee it)\n",
                 100.0 * worst, 100.0 * tol, method.c_str());
  return 0;
}

}  // namespace spartan::sdnn::cli
