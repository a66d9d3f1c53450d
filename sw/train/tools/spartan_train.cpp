// spartan-train: trains a CNN on an IDX dataset (Fashion-MNIST by default) with every conv/FC GEMM
// going through the chosen GEMM engine, and optionally captures an activation trace (.sptrace).
#include <unistd.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "spartan/common/atomic_file.h"
#include "spartan/common/build_info.h"
#include "spartan/common/cli.h"
#include "spartan/common/cli_checks.h"
#include "spartan/common/error.h"
#include "spartan/gemm/tile_sparse.h"
#include "spartan/train/capture.h"
#include "spartan/train/device.h"
#include "spartan/train/gemm_runner.h"
#include "spartan/train/threads.h"
#include "spartan/train/trainer.h"

namespace po = boost::program_options;
using namespace spartan;
using namespace spartan::train;

namespace {

std::string fmt_duration(double s) {
  if (!std::isfinite(s) || s < 0) return "--:--";
  const long t = std::lround(s);
  char buf[32];
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, (t / 60) % 60, t % 60);
  else std::snprintf(buf, sizeof buf, "%02ld:%02ld", t / 60, t % 60);
  return buf;
}

/// One-line progress display on stderr: rewritten in place (\r) on a terminal; on a pipe or file,
/// one line every 30 s and at each evaluation.
class Progress final : public TrainObserver {
 public:
  Progress() : tty_(isatty(STDERR_FILENO) != 0) {}
  void on_iteration(const IterationInfo& i) override {
    const auto now = std::chrono::steady_clock::now();
    const double since = std::chrono::duration<double>(now - last_).count();
    const bool last = i.iteration + 1 == i.total_iterations;
    if (!last && since < (tty_ ? 0.25 : 30.0) && !eval_pending_) return;
    eval_pending_ = false;
    last_ = now;
    const double done = static_cast<double>(i.iteration + 1);
    const double eta = i.elapsed_s / done * static_cast<double>(i.total_iterations - i.iteration - 1);
    char test[32] = "-";
    if (i.last_test_accuracy >= 0) std::snprintf(test, sizeof test, "%.2f%%", 100 * i.last_test_accuracy);
    std::fprintf(stderr, "%sepoch %d  iter %lld/%lld  loss %.4f  batch-acc %.1f%%  test-acc %s  act-sparsity %.1f%%  %s  ETA %s%s",
                 tty_ ? "\r" : "", i.epoch + 1, static_cast<long long>(i.iteration + 1),
                 static_cast<long long>(i.total_iterations), i.loss, 100 * i.batch_accuracy, test,
                 100 * i.mean_act_sparsity, fmt_duration(i.elapsed_s).c_str(), fmt_duration(eta).c_str(),
                 tty_ ? "\033[K" : "\n");
    if (last && tty_) std::fprintf(stderr, "\n");
    std::fflush(stderr);
  }
  void on_eval(std::int64_t, double) override { eval_pending_ = true; }

 private:
  bool tty_;
  bool eval_pending_ = false;
  std::chrono::steady_clock::time_point last_{};
};

/// Upper bound of --gemm-repeats: each timed GEMM runs 2 x repeats times per capture step.
constexpr int kMaxGemmRepeats = 1000;

trace::DType parse_trace_dtype(const std::string& s) {
  if (s == "f32") return trace::DType::F32;
  if (s == "f16") return trace::DType::F16;
  if (s == "bf16") return trace::DType::BF16;
  throw InputError("--trace-dtype must be f32, f16 or bf16 (got '" + s + "')");
}

