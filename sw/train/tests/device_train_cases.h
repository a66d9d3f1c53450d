// Cases of the device-resident training path, shared by the GPU (test_cuda_train.cpp: the CUDA executor, GEMMs
// on cuBLAS "cuda-dense" or "cuda-tile-sparse") and the host emulation of the same kernels
// (test_simt_train.cpp: make_simt_executor, the simt GEMM engines of spartan/gemm/simt.h). compare_with_cpu()
// trains one model on the CPU path (OpenBLAS "dense", host layers) and on the device path (every layer as the
// executor's kernels, parameters and activations in its memory, GEMMs on device pointers) and compares them.
// Data: Fashion-MNIST when installed, else a synthetic 28x28 set (the GPU machine may not have the Debian
// package).
//
// Tolerance, per step: |loss_cpu - loss_cuda| <= 1e-3 + 2% of the CPU loss for lenet5, 1e-3 + 5% for vgg-s.
// Why: the element-wise kernels do the CPU's float operations in the CPU's order (kernels_hd.h, built with
// --fmad=false; test_train_kernels checks the same functions bit for bit on the host), and the dropout masks
// are the CPU's (drawn on the host from the same generator and uploaded). What differs is the summation order of
// the GEMMs (cuBLAS vs OpenBLAS; both plain FP32, cuBLAS's default math mode uses no TF32) and of the reductions
// (batch-norm statistics, bias gradients: 256 partials + tree vs one sequential double sum): relative
// differences of ~1e-6 per step, which SGD with momentum amplifies slowly (a ReLU or max-pool decision that
// flips changes a few gradient elements). vgg-s has 13 batch-norm layers and two dropout layers, so it gets the
// wider bound. A real divergence (a wrong index, a missing synchronisation) moves the loss by far more within a
// few steps. Additionally, at step 0 (identical weights and input) the captured activations must agree to 1e-3
// and every parameter gradient of the first backward to 1e-4 relative L2 (see compare_with_cpu()); evaluation
// (on_eval, the final test accuracy and loss) and the batch-norm running statistics after training are compared
// too. Under the host emulation the GEMMs of "cuda-dense" are OpenBLAS's, so only the reductions' order differs.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "spartan/gemm/gemm.h"
#include "spartan/train/executor.h"
#include "spartan/train/trainer.h"

namespace spartan::train::device_cases {

/// Where the device path runs: its executor, and its GEMM engines by CUDA engine name ("cuda-dense",
/// "cuda-tile-sparse").
struct DevicePath {
  std::function<std::unique_ptr<Executor>()> executor;
  std::function<std::unique_ptr<gemm::GemmEngine>(const std::string& cuda_engine)> engine;
};

/// Fashion-MNIST from its default directory when installed, else a synthetic 28x28 ten-class set (loaded once).
const Dataset& test_data();

struct Recorder : TrainObserver {
  Executor* ex = nullptr;  ///< the executor (gradients are downloaded from it), null on the CPU path
  std::vector<double> loss;
  std::vector<std::pair<std::int64_t, double>> eval;  ///< on_eval: (iteration, test accuracy)
  std::vector<std::vector<float>> act0;   ///< step 0: each GEMM layer's input
  std::vector<std::vector<float>> grad0;  ///< step 0: every parameter's gradient after the first backward
  std::vector<std::string> grad_names;
  std::vector<GemmTiming> timings0;
  bool wants_capture(std::int64_t it) override { return it == 0; }
  void on_capture(std::int64_t, Model& m, const std::vector<GemmTiming>& t) override {
    for (const GemmLayer* g : m.gemm_layers()) act0.emplace_back(g->input().v.begin(), g->input().v.end());
    for (Param* p : m.params()) {  // before the weight update: the gradients of identical weights and input
      std::vector<float> g(p->grad.size());
      if (ex)
        ex->download(g.data(), p->d_grad->ptr(), g.size() * sizeof(float));
      else
        g.assign(p->grad.begin(), p->grad.end());
      grad0.push_back(std::move(g));
      grad_names.push_back(p->name);
    }
    timings0 = t;
  }
  void on_iteration(const IterationInfo& i) override { loss.push_back(i.loss); }
  void on_eval(std::int64_t it, double acc) override { eval.emplace_back(it, acc); }
};

struct RunResult {
  Recorder rec;
  TrainResult train;
  double test_loss = 0, test_accuracy = 0;  ///< evaluate() after training, on the path that trained
  std::vector<std::vector<float>> bn_mean, bn_var;  ///< every batch norm's running statistics after training
  std::vector<std::vector<float>> params;  ///< every parameter's value after training
};

/// Trains `model_name` (28x28x1 input, 10 classes, model seed 3, data seed 3) for `iterations` steps with
/// `engine` (timed against `dense`) on the CPU path (`ex` null) or on executor `ex`, evaluating mid-run and at
/// the end on `test_images` test images; records step 0's activations and gradients, every loss, the final
/// parameters and batch-norm running statistics.
RunResult run(const Dataset& data, const std::string& model_name, int batch, int iterations, gemm::GemmEngine& engine,
              gemm::GemmEngine& dense, Executor* ex, int test_images = 256);

/// ||a - b||_2 / ||a||_2 (||b||_2 when a is all zero).
double rel_l2(const std::vector<float>& a, const std::vector<float>& b);

/// CPU against `device` with `cuda_engine` over `iterations` steps, `rel` the relative loss tolerance (see
/// above), evaluations on `test_images` test images; reports failures with gtest EXPECT / ASSERT.
void compare_with_cpu(const DevicePath& device, const std::string& model_name, int batch, const std::string& cuda_engine,
                      double rel, int iterations, int test_images = 256);

}  // namespace spartan::train::device_cases
