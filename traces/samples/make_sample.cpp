// Generates traces/samples/tiny-lenet5.sptrace: a small, deterministic, SYNTHETIC trace in the format of
// docs/trace-format.md (LeNet-5 geometry on 28x28 inputs, batch 2, iterations 0 and 100). Activations are
// ReLU-like (clustered non-negative values with a per-layer target density); GEMM times are a made-up
// roofline (device "synthetic: not measured"). For tests of trace consumers before a real run exists.
//   sptrace_sample OUT.sptrace            the LeNet-5 sample (traces/samples/tiny-lenet5.sptrace, ~50 KB)
//   sptrace_sample --micro OUT.sptrace    a ~3 KB trace (two small FC layers, one iteration): the seed of
//                                         the trace-reader fuzzer, small so that each execution is cheap
//   sptrace_sample --imagenet BATCH DENSITY OUT.sptrace
//                                         the inputs of 13 ImageNet conv layers of the Spartan paper's networks
//                                         (AlexNet, VGG-16, ResNet-18 at 224x224; bench-gemm's layers plus VGG-16
//                                         conv1_1 and conv1_2), one iteration, ReLU-like values at DENSITY (the
//                                         image into conv1_1: all non-zero): real layer sizes for replaying the
//                                         units at the paper's scale (docs/reproduce-paper.md)
#include <cmath>
#include <cstdlib>
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

std::size_t elements(const std::vector<std::int64_t>& shape) {
  std::size_t n = 1;
  for (auto d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

// The metadata keys every sample writes (the layers' GEMM times and sparsity are added after the tensors).
void set_sample_metadata(TraceWriter& w, const std::string& writer, const std::string& model,
                         const std::string& dataset, std::int64_t batch, const std::string& capture_every,
                         const std::vector<LayerInfo>& layers) {
  w.set_metadata(keys::kFormatVersion, kFormatVersion);
  w.set_metadata(keys::kWriter, writer);
  w.set_metadata(keys::kModel, model);
  w.set_metadata(keys::kDataset, dataset);
  w.set_metadata(keys::kDevice, "synthetic: not measured");
  w.set_metadata(keys::kSeed, "20211001");
  w.set_metadata(keys::kBatch, std::to_string(batch));
  w.set_metadata(keys::kCaptureEvery, capture_every);
  w.set_metadata(keys::kLayers, layers_to_json(layers));
}

// Writes `base`dz_mask: n_out random flags, each 1 with probability `density`; returns the fraction of ones.
double add_dz_mask(TraceWriter& w, const std::string& base, std::size_t n_out, double density, std::mt19937& rng) {
  std::vector<std::uint8_t> flags(n_out);
  std::size_t ones = 0;
  for (auto& f : flags) ones += (f = unit(rng) < density);
  const auto packed = pack_bits(flags.data(), flags.size());
  w.add_tensor(base + kinds::kDzMask, DType::U8, {static_cast<std::int64_t>(packed.size())}, packed.data(),
               packed.size());
  return static_cast<double>(ones) / static_cast<double>(n_out);
}

// Made-up roofline of a GEMM: 1 TFLOP/s.
double roofline_ms(const GemmShape& g) { return 2.0 * g.M * g.N * g.K / 1e12 * 1e3; }
}  // namespace

// One conv layer of the ImageNet networks: input [batch, cin, hw, hw], kernel k x k, stride 1, pad k / 2.
struct ImageNetConv {
  const char* name;
  std::int64_t cin, hw, cout, k;
};

// The layers of sw/gemm/bench/shapes.cpp (torchvision AlexNet, VGG-16, ResNet-18; the input of each is the ReLU
// output of the layer before it in its network, after pooling where the network pools), plus VGG-16 conv1_2 (the
// largest) and, first, VGG-16 conv1_1, whose input is the image (the replay counts layer 0's input as no ReLU
// output: the previous layer's relu_after decides).
int write_imagenet(std::int64_t batch, double density, const std::string& out) {
  const ImageNetConv convs[] = {
      {"vgg16.conv1_1", 3, 224, 64, 3},
      {"alexnet.conv2", 64, 27, 192, 5},      {"alexnet.conv3", 192, 13, 384, 3}, {"alexnet.conv5", 256, 13, 256, 3},
      {"vgg16.conv1_2", 64, 224, 64, 3},      {"vgg16.conv2_2", 128, 112, 128, 3}, {"vgg16.conv3_2", 256, 56, 256, 3},
      {"vgg16.conv4_2", 512, 28, 512, 3},     {"vgg16.conv5_2", 512, 14, 512, 3}, {"resnet18.conv2_x", 64, 56, 64, 3},
      {"resnet18.conv3_x", 128, 28, 128, 3},  {"resnet18.conv4_x", 256, 14, 256, 3},
      {"resnet18.conv5_x", 512, 7, 512, 3},
  };
  std::vector<LayerInfo> layers;
  for (const ImageNetConv& c : convs)
    layers.push_back(make_conv_layer(static_cast<std::int64_t>(layers.size()), c.name, batch, c.cin, c.hw, c.hw, c.cout,
                                     c.k, c.k, 1, c.k / 2, true));
  std::mt19937 rng(20211001);
  TraceWriter w(out);
  set_sample_metadata(w, "sptrace_sample --imagenet (traces/samples/make_sample.cpp)",
                      "imagenet-conv-layers (AlexNet, VGG-16, ResNet-18 conv layer inputs at 224x224)",
                      "synthetic (ReLU-like random activations at density " + std::to_string(density) +
                          ", not a real run)",
                      batch, "1", layers);
  std::vector<GemmTimes> times;
  std::vector<LayerSparsity> sparsity(layers.size());
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const LayerInfo& L = layers[l];
    const std::size_t n_in = elements(L.input);
    const std::vector<float> act = relu_like(n_in, l == 0 ? 1.0 : density, rng);
    std::size_t nz = 0;
    for (float x : act) nz += x != 0.0f;
    const std::string base = "it0/L" + std::to_string(l) + "/";
    w.add_tensor(base + kinds::kAct, DType::F32, L.input, act.data(), act.size() * sizeof(float));
    const double dz_density = add_dz_mask(w, base, elements(L.output), density, rng);
    LayerSparsity& sp = sparsity[l];
    sp.layer = L.index, sp.name = L.name;
    sp.iterations.push_back(0);
    sp.act_density.push_back(static_cast<double>(nz) / static_cast<double>(n_in));
    sp.dz_mask_density.push_back(dz_density);
    // No GEMM was run: dense times from a made-up 1 TFLOP/s roofline, no tile-sparse time (the replay then
    // reports no GEMM speedup for these layers).
    GemmTimes t;
    t.iteration = 0, t.layer = L.index, t.device = "synthetic: not measured", t.timer = "none";
    t.fwd = {roofline_ms(L.fwd), std::nullopt, std::nullopt};
    t.bwd_data = {roofline_ms(L.bwd_data), std::nullopt, std::nullopt};
    t.bwd_weight = {roofline_ms(L.bwd_weight), std::nullopt, std::nullopt};
    times.push_back(t);
  }
  w.set_metadata(keys::kGemmTimes, gemm_times_to_json(times));
  w.set_metadata(keys::kSparsity, sparsity_to_json(sparsity));
  w.finish();
  return 0;
}

