// Generates traces/samples/tiny-lenet5.sptrace: a small, deterministic, SYNTHETIC trace in the format of
// docs/trace-format.md (LeNet-5 geometry on 28x28 inputs, batch 2, iterations 0 and 100). Activations are
// ReLU-like (clustered non-negative values with a per-layer target density); GEMM times are a made-up
// roofline (device "synthetic: not measured"). For tests of trace consumers before a real run exists.
//   sptrace_sample OUT.sptrace            the LeNet-5 sample (traces/samples/tiny-lenet5.sptrace, ~50 KB)
//   sptrace_sample --micro OUT.sptrace    a ~3 KB trace (two small FC layers, one iteration): the seed of
//                                         the trace-reader fuzzer, small so that each execution is cheap
#include <cmath>
#include <cstdio>
#include <random>
#include <string>

#include "spartan/common/cli.h"
#include "spartan/trace/keys.h"
#include "spartan/trace/metadata.h"
#include "spartan/trace/sptrace.h"

using namespace spartan::trace;

namespace {
// mt19937's sequence is fixed by the standard (distributions are not): build floats from raw draws.
double unit(std::mt19937& rng) { return static_cast<double>(rng() >> 8) * (1.0 / 16777216.0); }

// ReLU-like activation: zero with probability ~(1 - density), clustered along the innermost axis.
std::vector<float> relu_like(std::size_t n, double density, std::mt19937& rng) {
  std::vector<float> v(n);
  bool on = unit(rng) < density;
  for (std::size_t i = 0; i < n; ++i) {
    if (unit(rng) < 0.25) on = unit(rng) < density;  // runs of ~4 elements
    v[i] = on ? static_cast<float>(0.05 + 2.0 * unit(rng)) : 0.0f;
  }
  return v;
}
}  // namespace

int main(int argc, char** argv) {
  return spartan::run_cli("sptrace_sample", [&]() -> int {
    const bool micro = argc == 3 && std::string(argv[1]) == "--micro";
    if (argc != 2 && !micro) throw spartan::InputError("usage: sptrace_sample [--micro] OUT.sptrace");
    const std::int64_t batch = micro ? 1 : 2;
    const std::vector<LayerInfo> layers =
        micro ? std::vector<LayerInfo>{make_fc_layer(0, "fc1", batch, 16, 8, true),
                                       make_fc_layer(1, "fc2", batch, 8, 4, false)}
              : std::vector<LayerInfo>{
                    make_conv_layer(0, "conv1", batch, 1, 28, 28, 6, 5, 5, 1, 2, true),
                    make_conv_layer(1, "conv2", batch, 6, 14, 14, 16, 5, 5, 1, 0, true),
                    make_fc_layer(2, "fc1", batch, 400, 120, true),
                    make_fc_layer(3, "fc2", batch, 120, 84, true),
                    make_fc_layer(4, "fc3", batch, 84, 10, false),
                };
    const double act_density[2][5] = {{0.50, 0.62, 0.55, 0.48, 0.52}, {0.50, 0.41, 0.30, 0.22, 0.35}};
    const double mask_density[2][5] = {{0.60, 0.55, 0.50, 0.52, 0}, {0.42, 0.31, 0.24, 0.36, 0}};
    const std::int64_t iterations[2] = {0, 100};
    const int n_iterations = micro ? 1 : 2;
    std::mt19937 rng(20211001);

    TraceWriter w(argv[micro ? 2 : 1]);
    w.set_metadata(keys::kFormatVersion, kFormatVersion);
    w.set_metadata(keys::kWriter, "sptrace_sample (traces/samples/make_sample.cpp)");
    w.set_metadata(keys::kModel, micro ? "micro-mlp" : "lenet5");
    w.set_metadata(keys::kDataset, "synthetic (ReLU-like random activations, not a real run)");
    w.set_metadata(keys::kDevice, "synthetic: not measured");
    w.set_metadata(keys::kSeed, "20211001");
    w.set_metadata(keys::kBatch, std::to_string(batch));
    w.set_metadata(keys::kCaptureEvery, "100");
    w.set_metadata(keys::kLayers, layers_to_json(layers));

    std::vector<GemmTimes> times;
    std::vector<LayerSparsity> sparsity(layers.size());
    for (int i = 0; i < n_iterations; ++i) {
      for (std::size_t l = 0; l < layers.size(); ++l) {
        const LayerInfo& L = layers[l];
        std::size_t n_in = 1, n_out = 1;
        for (auto d : L.input) n_in *= static_cast<std::size_t>(d);
        for (auto d : L.output) n_out *= static_cast<std::size_t>(d);
        std::vector<float> act = relu_like(n_in, act_density[i][l], rng);
        std::size_t nz = 0;
        for (float x : act) nz += x != 0.0f;
        const std::string base = "it" + std::to_string(iterations[i]) + "/L" + std::to_string(l) + "/";
        if (micro && l == 1) {  // the micro trace also stores one activation as F16 (the --trace-dtype path)
          std::vector<std::uint16_t> h(act.size());
          for (std::size_t e = 0; e < act.size(); ++e) h[e] = f32_to_f16(act[e]);
          w.add_tensor(base + kinds::kAct, DType::F16, L.input, h.data(), h.size() * sizeof(std::uint16_t));
        } else {
          w.add_tensor(base + kinds::kAct, DType::F32, L.input, act.data(), act.size() * sizeof(float));
        }
        LayerSparsity& sp = sparsity[l];
        sp.layer = L.index, sp.name = L.name;
        sp.iterations.push_back(iterations[i]);
        sp.act_density.push_back(static_cast<double>(nz) / static_cast<double>(n_in));
        if (L.relu_after) {
          std::vector<std::uint8_t> flags(n_out);
          std::size_t ones = 0;
          for (auto& f : flags) ones += (f = unit(rng) < mask_density[i][l]);
          const auto packed = pack_bits(flags.data(), flags.size());
          w.add_tensor(base + kinds::kDzMask, DType::U8, {static_cast<std::int64_t>(packed.size())}, packed.data(),
                       packed.size());
          sp.dz_mask_density.push_back(static_cast<double>(ones) / static_cast<double>(n_out));
        }
        // Made-up roofline: 1 TFLOP/s dense; tile-sparse scales with density plus 20% overhead.
        GemmTimes t;
        t.iteration = iterations[i], t.layer = L.index, t.device = "synthetic: not measured", t.timer = "none";
        auto ms = [](const GemmShape& g) { return 2.0 * g.M * g.N * g.K / 1e12 * 1e3; };
        const double d_act = sp.act_density.back();
        const double d_dz = L.relu_after ? sp.dz_mask_density.back() : 1.0;
        t.fwd = {ms(L.fwd), ms(L.fwd) * (0.2 + d_act), std::nullopt};
        t.bwd_data = {ms(L.bwd_data), ms(L.bwd_data) * (0.2 + d_dz), std::nullopt};
        t.bwd_weight = {ms(L.bwd_weight), ms(L.bwd_weight) * (0.2 + d_act), std::nullopt};
        times.push_back(t);
      }
    }
    w.set_metadata(keys::kGemmTimes, gemm_times_to_json(times));
    w.set_metadata(keys::kSparsity, sparsity_to_json(sparsity));
    w.finish();
    return 0;
  });
}
