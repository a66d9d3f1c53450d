#include "spartan/train/trainer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <numeric>

#include "spartan/common/error.h"
#include "spartan/train/threads.h"

namespace spartan::train {

void sgd_step(const std::vector<Param*>& params, float lr, float momentum, float weight_decay) {
  for (Param* p : params) {
    const float wd = p->weight_decay ? weight_decay : 0.0f;
    const std::ptrdiff_t n = static_cast<std::ptrdiff_t>(p->value.size());
    float* w = p->value.data();
    float* v = p->velocity.data();
    const float* g = p->grad.data();
#pragma omp parallel for schedule(static) if (parallel_worth(std::size_t(n)))
    for (std::ptrdiff_t i = 0; i < n; ++i) {
      v[i] = momentum * v[i] + g[i] + wd * w[i];
      w[i] -= lr * v[i];
    }
  }
}

void sgd_step_exec(Executor& ex, const std::vector<Param*>& params, float lr, float momentum, float weight_decay) {
  for (Param* p : params) {
    if (!p->d_value || !p->d_grad || !p->d_velocity)
      throw Error("sgd: parameter " + p->name + " is not in executor memory (Model::to_exec not called?)");
    ex.sgd(p->d_value->as<float>(), p->d_velocity->as<float>(), p->d_grad->as<float>(), p->value.size(), lr, momentum,
           p->weight_decay ? weight_decay : 0.0f);
  }
}

float learning_rate(const std::string& schedule, float base, std::int64_t step, std::int64_t total) {
  if (schedule == "constant") return base;
  if (schedule == "cosine") {
    if (total <= 0) return base;
    const double t = std::min<double>(1.0, static_cast<double>(step) / static_cast<double>(total));
    return static_cast<float>(base * 0.5 * (1.0 + std::cos(M_PI * t)));
  }
  throw InputError("unknown learning-rate schedule '" + schedule + "' (choose constant or cosine)");
}

std::vector<std::string> gemm_layer_names(const Model& model) {
  std::vector<std::string> names;
  int conv = 0, fc = 0;
  for (const GemmLayer* g : model.gemm_layers())
    names.push_back(g->kind() == "conv" ? "conv" + std::to_string(++conv) : "fc" + std::to_string(++fc));
  return names;
}

namespace {

Tensor make_batch(const DataSplit& s, const std::vector<int>& order, std::size_t first, int count,
                  std::vector<std::uint8_t>& labels) {
  Tensor x(count, 1, s.rows, s.cols);
  labels.resize(count);
  const std::size_t per = std::size_t(s.rows) * s.cols;
  for (int i = 0; i < count; ++i) {
    const int idx = order.empty() ? static_cast<int>(first) + i : order[first + i];
    std::copy_n(s.images.data() + std::size_t(idx) * per, per, x.data() + std::size_t(i) * per);
    labels[i] = s.labels[idx];
  }
  return x;
}

/// Non-zero fraction of a host tensor, or of an executor tensor (counted on the executor, one scalar down).
double density(const Tensor& t, Executor* ex) {
  if (!ex) return 1.0 - zero_fraction(t.data(), t.numel());
  const std::size_t n = t.count();
  return n ? 1.0 - static_cast<double>(ex->count_zeros(exec_ptr(t), n)) / static_cast<double>(n) : 1.0;
}

/// Labels as int32 in executor memory, each checked < classes (what softmax_cross_entropy checks on the CPU).
void upload_labels(Executor& ex, const std::vector<std::uint8_t>& labels, int classes, std::shared_ptr<Buffer>& buf) {
  std::vector<std::int32_t> l(labels.begin(), labels.end());
  for (std::int32_t v : l)
    if (v >= classes) throw InputError("cross-entropy: label " + std::to_string(v) + " >= classes " + std::to_string(classes));
  if (!buf || buf->bytes() < l.size() * sizeof(std::int32_t)) buf = ex.alloc(l.size() * sizeof(std::int32_t));
  ex.upload(buf->ptr(), l.data(), l.size() * sizeof(std::int32_t));
}

/// Resets the runner's executor when training / evaluation leaves (also by an exception).
struct RunnerExecScope {
  GemmRunner& g;
  Executor* prev;
  RunnerExecScope(GemmRunner& gr, Executor* ex) : g(gr), prev(gr.executor()) { g.set_executor(ex); }
  ~RunnerExecScope() { g.set_executor(prev); }
};

}  // namespace

double evaluate(Model& model, const DataSplit& split, GemmRunner& gemm, int limit, int batch, Executor* exec,
                double* mean_loss) {
  const int n = limit > 0 ? std::min(limit, split.n) : split.n;
  if (mean_loss) *mean_loss = 0.0;
  if (n == 0) return 0.0;
  const bool timing = gemm.timing();
  gemm.set_timing(false);
  Context ctx;
  ctx.training = false;
  ctx.gemm = &gemm;
  ctx.exec = exec;
  std::unique_ptr<RunnerExecScope> scope;
  if (exec) scope = std::make_unique<RunnerExecScope>(gemm, exec);
  std::int64_t correct = 0;
  double loss_sum = 0;
  std::vector<std::uint8_t> labels;
  std::shared_ptr<Buffer> d_labels;
  for (int first = 0; first < n; first += batch) {
    const int count = std::min(batch, n - first);
    const Tensor x = make_batch(split, {}, static_cast<std::size_t>(first), count, labels);
    Tensor dz;
    int c = 0;
    if (exec) {
      const Tensor z = model.forward(upload_tensor(*exec, x), ctx);
      upload_labels(*exec, labels, static_cast<int>(z.per_sample()), d_labels);
      loss_sum += softmax_cross_entropy_exec(*exec, z, d_labels->as<std::int32_t>(), dz, &c) * count;
    } else {
      const Tensor z = model.forward(x, ctx);
      loss_sum += softmax_cross_entropy(z, labels.data(), dz, &c) * count;
    }
    correct += c;
  }
  gemm.set_timing(timing);
  if (mean_loss) *mean_loss = loss_sum / n;
  return static_cast<double>(correct) / n;
}

void check_train_options(const TrainConfig& cfg) {
  if (cfg.iterations < 0) throw InputError("--iterations must be >= 0");
  if (cfg.epochs < 1) throw InputError("--epochs must be >= 1");
  if (cfg.batch < 1) throw InputError("--batch must be >= 1");
  if (!(cfg.lr > 0) || !std::isfinite(cfg.lr)) throw InputError("--lr must be > 0");
  if (!(cfg.momentum >= 0 && cfg.momentum < 1)) throw InputError("--momentum must be in [0, 1)");  // NaN fails too
  if (!(cfg.weight_decay >= 0) || !std::isfinite(cfg.weight_decay))
    throw InputError("--weight-decay must be a finite number >= 0");
  if (cfg.eval_every < 0 || cfg.test_limit < 0) throw InputError("--eval-every and --test-limit must be >= 0");
  learning_rate(cfg.lr_schedule, cfg.lr, 0, 1);  // validates the schedule name
}

TrainResult train(Model& model, const Dataset& data, GemmRunner& gemm, const TrainConfig& cfg,
                  const std::vector<TrainObserver*>& observers) {
  const DataSplit& tr = data.train;
  if (cfg.batch < 1 || cfg.batch > tr.n)
    throw InputError("batch size " + std::to_string(cfg.batch) + " must be in [1, " + std::to_string(tr.n) + "]");
  if (cfg.epochs < 1) throw InputError("epochs must be >= 1");
  if (cfg.iterations < 0) throw InputError("iterations must be >= 0");
  learning_rate(cfg.lr_schedule, cfg.lr, 0, 1);  // validates the schedule name
  const std::int64_t per_epoch = tr.n / cfg.batch;
  std::int64_t total = per_epoch * cfg.epochs;
  if (cfg.iterations > 0) total = std::min(total, cfg.iterations);

  std::mt19937_64 shuffle_rng(cfg.seed * 0x9E3779B97F4A7C15ULL + 1);
  std::mt19937_64 dropout_rng(cfg.seed * 0x9E3779B97F4A7C15ULL + 2);
  Context ctx;
  ctx.training = true;
  ctx.rng = &dropout_rng;
  ctx.gemm = &gemm;
  Executor* ex = cfg.executor;
  ctx.exec = ex;
  std::unique_ptr<RunnerExecScope> scope;
  std::shared_ptr<Buffer> d_labels;
  if (ex) {
    scope = std::make_unique<RunnerExecScope>(gemm, ex);
    model.to_exec(*ex);
  }
  const auto params = model.params();
  const auto& glayers = model.gemm_layers();
  const auto names = gemm_layer_names(model);

  TrainResult res;
  res.sparsity.resize(glayers.size());
  for (std::size_t l = 0; l < glayers.size(); ++l) {
    res.sparsity[l].layer = static_cast<int>(l);
    res.sparsity[l].name = names[l];
    res.sparsity[l].describe = glayers[l]->describe();
    res.sparsity[l].relu_after = glayers[l]->next_relu != nullptr;
  }
  std::vector<double> losses, accs;
  std::vector<int> order(tr.n);
  std::vector<std::uint8_t> labels;
  const auto t_start = std::chrono::steady_clock::now();
  double last_test = -1;
  std::int64_t it = 0;
  for (int epoch = 0; epoch < cfg.epochs && it < total; ++epoch) {
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), shuffle_rng);
    double epoch_train_s = 0, epoch_capture_s = 0;
    for (std::int64_t b = 0; b < per_epoch && it < total; ++b, ++it) {
      const auto t0 = std::chrono::steady_clock::now();
      bool capture = false;
      for (TrainObserver* o : observers) capture = o->wants_capture(it) || capture;
      gemm.set_timing(capture);
      const Tensor x = make_batch(tr, order, static_cast<std::size_t>(b * cfg.batch), cfg.batch, labels);
      Tensor dz;
      int correct = 0;
      double loss = 0;
      if (ex) {  // only the batch and its labels go up
        const Tensor z = model.forward(upload_tensor(*ex, x), ctx);
        upload_labels(*ex, labels, static_cast<int>(z.per_sample()), d_labels);
        loss = softmax_cross_entropy_exec(*ex, z, d_labels->as<std::int32_t>(), dz, &correct);
      } else {
        const Tensor z = model.forward(x, ctx);
        loss = softmax_cross_entropy(z, labels.data(), dz, &correct);
      }
      if (!std::isfinite(loss)) throw Error("training diverged at iteration " + std::to_string(it) + " (loss " + std::to_string(loss) + "); lower --lr", 2);
      ctx.keep_bwd_operand_mask = capture;
      model.backward(dz, ctx);
      ctx.keep_bwd_operand_mask = false;
      gemm.set_timing(false);
      // Sparsity of every GEMM layer's activation, and (layers with a ReLU after them) of the sparse operand of its
      // backward-data GEMM, as that GEMM received it (GemmLayer::bwd_operand_density).
      double mean_sp = 0;
      const bool sample = it % std::max<std::int64_t>(1, cfg.sparsity_every) == 0 || capture;
      for (std::size_t l = 0; l < glayers.size(); ++l) {
        const double ad = density(glayers[l]->input(), ex);
        const double dd = glayers[l]->next_relu ? glayers[l]->bwd_operand_density() : 1.0;
        LayerSparsity& s = res.sparsity[l];
        s.act_density_sum += ad;
        s.dz_density_sum += dd;
        ++s.samples;
        if (sample) {
          s.iterations.push_back(it);
          s.act_density.push_back(ad);
          if (s.relu_after) s.dz_mask_density.push_back(dd);
        }
        if (l > 0) mean_sp += 1.0 - ad;  // layer 0's input is the image, not a ReLU activation (review F11)
      }
      if (glayers.size() > 1) mean_sp /= static_cast<double>(glayers.size() - 1);
      if (capture) {
        if (ex)  // the captured activations come down to the host (the backward-data operands' masks already did)
          for (GemmLayer* g : glayers) g->fetch_input(*ex);
        const auto timings = gemm.take_timings();
        for (TrainObserver* o : observers) o->on_capture(it, model, timings);
      }
      const float lr = learning_rate(cfg.lr_schedule, cfg.lr, it, total);
      if (ex)
        sgd_step_exec(*ex, params, lr, cfg.momentum, cfg.weight_decay);
      else
        sgd_step(params, lr, cfg.momentum, cfg.weight_decay);
      const double step_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      epoch_train_s += step_s;
      if (capture) epoch_capture_s += step_s;
      losses.push_back(loss);
      accs.push_back(static_cast<double>(correct) / cfg.batch);

      const bool epoch_end = b + 1 == per_epoch || it + 1 == total;
      if ((cfg.eval_every > 0 && (it + 1) % cfg.eval_every == 0) || epoch_end) {
        last_test = evaluate(model, data.test, gemm, cfg.test_limit, 256, ex);
        res.test_history.emplace_back(it + 1, last_test);
        for (TrainObserver* o : observers) o->on_eval(it + 1, last_test);
      }
      IterationInfo info;
      info.iteration = it;
      info.total_iterations = total;
      info.epoch = epoch;
      info.loss = loss;
      info.batch_accuracy = accs.back();
      info.mean_act_sparsity = mean_sp;
      info.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
      info.last_test_accuracy = last_test;
      for (TrainObserver* o : observers) o->on_iteration(info);
    }
    res.epoch_seconds.push_back(epoch_train_s);
    res.epoch_capture_seconds.push_back(epoch_capture_s);
  }
  if (ex) model.from_exec(*ex);
  res.iterations = it;
  const std::size_t w = std::min<std::size_t>(kFinalLossSteps, losses.size()),
                    w0 = std::min<std::size_t>(kFirstLossSteps, losses.size());
  if (w > 0) {
    res.final_train_loss = std::accumulate(losses.end() - static_cast<std::ptrdiff_t>(w), losses.end(), 0.0) / w;
    res.final_train_accuracy = std::accumulate(accs.end() - static_cast<std::ptrdiff_t>(w), accs.end(), 0.0) / w;
    res.first_train_loss = std::accumulate(losses.begin(), losses.begin() + static_cast<std::ptrdiff_t>(w0), 0.0) / w0;
  }
  res.test_accuracy = last_test;
  res.test_images = data.test.n == 0 ? 0 : (cfg.test_limit > 0 ? std::min(cfg.test_limit, data.test.n) : data.test.n);
  return res;
}

}  // namespace spartan::train
