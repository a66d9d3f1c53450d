// Activation trace writer (see trace_out.h), following docs/trace-format.md: body layer k (0-based) is an FC
// layer whose `act` is its input (layer 0: the features), with the clipped-ReLU mask of its output as
// `dz_mask`; the softmax head is the last FC layer (no ReLU after it).
#include "trace_out.h"

#include <omp.h>

#include <fstream>
#include <sstream>

#include "spartan/common/build_info.h"
#include "spartan/common/error.h"
#ifdef SPARTAN_SDNN_HAVE_TRACE
#include "spartan/trace/keys.h"
#include "spartan/trace/sptrace.h"
#endif

namespace spartan::sdnn::cli {

#ifdef SPARTAN_SDNN_HAVE_TRACE
namespace {
std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const auto p = line.find(':');
      if (p != std::string::npos) return line.substr(p + 2);
    }
  return "unknown";
}
std::string fc_json(int index, const std::string& name, bool relu, std::int64_t batch, std::int64_t k, std::int64_t n, std::int64_t nnz) {
  std::ostringstream o;
  o << "{\"index\":" << index << ",\"name\":\"" << name << "\",\"type\":\"fc\",\"relu_after\":" << (relu ? "true" : "false") << ",\"input\":[" << batch
    << "," << k << "],\"output\":[" << batch << "," << n << "],\"im2col\":{\"C\":" << k
    << ",\"H\":1,\"W\":1,\"KH\":1,\"KW\":1,\"stride\":1,\"pad\":0,\"OH\":1,\"OW\":1},\"gemm\":{\"fwd\":{\"M\":" << batch << ",\"N\":" << n << ",\"K\":" << k
    << "},\"bwd_data\":{\"M\":" << batch << ",\"N\":" << k << ",\"K\":" << n << "},\"bwd_weight\":{\"M\":" << k << ",\"N\":" << n << ",\"K\":" << batch
    << "}},\"weight_nnz\":" << nnz << "}";
  return o.str();
}
}  // namespace
#endif

void write_activation_trace(const std::string& path, Trainer& tr, const LabelledSet& data, int batch, bool write, std::int64_t iteration,
                            std::uint64_t seed, const std::string& model) {
#ifdef SPARTAN_SDNN_HAVE_TRACE
  namespace T = spartan::trace;
  auto& eng = tr.engine();
  const std::int64_t rows = std::min<std::int64_t>(batch, data.features.rows);
  tr.loss(data, 0, static_cast<int>(rows), false);
  const std::int64_t n = data.features.cols;
  const int L = eng.layers();
  std::vector<Csr> outs;
  for (int k = 0; k < L; ++k) outs.push_back(eng.gather_output(rows, k));  // collective
  if (!write) return;
  T::TraceWriter w(path);
  std::int64_t nnz_total = 0;
  std::string layers = "[";
  for (int k = 0; k < L; ++k) {
    const std::int64_t nnz = tr.global_nnz(k);
    nnz_total += nnz;
    layers += fc_json(k, "sparse" + std::to_string(k + 1), true, rows, n, n, nnz) + ",";
  }
  layers += fc_json(L, "head", false, rows, n, tr.classes(), n * tr.classes()) + "]";
  w.set_metadata(T::keys::kFormatVersion, T::kFormatVersion);
  w.set_metadata(T::keys::kWriter, std::string("spartan-sdnn 0.1.0 (commit ") + spartan::build_info().commit + ")");
  w.set_metadata(T::keys::kModel, model);
  w.set_metadata(T::keys::kDataset, "fashion-mnist/train");
  w.set_metadata(T::keys::kDevice, "cpu: " + cpu_name() + " (" + std::to_string(omp_get_max_threads()) + " threads)");
  w.set_metadata(T::keys::kSeed, std::to_string(seed));
  w.set_metadata(T::keys::kBatch, std::to_string(rows));
  w.set_metadata(T::keys::kLayers, layers);
  auto dense = [&](const Csr& y) {
    std::vector<float> d(static_cast<std::size_t>(rows * n), 0.0f);
    for (std::int64_t r = 0; r < rows && r < y.rows; ++r)
      for (auto q = y.row_ptr[r]; q < y.row_ptr[r + 1]; ++q) d[static_cast<std::size_t>(r * n + y.col_idx[q])] = y.values[q];
    return d;
  };
  std::vector<float> act(static_cast<std::size_t>(rows * n), 0.0f);
  for (std::int64_t r = 0; r < rows; ++r)
    for (auto q = data.features.row_ptr[r]; q < data.features.row_ptr[r + 1]; ++q) act[static_cast<std::size_t>(r * n + data.features.col_idx[q])] = data.features.values[q];
  const std::string it = "it" + std::to_string(iteration) + "/L";
  for (int k = 0; k <= L; ++k) {
    w.add_tensor(it + std::to_string(k) + "/" + T::kinds::kAct, T::DType::F32, {rows, n}, act.data(), act.size() * sizeof(float));
    if (k == L) break;
    act = dense(outs[k]);
    std::vector<std::uint8_t> mask(act.size());
    for (std::size_t e = 0; e < act.size(); ++e) mask[e] = act[e] > 0.0f && act[e] < tr.ymax();
    const auto packed = T::pack_bits(mask.data(), mask.size());
    w.add_tensor(it + std::to_string(k) + "/" + T::kinds::kDzMask, T::DType::U8, {static_cast<std::int64_t>(packed.size())}, packed.data(), packed.size());
  }
  w.finish();
  (void)nnz_total;
#else
  (void)path, (void)tr, (void)data, (void)batch, (void)write, (void)iteration, (void)seed, (void)model;
  throw InputError("--trace: this build has no trace library (traces/ module missing)");
#endif
}

}  // namespace spartan::sdnn::cli
