// SGD training on the fixed sparsity pattern (see train.h).
#include "spartan/sdnn/train.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "spartan/common/error.h"
#include "spartan/sdnn/generate.h"

namespace spartan::sdnn {

Trainer::Trainer(const std::vector<Csr>& w, const Partition& p, int rank, int size, bool use_mpi, const TrainConfig& cfg)
    : cfg_(cfg), eng_(w, p, rank, size, use_mpi) {
  if (cfg.batch < 1) throw InputError("batch must be >= 1");
  if (!(cfg.lr > 0)) throw InputError("learning rate must be > 0");
  if (cfg.classes < 2) throw InputError("classes must be >= 2");
  for (const auto& wk : w) nnz_.push_back(wk.nnz());
  bias_.resize(w.size());
  for (std::size_t k = 0; k < w.size(); ++k) bias_[k].assign(eng_.plan()[k].out.size(), cfg.bias_init);
  const auto& last = eng_.plan().back().out;
  const std::size_t nl = last.size();
  const double n = static_cast<double>(w.back().cols);
  head_.resize(static_cast<std::size_t>(cfg.classes) * nl);
  for (int o = 0; o < cfg.classes; ++o)
    for (std::size_t i = 0; i < nl; ++i)
      head_[o * nl + i] = static_cast<float>(hash_normal(cfg.seed ^ 0x4EADull, static_cast<std::uint64_t>(o), static_cast<std::uint64_t>(last[i])) / std::sqrt(n));
  head_bias_.assign(static_cast<std::size_t>(cfg.classes), 0.0f);
}

double Trainer::loss(const LabelledSet& data, std::int64_t row0, int batch, bool grad, int* correct) {
  const std::int64_t rows = data.features.rows;
  const int B = static_cast<int>(std::min<std::int64_t>(batch, rows - row0));
  if (B <= 0) throw InputError("loss: empty batch");
  const int C = cfg_.classes;
  eng_.forward(data.features, row0, B, bias_, cfg_.ymax);
  const auto& y = eng_.output();
  const std::size_t nl = eng_.plan().back().out.size();
  std::vector<float> z(static_cast<std::size_t>(B) * C, 0.0f);
  for (int o = 0; o < C; ++o)
    for (std::size_t i = 0; i < nl; ++i) {
      const float h = head_[o * nl + i];
      const float* yi = y.data() + i * B;
      for (int b = 0; b < B; ++b) z[static_cast<std::size_t>(b) * C + o] += h * yi[b];
    }
  eng_.allreduce_sum(z);
  double total = 0;
  int ok = 0;
  std::vector<float> dlog(static_cast<std::size_t>(B) * C);
  for (int b = 0; b < B; ++b) {
    float* zb = z.data() + static_cast<std::size_t>(b) * C;
    int arg = 0;
    for (int o = 0; o < C; ++o) {
      zb[o] += head_bias_[o];
      if (zb[o] > zb[arg]) arg = o;
    }
    const int label = data.labels[static_cast<std::size_t>(row0 + b)];
    if (label < 0 || label >= C) throw InputError("label " + std::to_string(label) + " outside [0, " + std::to_string(C) + ")");
    ok += arg == label;
    double sum = 0;
    for (int o = 0; o < C; ++o) sum += std::exp(static_cast<double>(zb[o] - zb[arg]));
    const double logz = zb[arg] + std::log(sum);
    total += logz - zb[label];
    for (int o = 0; o < C; ++o) dlog[static_cast<std::size_t>(b) * C + o] = static_cast<float>((std::exp(zb[o] - logz) - (o == label ? 1.0 : 0.0)) / B);
  }
  if (correct) *correct = ok;
  if (grad) {
    ghead_.assign(head_.size(), 0.0f);
    ghead_bias_.assign(static_cast<std::size_t>(C), 0.0f);
    std::vector<float> dy(nl * static_cast<std::size_t>(B), 0.0f);
    for (int o = 0; o < C; ++o) {
      for (int b = 0; b < B; ++b) ghead_bias_[o] += dlog[static_cast<std::size_t>(b) * C + o];
      for (std::size_t i = 0; i < nl; ++i) {
        const float* yi = y.data() + i * B;
        float* dyi = dy.data() + i * B;
        const float h = head_[o * nl + i];
        float s = 0;
        for (int b = 0; b < B; ++b) {
          const float d = dlog[static_cast<std::size_t>(b) * C + o];
          s += d * yi[b];
          dyi[b] += h * d;
        }
        ghead_[o * nl + i] = s;
      }
    }
    eng_.backward(dy, cfg_.ymax, gw_, gb_);
    if (!cfg_.bias_per_neuron) {
      std::vector<float> sums(gb_.size(), 0.0f);
      for (std::size_t k = 0; k < gb_.size(); ++k)
        for (float g : gb_[k]) sums[k] += g;
      eng_.allreduce_sum(sums);
      for (std::size_t k = 0; k < gb_.size(); ++k) std::fill(gb_[k].begin(), gb_[k].end(), sums[k]);
    }
  }
  return total / B;
}

void Trainer::step() {
  ++steps_;
  const float lr = cfg_.lr;
  float gmax = 0;  // largest |gradient| of this step (for update_path())
  for (std::size_t k = 0; k < gw_.size(); ++k) {
    auto& v = eng_.plan()[k].values;
    for (std::size_t e = 0; e < v.size(); ++e) v[e] -= lr * gw_[k][e], gmax = std::max(gmax, std::fabs(gw_[k][e]));
    for (std::size_t i = 0; i < bias_[k].size(); ++i) bias_[k][i] -= lr * gb_[k][i], gmax = std::max(gmax, std::fabs(gb_[k][i]));
  }
  for (std::size_t e = 0; e < head_.size(); ++e) head_[e] -= lr * ghead_[e], gmax = std::max(gmax, std::fabs(ghead_[e]));
  for (std::size_t o = 0; o < head_bias_.size(); ++o) head_bias_[o] -= lr * ghead_bias_[o], gmax = std::max(gmax, std::fabs(ghead_bias_[o]));
  update_path_ += static_cast<double>(lr) * gmax;
}

double Trainer::accuracy(const LabelledSet& data) {
  std::int64_t ok = 0;
  for (std::int64_t r = 0; r < data.features.rows; r += 256) {
    int c = 0;
    loss(data, r, 256, false, &c);
    ok += c;
  }
  return data.features.rows ? static_cast<double>(ok) / static_cast<double>(data.features.rows) : 0.0;
}

EpochStats Trainer::epoch(const LabelledSet& train, const LabelledSet& test) {
  EpochStats s;
  const auto t0 = std::chrono::steady_clock::now();
  std::int64_t ok = 0;
  double sum = 0;
  for (std::int64_t r = 0; r < train.features.rows; r += cfg_.batch) {
    int c = 0;
    const double l = loss(train, r, cfg_.batch, true, &c);
    s.batch_update_path.push_back(update_path_);
    step();
    s.batch_loss.push_back(l);
    sum += l;
    ok += c;
  }
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  s.mean_loss = s.batch_loss.empty() ? 0.0 : sum / static_cast<double>(s.batch_loss.size());
  s.train_acc = train.features.rows ? static_cast<double>(ok) / static_cast<double>(train.features.rows) : 0.0;
  s.test_acc = test.features.rows ? accuracy(test) : 0.0;
  return s;
}

double train_linear(const LabelledSet& train, const LabelledSet& test, int epochs, int batch, float lr, int classes) {
  const std::int64_t n = train.features.cols;
  const int C = classes;
  std::vector<float> w(static_cast<std::size_t>(C) * n, 0.0f), b(static_cast<std::size_t>(C), 0.0f);
  auto logits = [&](const Csr& x, std::int64_t r, std::vector<double>& z) {
    z.assign(static_cast<std::size_t>(C), 0.0);
    for (int o = 0; o < C; ++o) {
      double s = b[o];
      for (auto q = x.row_ptr[r]; q < x.row_ptr[r + 1]; ++q) s += static_cast<double>(w[o * n + x.col_idx[q]]) * x.values[q];
      z[o] = s;
    }
  };
  std::vector<double> z;
  std::vector<float> gw(w.size()), gb(b.size());
  for (int e = 0; e < epochs; ++e)
    for (std::int64_t r0 = 0; r0 < train.features.rows; r0 += batch) {
      const std::int64_t r1 = std::min(train.features.rows, r0 + batch);
      std::fill(gw.begin(), gw.end(), 0.0f);
      std::fill(gb.begin(), gb.end(), 0.0f);
      for (std::int64_t r = r0; r < r1; ++r) {
        logits(train.features, r, z);
        double mx = z[0];
        for (double v : z) mx = std::max(mx, v);
        double sum = 0;
        for (double v : z) sum += std::exp(v - mx);
        for (int o = 0; o < C; ++o) {
          const float d = static_cast<float>((std::exp(z[o] - mx) / sum - (o == train.labels[r] ? 1.0 : 0.0)) / static_cast<double>(r1 - r0));
          gb[o] += d;
          for (auto q = train.features.row_ptr[r]; q < train.features.row_ptr[r + 1]; ++q) gw[o * n + train.features.col_idx[q]] += d * train.features.values[q];
        }
      }
      for (std::size_t i = 0; i < w.size(); ++i) w[i] -= lr * gw[i];
      for (int o = 0; o < C; ++o) b[o] -= lr * gb[o];
    }
  std::int64_t ok = 0;
  for (std::int64_t r = 0; r < test.features.rows; ++r) {
    logits(test.features, r, z);
    int arg = 0;
    for (int o = 1; o < C; ++o)
      if (z[o] > z[arg]) arg = o;
    ok += arg == test.labels[r];
  }
  return test.features.rows ? static_cast<double>(ok) / static_cast<double>(test.features.rows) : 0.0;
}

}  // namespace spartan::sdnn