int run(int argc, char** argv) {
  std::string model_name, data_dir, gemm_name, device, trace_path, trace_dtype, out_json, schedule;
  TrainConfig cfg;
  int threads = 2;
  std::int64_t capture_every = 100;
  int gemm_repeats = 5;
  po::options_description opts(
      "spartan-train: train a CNN on an IDX image dataset (default Fashion-MNIST) with the conv/FC GEMMs\n"
      "going through a chosen GEMM engine, and capture activation traces (.sptrace, docs/trace-format.md).\n\n"
      "Usage: spartan-train [options]\n\nOptions", 110, 60);
  std::string engines;
  for (const auto& e : gemm::engine_names()) engines += (engines.empty() ? "" : "|") + e;
  std::string models;
  for (const auto& m : model_names()) models += (models.empty() ? "" : "|") + m;
  opts.add_options()
    ("help,h", "print this help and exit")
    ("model", po::value(&model_name)->default_value("vgg-s"), ("network: " + models).c_str())
    ("data", po::value(&data_dir)->default_value(kDefaultFashionMnistDir),
     "directory with {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz] (gzip or raw IDX)")
    ("epochs", po::value(&cfg.epochs)->default_value(1), "passes over the training set")
    ("iterations", po::value(&cfg.iterations)->default_value(0), "stop after N steps (0 = run all epochs)")
    ("batch", po::value(&cfg.batch)->default_value(64), "mini-batch size N (the last partial batch of an epoch is dropped)")
    ("lr", po::value(&cfg.lr)->default_value(0.02f, "0.02"), "base learning rate")
    ("lr-schedule", po::value(&schedule)->default_value("cosine"), "constant|cosine (cosine decays to 0 over the run)")
    ("momentum", po::value(&cfg.momentum)->default_value(0.9f, "0.9"), "SGD momentum")
    ("weight-decay", po::value(&cfg.weight_decay)->default_value(5e-4f, "5e-4"), "L2 weight decay on conv/FC weights")
    ("seed", po::value(&cfg.seed)->default_value(1), "seed of weight init, data order and dropout")
    ("threads", po::value(&threads)->default_value(2), "OpenMP and OpenBLAS threads (1..1024)")
    ("gemm", po::value(&gemm_name)->default_value("tile-sparse"), ("GEMM engine for every conv/FC GEMM: " + engines).c_str())
    ("device", po::value(&device)->default_value("cpu"),
     "cpu|cuda (cuda: device-resident training on GPU 0 - activations, parameters and every layer on the GPU, "
     "GEMMs on cuda-dense/cuda-tile-sparse; --gemm dense|tile-sparse map to those)")
    ("trace", po::value(&trace_path), "write an activation trace (.sptrace) to FILE")
    ("capture-every", po::value(&capture_every)->default_value(100), "capture steps 0, K, 2K, ... into the trace")
    ("gemm-repeats", po::value(&gemm_repeats)->default_value(5), "on capture steps, time each GEMM this many times (1..1000) per engine, dense and engine alternately (minimum)")
    ("trace-dtype", po::value(&trace_dtype)->default_value("f32"), "element type of captured activations: f32|f16|bf16")
    ("eval-every", po::value(&cfg.eval_every)->default_value(0), "also evaluate on the test set every N steps (0 = at epoch ends)")
    ("test-limit", po::value(&cfg.test_limit)->default_value(0), "evaluate on the first N test images only (0 = all)")
    ("out-json", po::value(&out_json), "write final metrics (loss, accuracy, per-layer sparsity, time/epoch) to FILE")
    ("quiet,q", "no progress line and no summary on stdout");
  po::variables_map vm;
  const auto parsed = po::command_line_parser(argc, argv).options(opts).run();
  spartan::check_parsed_options(parsed);
  po::store(parsed, vm);
  if (vm.count("help")) {
    std::cout << opts << "\nExit status: 0 on success, 2 on bad options or bad input data, and when the loss stops being finite (training\ndiverged: lower --lr; no trace or JSON is written).\n";
    return 0;
  }
  po::notify(vm);
  const bool quiet = vm.count("quiet") > 0;
  cfg.lr_schedule = schedule;
  check_train_options(cfg);
  check_model_name(model_name);
  if (capture_every < 1) throw InputError("--capture-every must be >= 1");
  if (gemm_repeats < 1 || gemm_repeats > kMaxGemmRepeats)
    throw InputError("--gemm-repeats must be in 1.." + std::to_string(kMaxGemmRepeats) + " (got " + std::to_string(gemm_repeats) + ")");
  spartan::check_threads("--threads", threads);
  // Outputs are checked before the data is loaded and the network trained.
  if (!trace_path.empty()) spartan::check_output_file("--trace", trace_path);
  if (!out_json.empty()) spartan::check_output_file("--out-json", out_json);
  spartan::check_distinct_outputs({{"--trace", trace_path}, {"--out-json", out_json}});
  {
    std::vector<std::pair<std::string, std::string>> inputs;
    for (const std::string& f : idx_dataset_files(data_dir)) inputs.emplace_back("--data", f);
    // The loader looks for each dataset file raw and gzipped: an output on the name that is not there yet (a .gz
    // beside the raw file) would be read as the dataset by the next run (finding 112), so missing names count too.
    spartan::check_outputs_not_inputs({{"--trace", trace_path}, {"--out-json", out_json}}, inputs, true);
  }
  const trace::DType act_dtype = parse_trace_dtype(trace_dtype);
  if (device != "cpu" && device != "cuda") throw InputError("--device must be cpu or cuda (got '" + device + "')");
  set_num_threads(threads);
  // On the GPU training is device-resident (executor.h, the CUDA executor): tensors and parameters stay in
  // device memory, every layer runs as CUDA kernels, the GEMMs run on the CUDA engines of sw/gemm (cuBLAS /
  // CUDA tile-sparse, timed with CUDA events) on device pointers (see sw/train/README.md, "CUDA path").
  std::string device_name;
  std::unique_ptr<Executor> executor;
  if (device == "cuda") {
    device_name = cuda_device_name();  // throws when no GPU / no CUDA build
    if (gemm_name == "dense" || gemm_name == "tile-sparse") gemm_name = "cuda-" + gemm_name;
    if (gemm_name.rfind("cuda-", 0) != 0)
      throw InputError("--device cuda needs a CUDA GEMM engine (got --gemm " + gemm_name + ")");
    executor = make_cuda_executor();
    cfg.executor = executor.get();
  } else {
    device_name = cpu_device_name(threads);
  }
  // The GEMM times of the trace come from the engine's device: a CUDA engine (also beside CPU layers, --device cpu)
  // is timed with CUDA events and compared with cuBLAS on the same GPU, a CPU engine with OpenBLAS on the CPU.
  const std::string gemm_device = !is_cuda_engine(gemm_name) ? cpu_device_name(threads)
                                  : device == "cuda"         ? device_name
                                                             : cuda_device_name("--gemm " + gemm_name);
  auto engine = gemm::make_engine(gemm_name);
  auto dense = gemm::make_engine(reference_engine_name(gemm_name));
  cfg.sparsity_every = std::min<std::int64_t>(capture_every, 50);

  const Dataset data = load_idx_dataset(data_dir);
  auto model = build_model(model_name, 1, data.train.rows, data.train.cols, data.classes, cfg.seed);
  GemmRunner runner(engine.get(), dense.get());
  runner.set_repeats(gemm_repeats);

  // Open --out-json's temporary file before training: an unwritable path fails now, before any trace is
  // written, instead of after a complete run whose trace would then stay behind.
  std::optional<AtomicFile> json_out;
  if (!out_json.empty()) json_out.emplace(out_json);

  std::vector<TrainObserver*> observers;
  Progress progress;
  if (!quiet) observers.push_back(&progress);
  std::unique_ptr<TraceCapture> capture;
  if (!trace_path.empty()) {
    CaptureOptions co;
    co.path = trace_path;
    co.every = capture_every;
    co.act_dtype = act_dtype;
    co.model = model_name;
    co.dataset = data.name + "/train";
    co.device = device_name;
    co.gemm_device = gemm_device;
    co.seed = cfg.seed;
    co.batch = cfg.batch;
    co.writer = std::string("spartan-train 0.1.0 (commit ") + spartan::build_info().commit + ", gemm " + engine->name() + ")";
    capture = std::make_unique<TraceCapture>(co, *model);
    observers.push_back(capture.get());
  }
  if (!quiet)
    std::printf("spartan-train: %s (%zu parameters, %zu conv/FC layers) on %s (%d train / %d test images), "
                "gemm %s, %s\n", model_name.c_str(), model->num_parameters(), model->gemm_layers().size(),
                data.dir.c_str(), data.train.n, data.test.n, engine->name().c_str(), device_name.c_str());
  std::fflush(stdout);
  const TrainResult res = spartan::train::train(*model, data, runner, cfg, observers);
  if (capture) capture->finish(res);

  const auto names = gemm_layer_names(*model);
  if (!quiet) {
    const long long last_w = std::min<long long>(kFinalLossSteps, res.iterations),
                    first_w = std::min<long long>(kFirstLossSteps, res.iterations);
    std::printf("\nfinal: %lld steps, train loss %.4f and train acc %.2f%% (means over the last %lld steps; the "
                "first %lld steps' loss %.4f), test acc %.2f%% on %d images\n",
                static_cast<long long>(res.iterations), res.final_train_loss, 100 * res.final_train_accuracy, last_w,
                first_w, res.first_train_loss, 100 * res.test_accuracy, res.test_images);
    for (std::size_t e = 0; e < res.epoch_seconds.size(); ++e)
      std::printf("epoch %zu: %.1f s training (%.1f s of it in capture steps)\n", e + 1, res.epoch_seconds[e],
                  e < res.epoch_capture_seconds.size() ? res.epoch_capture_seconds[e] : 0.0);
    std::printf("\nper-layer activation sparsity over training (mean over steps; first -> last sample):\n");
    std::printf("  %-3s %-7s %-24s %10s %18s %14s\n", "L", "name", "layer", "act-sparse", "first->last", "dz-mask-sparse");
    for (const LayerSparsity& s : res.sparsity) {
      const double first = s.act_density.empty() ? 0 : 1 - s.act_density.front();
      const double last = s.act_density.empty() ? 0 : 1 - s.act_density.back();
      char dz[32] = "-";
      if (s.relu_after) std::snprintf(dz, sizeof dz, "%.1f%%", 100 * s.mean_dz_sparsity());
      std::printf("  %-3d %-7s %-24s %9.1f%% %8.1f%%->%6.1f%% %14s\n", s.layer, s.name.c_str(), s.describe.c_str(),
                  100 * s.mean_act_sparsity(), 100 * first, 100 * last, dz);
    }
    if (capture) std::printf("\ntrace: %s (%lld captured steps)\n", trace_path.c_str(), static_cast<long long>(capture->captures()));
  }
  if (json_out) {
    nlohmann::json j;
    j["build"] = spartan::build_info_json<nlohmann::json>();
    j["model"] = model_name;
    j["dataset"] = data.name;
    j["device"] = device_name;
    j["gemm"] = engine->name();
    j["seed"] = cfg.seed;
    j["batch"] = cfg.batch;
    j["iterations"] = res.iterations;
    j["train_loss"] = res.final_train_loss;  // mean over the last train_loss_steps steps
    j["train_loss_steps"] = std::min<std::int64_t>(kFinalLossSteps, res.iterations);
    j["train_accuracy"] = res.final_train_accuracy;
    j["test_accuracy"] = res.test_accuracy;
    j["test_images"] = res.test_images;
    j["epoch_seconds"] = res.epoch_seconds;
    j["epoch_capture_seconds"] = res.epoch_capture_seconds;  // of epoch_seconds: the capture steps
    nlohmann::json hist = nlohmann::json::array();
    for (const auto& [it, acc] : res.test_history) hist.push_back({{"iteration", it}, {"test_accuracy", acc}});
    j["test_history"] = hist;
    nlohmann::json layers = nlohmann::json::array();
    for (const LayerSparsity& s : res.sparsity) {
      nlohmann::json l = {{"layer", s.layer}, {"name", s.name}, {"describe", s.describe},
                          {"act_sparsity_mean", s.mean_act_sparsity()}, {"iterations", s.iterations},
                          {"act_density", s.act_density}};
      if (s.relu_after) {
        l["dz_mask_sparsity_mean"] = s.mean_dz_sparsity();
        l["dz_mask_density"] = s.dz_mask_density;
      }
      layers.push_back(l);
    }
    j["layers"] = layers;
    json_out->write(j.dump(2) + "\n");
    json_out->commit();
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  use_passive_openmp_wait(argv);
  return run_cli("spartan-train", [&] { return run(argc, argv); });
}
