#include "spartan/train/capture.h"

#include <fstream>

#include "spartan/common/error.h"
#include "spartan/trace/keys.h"

namespace spartan::train {

std::string cpu_device_name(int threads) {
  std::ifstream in("/proc/cpuinfo");
  std::string line, model = "unknown CPU";
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) model = line.substr(line.find_first_not_of(" \t", colon + 1));
      break;
    }
  }
  return "cpu: " + model + " (" + std::to_string(threads) + (threads == 1 ? " thread)" : " threads)");
}

trace::LayerInfo layer_info(const GemmLayer& layer, const std::string& name) {
  const Tensor& x = layer.input();
  const Tensor& y = layer.output_shape();
  trace::LayerInfo info;
  if (const auto* c = dynamic_cast<const Conv2d*>(&layer)) {
    info = trace::make_conv_layer(layer.id, name, x.n, x.c, x.h, x.w, c->cout, c->k, c->k, c->stride, c->pad,
                                  layer.next_relu != nullptr);
  } else if (const auto* f = dynamic_cast<const Linear*>(&layer)) {
    info = trace::make_fc_layer(layer.id, name, x.n, f->in, f->out, layer.next_relu != nullptr);
  } else {
    throw Error("trace capture: unknown GEMM layer type " + layer.kind(), 1);
  }
  const std::pair<GemmPass, trace::GemmShape*> passes[] = {{GemmPass::Forward, &info.fwd},
                                                           {GemmPass::BackwardData, &info.bwd_data},
                                                           {GemmPass::BackwardWeight, &info.bwd_weight}};
  for (const auto& [p, s] : passes) {
    const GemmShape ran = layer.shape(p);
    if (ran.M != s->M || ran.N != s->N || ran.K != s->K)
      throw Error("trace capture: layer " + name + " " + pass_name(p) + " GEMM ran as " + std::to_string(ran.M) + "x" +
                      std::to_string(ran.N) + "x" + std::to_string(ran.K) + ", trace format expects " +
                      std::to_string(s->M) + "x" + std::to_string(s->N) + "x" + std::to_string(s->K),
                  1);
  }
  (void)y;
  return info;
}

TraceCapture::TraceCapture(const CaptureOptions& opt, const Model& model)
    : opt_(opt), writer_(opt.path), names_(gemm_layer_names(model)) {
  if (opt_.every < 1) throw InputError("--capture-every must be >= 1");
  if (opt_.act_dtype != trace::DType::F32 && opt_.act_dtype != trace::DType::F16 && opt_.act_dtype != trace::DType::BF16)
    throw InputError("trace activation dtype must be F32, F16 or BF16");
}

