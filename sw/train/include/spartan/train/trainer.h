// The training loop: mini-batch SGD with momentum and weight decay over an IDX dataset, evaluation,
// per-layer activation sparsity statistics, and observer hooks (trace capture, progress display)
// that attach from outside the loop.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "spartan/train/idx.h"
#include "spartan/train/model.h"

namespace spartan::train {

struct TrainConfig {
  int epochs = 1;
  std::int64_t iterations = 0;  ///< stop after this many steps (0 = run all epochs)
  int batch = 64;
  float lr = 0.02f;
  float momentum = 0.9f;
  float weight_decay = 5e-4f;
  std::string lr_schedule = "cosine";  ///< "constant" or "cosine" (decay to 0 over the run)
  std::uint64_t seed = 1;
  std::int64_t eval_every = 0;   ///< also evaluate every this many steps (0 = at epoch ends only)
  int test_limit = 0;            ///< evaluate on the first N test images (0 = all)
  std::int64_t sparsity_every = 50;  ///< sample the per-layer sparsity history every this many steps
  /// Device-resident path (executor.h; not owned): null = the CPU path. With an executor, parameters are
  /// moved to its memory at the start and back at the end; per step only the input batch and labels go up and
  /// only the loss/accuracy (per-sample losses and hits), the per-layer zero counts and, on capture steps, the
  /// captured activations and the
  /// backward-data operands (for their zero masks) come down. The GemmRunner's engine must accept the executor's
  /// pointers (a CUDA engine for "cuda").
  Executor* executor = nullptr;
};

/// SGD step (PyTorch convention): v = momentum * v + (g + wd * w); w -= lr * v. Weight decay only on
/// parameters with Param::weight_decay (conv/FC weights).
void sgd_step(const std::vector<Param*>& params, float lr, float momentum, float weight_decay);
/// The same on the executor copies of the parameters (Param::d_*).
void sgd_step_exec(Executor& ex, const std::vector<Param*>& params, float lr, float momentum, float weight_decay);

/// Checks the fields of `cfg` that command-line tools take as options, before any data is loaded; throws
/// spartan::InputError naming the option (`--epochs`, `--iterations`, `--batch`, `--lr`, `--momentum`,
/// `--weight-decay`, `--eval-every`, `--test-limit`; an unknown `lr_schedule` gets learning_rate()'s message).
/// train() itself still checks the batch against the training-set size.
void check_train_options(const TrainConfig& cfg);

/// Learning rate at `step` of `total` under `schedule` ("constant" or "cosine": lr/2 (1 + cos(pi step/total))).
float learning_rate(const std::string& schedule, float base, std::int64_t step, std::int64_t total);

/// Per-GEMM-layer activation density (non-zeros / elements) over training.
struct LayerSparsity {
  int layer = 0;
  std::string name;      ///< e.g. "conv3", "fc1"
  std::string describe;  ///< e.g. "conv3x3 16->32 s1 p1"
  bool relu_after = false;
  double act_density_sum = 0, dz_density_sum = 0;
  std::int64_t samples = 0;
  std::vector<std::int64_t> iterations;  ///< sampled steps
  std::vector<double> act_density, dz_mask_density;
  double mean_act_sparsity() const { return samples ? 1.0 - act_density_sum / samples : 0.0; }
  double mean_dz_sparsity() const { return samples ? 1.0 - dz_density_sum / samples : 0.0; }
};

struct IterationInfo {
  std::int64_t iteration = 0, total_iterations = 0;
  int epoch = 0;
  double loss = 0, batch_accuracy = 0;
  double mean_act_sparsity = 0;  ///< over the GEMM layers after the first (whose input is the image), this step
  double elapsed_s = 0;
  double last_test_accuracy = -1;  ///< -1 before the first evaluation
};

/// Hooks called by train(). Default implementations do nothing.
class TrainObserver {
 public:
  virtual ~TrainObserver() = default;
  /// Return true to capture step `iteration`: its GEMMs are then timed (and also run on the dense engine).
  virtual bool wants_capture(std::int64_t iteration) { (void)iteration; return false; }
  /// After forward and backward of a captured step, before the weight update.
  virtual void on_capture(std::int64_t iteration, Model& model, const std::vector<GemmTiming>& timings) {
    (void)iteration; (void)model; (void)timings;
  }
  virtual void on_iteration(const IterationInfo& info) { (void)info; }
  virtual void on_eval(std::int64_t iteration, double test_accuracy) { (void)iteration; (void)test_accuracy; }
};

/// Windows of the summary losses of TrainResult: the mean over the last kFinalLossSteps steps (smooths the
/// per-batch noise of SGD) and over the first kFirstLossSteps steps (the starting point it is compared with).
inline constexpr std::int64_t kFinalLossSteps = 100, kFirstLossSteps = 20;

struct TrainResult {
  std::int64_t iterations = 0;
  double final_train_loss = 0;      ///< mean loss over the last min(kFinalLossSteps, steps) steps
  double final_train_accuracy = 0;  ///< same window, on training batches
  double first_train_loss = 0;      ///< mean loss over the first min(kFirstLossSteps, steps) steps
  double test_accuracy = 0;         ///< final evaluation
  int test_images = 0;
  std::vector<double> epoch_seconds;  ///< training time (no evaluation) per completed or partial epoch, capture steps included
  /// Of epoch_seconds, the wall time of the epoch's capture steps (their training work, the GEMM timing
  /// repeats on the dense reference and the engine, and the observers' writes): 0 without a capture.
  std::vector<double> epoch_capture_seconds;
  std::vector<std::pair<std::int64_t, double>> test_history;
  std::vector<LayerSparsity> sparsity;
};

/// Trains `model` on `data.train` and evaluates on `data.test`. Deterministic for a seed and thread
/// count. Throws spartan::InputError on an impossible configuration (batch < 1 or > training set, ...) and
/// spartan::Error (exit code 2) when the training loss is not finite (diverged: the learning rate is too high).
TrainResult train(Model& model, const Dataset& data, GemmRunner& gemm, const TrainConfig& cfg,
                  const std::vector<TrainObserver*>& observers = {});

/// Test accuracy (fraction) of `model` in eval mode on the first `limit` images of `split` (0 = all).
/// With `exec`, on the executor path (the model's parameters must be in its memory: Model::to_exec).
/// `mean_loss` (optional) receives the mean cross-entropy over those images.
double evaluate(Model& model, const DataSplit& split, GemmRunner& gemm, int limit = 0, int batch = 256,
                Executor* exec = nullptr, double* mean_loss = nullptr);

/// Names of the GEMM layers as used in traces: conv1, conv2, ..., fc1, fc2, ...
std::vector<std::string> gemm_layer_names(const Model& model);

}  // namespace spartan::train
