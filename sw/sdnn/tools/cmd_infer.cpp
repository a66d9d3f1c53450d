// spartan-sdnn infer: Graph Challenge inference, single process (OpenMP) or distributed (--partition, MPI).
#include <omp.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>

#include "commands.h"
#include "spartan/common/atomic_file.h"
#include "spartan/common/cli_checks.h"
#include "spartan/common/error.h"
#include "spartan/sdnn/dist.h"
#include "spartan/sdnn/infer.h"
#include "spartan/sdnn/mpi_session.h"

namespace po = boost::program_options;

namespace spartan::sdnn::cli {

int cmd_infer(const std::vector<std::string>& args) {
  std::string weights, features, partition, cats_out;
  int layers = 0, threads = 0, batch = 1024;
  float bias = 0;
  po::options_description desc("spartan-sdnn infer options");
  desc.add_options()("help,h", "show this help")(
      "weights", po::value(&weights)->required(), "directory with the layer files *-l{k}.mtx[.gz] or .tsv[.gz]")(
      "layers", po::value(&layers)->required(), "number of layers to run")(
      "features", po::value(&features)->required(), "input features (images x neurons), .mtx[.gz] or .tsv[.gz]")(
      "bias", po::value(&bias)->required(), "bias added to the structural non-zeros of every layer (e.g. -0.3 for 1024 neurons)")(
      "threads", po::value(&threads)->default_value(0), "OpenMP threads, 1..1024 (0 = default)")(
      "partition", po::value(&partition), "partition file: run distributed under mpirun (one rank per part)")(
      "batch", po::value(&batch)->default_value(1024), "with --partition: images per distributed forward pass (>= 1)")(
      "categories-out", po::value(&cats_out), "write the 1-based categories, one per line, to this file");
  po::variables_map vm;
  if (!spartan::parse_options_or_help(args, desc, vm)) return 0;
  if (threads != 0) spartan::check_threads("--threads", threads);
  if (!std::isfinite(bias)) throw InputError("--bias must be a finite number");
  if (batch < 1) throw InputError("--batch must be >= 1 (images per distributed forward pass), got " + std::to_string(batch));
  if (vm.count("batch") && !vm["batch"].defaulted() && partition.empty())
    throw InputError("--batch applies to distributed runs only (with --partition)");
  if (threads > 0) omp_set_num_threads(threads);

  const auto check_paths = [&] {
    if (!cats_out.empty()) spartan::check_output_file("--categories-out", cats_out);
    auto inputs = weight_inputs(weights, layers);
    inputs.emplace_back("--features", features);
    inputs.emplace_back("--partition", partition);
    spartan::check_outputs_not_inputs({{"--categories-out", cats_out}}, inputs);
  };
  if (!partition.empty()) {
    // Under mpirun every rank checks the same paths: an error is printed once, by rank 0 (MpiSession::agree).
    MpiSession mpi;
    mpi.agree(check_paths);
    return dist_infer_main(weights, layers, features, bias, partition, cats_out, batch);
  }
  refuse_ranks_without_partition("infer");
  check_paths();

  const auto w = load_weights(weights, layers);
  const auto y0 = load_features(features, w.front().rows);
  const auto t0 = std::chrono::steady_clock::now();
  const Csr y = infer(y0, w, bias);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto cats = categories(y);
  std::string list;
  for (auto c : cats) list += std::to_string(c + 1) + "\n";
  if (!cats_out.empty()) write_file_atomic(cats_out, list);  // before the report: a failed write prints no results
  std::printf("categories: %zu of %lld images\n", cats.size(), static_cast<long long>(y0.rows));
  std::printf("category rows (1-based):");
  for (auto c : cats) std::printf(" %lld", static_cast<long long>(c + 1));
  std::printf("\n");
  const double edges = static_cast<double>(total_edges(w));
  std::printf("layers %d neurons %lld edges %.0f images %lld threads %d\n", layers, static_cast<long long>(w[0].rows), edges,
              static_cast<long long>(y0.rows), omp_get_max_threads());
  const double rate = throughput_image_edges_per_s(y0.rows, total_edges(w), secs);
  std::printf("time_s %.6f throughput %.4g images*edges/s (%.4g Tedges/s)\n", secs, rate, rate / 1e12);
  return 0;
}

}  // namespace spartan::sdnn::cli
