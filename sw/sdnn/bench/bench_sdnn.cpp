// bench-sdnn: Graph Challenge inference, spartan-sdnn vs SuiteSparse:GraphBLAS (mxm, bias, select > 0,
// min 32), same problem, same process, side by side. Prints the throughput of both and the ratio.
// usage: bench-sdnn [--weights DIR] [--layers L] [--features FILE] [--bias B] [--reps R]  (--help)
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

#include <boost/program_options.hpp>

#include "spartan/common/cli.h"
#include "spartan/common/cli_checks.h"
#include "spartan/common/error.h"
#include "spartan/sdnn/graphblas_ref.h"
#include "spartan/sdnn/infer.h"

using namespace spartan::sdnn;

int main(int argc, char** argv) {
  return spartan::run_cli("bench-sdnn", [&]() -> int {
    namespace po = boost::program_options;
    std::string dir = SDNN_DATA_DIR, features;
    int layers = 30, reps = 5;
    float bias = -0.3f;
    po::options_description opts("bench-sdnn: Graph Challenge inference, spartan-sdnn vs SuiteSparse:GraphBLAS side by side\nOptions");
    opts.add_options()("help,h", "this help")(
        "weights", po::value(&dir)->default_value(dir), "directory with the layer files *-l{k}.mtx[.gz] or .tsv[.gz]")(
        "layers", po::value(&layers)->default_value(layers), "number of layers (>= 1)")(
        "features", po::value(&features), "input features (images x neurons); default: WEIGHTS/sparse-images-1024_subset.mtx.gz")(
        "bias", po::value(&bias)->default_value(bias), "bias added to every neuron")(
        "reps", po::value(&reps)->default_value(reps), "repetitions of each engine, interleaved; the best is reported (>= 1)");
    po::variables_map vm;
    if (!spartan::parse_options_or_help(argc, argv, opts, vm)) return 0;
    if (layers < 1) throw spartan::InputError("--layers must be >= 1 (got " + std::to_string(layers) + ")");
    if (reps < 1) throw spartan::InputError("--reps must be >= 1 (got " + std::to_string(reps) + ")");
    if (!std::isfinite(bias)) throw spartan::InputError("--bias must be a finite number");
    if (features.empty()) features = dir + "/sparse-images-1024_subset.mtx.gz";
    const auto w = load_weights(dir, layers);
    const auto y0 = load_features(features, w[0].rows);
    graphblas::Problem gb(y0, w);
    const double work = static_cast<double>(y0.rows) * static_cast<double>(total_edges(w));
    double best_ours = 1e30, best_gb = 1e30;
    Csr ours, ref;
    for (int r = 0; r < reps; ++r) {  // interleaved so both see the same machine state
      auto t0 = std::chrono::steady_clock::now();
      ours = infer(y0, w, bias);
      best_ours = std::min(best_ours, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      t0 = std::chrono::steady_clock::now();
      ref = gb.run(bias);
      best_gb = std::min(best_gb, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    const bool same = categories(ours) == categories(ref) && ours.col_idx == ref.col_idx;
    std::printf("problem: %lld images x %d layers x %lld neurons, %lld edges, bias %g, threads %d, best of %d\n", static_cast<long long>(y0.rows), layers,
                static_cast<long long>(w[0].rows), static_cast<long long>(total_edges(w)), static_cast<double>(bias), omp_get_max_threads(), reps);
    std::printf("%-22s %10s %22s\n", "engine", "time_s", "images*edges/s");
    std::printf("%-22s %10.4f %22.4g\n", "spartan-sdnn", best_ours, work / best_ours);
    std::printf("%-22s %10.4f %22.4g\n", "SuiteSparse:GraphBLAS", best_gb, work / best_gb);
    std::printf("ratio spartan/GraphBLAS: %.2fx (target >= 1.5x); results %s\n", best_gb / best_ours, same ? "identical structure" : "DIFFER");
    return same ? 0 : 1;
  });
}
