// bench-train: trains each model and reports test accuracy and training time per epoch side by side
// (a benchmark, not a test: numbers depend on the machine). Results go to docs/bench/train.md.
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "spartan/common/cli.h"
#include "spartan/common/error.h"
#include "spartan/gemm/tile_sparse.h"
#include "spartan/train/capture.h"
#include "spartan/train/threads.h"
#include "spartan/train/model.h"
#include "spartan/common/cli_checks.h"
#include "spartan/train/threads.h"
#include "spartan/train/trainer.h"

namespace po = boost::program_options;
using namespace spartan;
using namespace spartan::train;

namespace {

int run(int argc, char** argv) {
  std::string models, data_dir, gemm_name;
  TrainConfig cfg;
  int threads = 2;
  po::options_description opts("bench-train: test accuracy and time per epoch of each model\n\nOptions", 110, 60);
  opts.add_options()
    ("help,h", "print this help and exit")
    ("models", po::value(&models)->default_value("lenet5,alexnet-s,vgg-s,resnet-s"), "comma-separated model names")
    ("data", po::value(&data_dir)->default_value(kDefaultFashionMnistDir), "IDX dataset directory")
    ("epochs", po::value(&cfg.epochs)->default_value(1), "epochs per model")
    ("iterations", po::value(&cfg.iterations)->default_value(0), "cap on steps per model (0 = all epochs)")
    ("batch", po::value(&cfg.batch)->default_value(64), "mini-batch size")
    ("lr", po::value(&cfg.lr)->default_value(0.02f, "0.02"), "base learning rate (cosine schedule)")
    ("seed", po::value(&cfg.seed)->default_value(1), "seed")
    ("threads", po::value(&threads)->default_value(2), "OpenMP and OpenBLAS threads (1..1024)")
    ("gemm", po::value(&gemm_name)->default_value("tile-sparse"), "GEMM engine: dense|tile-sparse");
  po::variables_map vm;
  if (!spartan::parse_options_or_help(argc, argv, opts, vm)) return 0;
  // Every option is checked before the dataset is loaded (loading it takes seconds).
  check_train_options(cfg);
  spartan::check_threads("--threads", threads);
  std::vector<std::string> names;
  {
    std::stringstream ss(models);
    std::string name;
    while (std::getline(ss, name, ',')) {
      try {
        check_model_name(name);
      } catch (const InputError& e) {
        throw InputError(std::string("--models: ") + e.what());
      }
      names.push_back(name);
    }
    if (names.empty()) throw InputError("--models: no model named");
    // getline drops one trailing empty item: "lenet5," ran lenet5 while ",lenet5" was refused.
    if (models.back() == ',') throw InputError("--models: unknown model '' (trailing comma in '" + models + "')");
  }
  set_num_threads(threads);
  auto engine = gemm::make_engine(gemm_name);
  auto dense = gemm::make_engine(reference_engine_name(gemm_name));  // same device as the engine
  const Dataset data = load_idx_dataset(data_dir);
  std::printf("bench-train: %s, %d train / %d test images, batch %d, lr %g cosine, gemm %s, %s\n\n", data.name.c_str(),
              data.train.n, data.test.n, cfg.batch, cfg.lr, engine->name().c_str(), cpu_device_name(threads).c_str());
  std::printf("| model | params | steps | epochs | s/epoch (train) | train loss | test acc | mean act sparsity (layers 1+) |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|\n");
  std::fflush(stdout);
  for (const std::string& name : names) {
    auto model = build_model(name, 1, data.train.rows, data.train.cols, data.classes, cfg.seed);
    GemmRunner runner(engine.get(), dense.get());
    const TrainResult r = spartan::train::train(*model, data, runner, cfg);
    double secs = 0;
    for (double s : r.epoch_seconds) secs += s;
    const double per_epoch_steps = static_cast<double>(data.train.n / cfg.batch);
    const double epochs_done = static_cast<double>(r.iterations) / per_epoch_steps;
    double sp = 0;  // over the layers after the first: layer 0's input is the image, not a ReLU activation
    for (std::size_t l = 1; l < r.sparsity.size(); ++l) sp += r.sparsity[l].mean_act_sparsity();
    if (r.sparsity.size() > 1) sp /= static_cast<double>(r.sparsity.size() - 1);
    std::printf("| %s | %zu | %lld | %.2f | %.1f | %.4f | %.2f%% | %.1f%% |\n", name.c_str(), model->num_parameters(),
                static_cast<long long>(r.iterations), epochs_done, secs / epochs_done, r.final_train_loss,
                100 * r.test_accuracy, 100 * sp);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  spartan::train::use_passive_openmp_wait(argv);
  return run_cli("bench-train", [&] { return run(argc, argv); });
}