int main(int argc, char** argv) {
  return spartan::run_cli("sptrace_sample", [&]() -> int {
    const char* const usage =
        "usage: sptrace_sample [--micro] OUT.sptrace\n"
        "       sptrace_sample --imagenet BATCH DENSITY OUT.sptrace\n"
        "  writes the committed sample trace (traces/samples/README.md): lenet5-shaped, two iterations; --micro: the\n"
        "  ~2 KB fuzz seed; --imagenet: 13 ImageNet conv layers' inputs at BATCH (1..64) and DENSITY (0..1]\n";
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--help" || a == "-h") {
        std::fputs(usage, stdout);
        return 0;
      }
    }
    // An option that is not one of ours, or an output path that looks like one (a typo of --micro would
    // otherwise become the name of the file written).
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (!a.empty() && a[0] == '-' && a != "--micro" && a != "--imagenet")
        throw spartan::InputError("unknown option '" + a + "' (see --help)");
      if (a.empty()) throw spartan::InputError("empty argument (see --help)");
    }
    if (argc >= 2 && std::string(argv[1]) == "--imagenet") {
      if (argc != 5 || argv[4][0] == '-')
        throw spartan::InputError("usage: sptrace_sample --imagenet BATCH DENSITY OUT.sptrace (see --help)");
      char* end = nullptr;
      const long long batch = std::strtoll(argv[2], &end, 10);
      if (end == argv[2] || *end) throw spartan::InputError(std::string("BATCH: not an integer: ") + argv[2]);
      const double density = std::strtod(argv[3], &end);
      if (end == argv[3] || *end) throw spartan::InputError(std::string("DENSITY: not a number: ") + argv[3]);
      if (batch < 1 || batch > 64) throw spartan::InputError("BATCH must be 1 .. 64");
      if (!(density > 0.0 && density <= 1.0)) throw spartan::InputError("DENSITY must be in (0, 1]");
      return write_imagenet(batch, density, argv[4]);
    }
    const bool micro = argc == 3 && std::string(argv[1]) == "--micro";
    if ((argc != 2 && !micro) || argv[micro ? 2 : 1][0] == '-')
      throw spartan::InputError("usage: sptrace_sample [--micro] OUT.sptrace (see --help)");
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
    set_sample_metadata(w, "sptrace_sample (traces/samples/make_sample.cpp)", micro ? "micro-mlp" : "lenet5",
                        "synthetic (ReLU-like random activations, not a real run)", batch, "100", layers);

    std::vector<GemmTimes> times;
    std::vector<LayerSparsity> sparsity(layers.size());
    for (int i = 0; i < n_iterations; ++i) {
      for (std::size_t l = 0; l < layers.size(); ++l) {
        const LayerInfo& L = layers[l];
        const std::size_t n_in = elements(L.input);
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
        if (L.relu_after)
          sp.dz_mask_density.push_back(add_dz_mask(w, base, elements(L.output), mask_density[i][l], rng));
        // Made-up roofline: 1 TFLOP/s dense; tile-sparse scales with density plus 20% overhead.
        GemmTimes t;
        t.iteration = iterations[i], t.layer = L.index, t.device = "synthetic: not measured", t.timer = "none";
        const auto ms = roofline_ms;
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