void TraceCapture::on_capture(std::int64_t iteration, Model& model, const std::vector<GemmTiming>& timings) {
  const auto& gl = model.gemm_layers();
  // A record names one device for its times: CUDA-event times must come from a "cuda: ..." device and
  // steady_clock times from a CPU, else the replay would read GPU times as CPU ones or the reverse. Checked
  // before anything of this step is written.
  const std::string& gemm_device = opt_.gemm_device.empty() ? opt_.device : opt_.gemm_device;
  for (const GemmTiming& t : timings)
    if (t.device_timer != (gemm_device.rfind("cuda", 0) == 0))
      throw Error(std::string("trace capture: GEMM times measured with ") +
                      (t.device_timer ? "CUDA events" : "steady_clock") + " but the capture's GEMM device is '" +
                      gemm_device + "' (CaptureOptions::gemm_device)",
                  1);
  if (layers_.empty())
    for (std::size_t l = 0; l < gl.size(); ++l) layers_.push_back(layer_info(*gl[l], names_[l]));
  std::vector<std::uint16_t> half;
  for (std::size_t l = 0; l < gl.size(); ++l) {
    const GemmLayer& g = *gl[l];
    const Tensor& a = g.input();
    const std::string prefix = "it" + std::to_string(iteration) + "/L" + std::to_string(l) + "/";
    std::vector<std::int64_t> shape;
    if (g.kind() == "conv") shape = {a.n, a.c, a.h, a.w};
    else shape = {a.n, static_cast<std::int64_t>(a.per_sample())};
    if (opt_.act_dtype == trace::DType::F32) {
      writer_.add_tensor(prefix + trace::kinds::kAct, trace::DType::F32, shape, a.data(), a.numel() * sizeof(float));
    } else {
      half.resize(a.numel());
      const bool f16 = opt_.act_dtype == trace::DType::F16;
      for (std::size_t i = 0; i < a.numel(); ++i) half[i] = f16 ? trace::f32_to_f16(a.v[i]) : trace::f32_to_bf16(a.v[i]);
      writer_.add_tensor(prefix + trace::kinds::kAct, opt_.act_dtype, shape, half.data(), half.size() * 2);
    }
    if (g.next_relu) {
      // The zero pattern of the backward-data GEMM's sparse operand as it ran (not the ReLU's forward mask: a batch
      // norm between the layer and its ReLU makes the operand dense, a max-pool after the ReLU makes it sparser).
      const std::vector<std::uint8_t>& flags = g.bwd_operand_mask();
      const std::size_t n = static_cast<std::size_t>(g.output_shape().count());
      if (flags.size() != n)
        throw Error("trace capture: layer " + names_[l] + ": backward-data operand mask has " + std::to_string(flags.size()) +
                        " elements, output has " + std::to_string(n),
                    1);
      const auto packed = trace::pack_bits(flags.data(), flags.size());
      writer_.add_tensor(prefix + trace::kinds::kDzMask, trace::DType::U8, {static_cast<std::int64_t>(packed.size())},
                         packed.data(), packed.size());
    }
  }
  // GEMM times of this step, one record per layer.
  std::vector<trace::GemmTimes> rec(gl.size());
  for (std::size_t l = 0; l < gl.size(); ++l) {
    rec[l].iteration = iteration;
    rec[l].layer = static_cast<std::int64_t>(l);
    rec[l].device = gemm_device;
    rec[l].timer = "steady_clock";
    for (const GemmTiming& t : timings)
      if (t.layer == static_cast<int>(l) && t.device_timer) rec[l].timer = "cuda-events";
  }
  for (const GemmTiming& t : timings) {
    if (t.layer < 0 || static_cast<std::size_t>(t.layer) >= rec.size()) continue;
    trace::GemmTime& gt = t.pass == GemmPass::Forward ? rec[t.layer].fwd
                          : t.pass == GemmPass::BackwardData ? rec[t.layer].bwd_data
                                                             : rec[t.layer].bwd_weight;
    gt.dense_ms = t.dense_ms;
    if (t.tile_sparse) {
      gt.tile_sparse_ms = t.tile_kernel_ms;
      gt.compact_ms = t.tile_compact_ms;
      gt.path = t.tile_full_dense ? "one-sgemm" : "tiles";
    }
    gt.operand_density = 1.0 - t.operand_sparsity;
  }
  times_.insert(times_.end(), rec.begin(), rec.end());
  ++captures_;
}

void TraceCapture::finish(const TrainResult& result) {
  namespace k = trace::keys;
  writer_.set_metadata(k::kFormatVersion, trace::kFormatVersion);
  writer_.set_metadata(k::kWriter, opt_.writer);
  writer_.set_metadata(k::kModel, opt_.model);
  writer_.set_metadata(k::kDataset, opt_.dataset);
  writer_.set_metadata(k::kDevice, opt_.device);
  writer_.set_metadata(k::kSeed, std::to_string(opt_.seed));
  writer_.set_metadata(k::kBatch, std::to_string(opt_.batch));
  writer_.set_metadata(k::kCaptureEvery, std::to_string(opt_.every));
  writer_.set_metadata(k::kLayers, trace::layers_to_json(layers_));
  writer_.set_metadata(k::kGemmTimes, trace::gemm_times_to_json(times_));
  std::vector<trace::LayerSparsity> sp;
  for (const LayerSparsity& s : result.sparsity) {
    trace::LayerSparsity t;
    t.layer = s.layer;
    t.name = s.name;
    t.iterations = s.iterations;
    t.act_density = s.act_density;
    t.dz_mask_density = s.dz_mask_density;
    sp.push_back(std::move(t));
  }
  writer_.set_metadata(k::kSparsity, trace::sparsity_to_json(sp));
  writer_.finish();
}

}  // namespace spartan::train
