// Activation trace writer (see trace_out.h).
#include "trace_out.h"

#include "spartan/common/error.h"
#ifdef SPARTAN_SDNN_HAVE_TRACE
#include "spartan/trace/sptrace.h"
#endif

namespace spartan::sdnn::cli {

void write_activation_trace(const std::string& path, Trainer& tr, const LabelledSet& data, int batch, bool write) {
#ifdef SPARTAN_SDNN_HAVE_TRACE
  auto& eng = tr.engine();
  const std::int64_t rows = std::min<std::int64_t>(batch, data.features.rows);
  tr.loss(data, 0, static_cast<int>(rows), false);
  const std::int64_t n = data.features.cols;
  std::unique_ptr<trace::TraceWriter> w;
  if (write) {
    w = std::make_unique<trace::TraceWriter>(path);
    w->set_metadata("source", "spartan-sdnn train");
    w->set_metadata("layer_rule", "Y = min(max(Y W + b, 0), 32), bias on structural non-zeros");
    w->set_metadata("neurons", std::to_string(n));
    w->set_metadata("layers", std::to_string(eng.layers()));
    w->set_metadata("batch", std::to_string(rows));
  }
  auto add = [&](int layer, const Csr& y) {
    if (!write) return;
    std::vector<float> dense(static_cast<std::size_t>(rows * n), 0.0f);
    for (std::int64_t r = 0; r < rows && r < y.rows; ++r)
      for (auto q = y.row_ptr[r]; q < y.row_ptr[r + 1]; ++q) dense[static_cast<std::size_t>(r * n + y.col_idx[q])] = y.values[q];
    w->add_tensor("it0/L" + std::to_string(layer) + "/act", trace::DType::F32, {rows, n}, dense.data(), dense.size() * sizeof(float));
  };
  Csr in;
  if (write) {
    std::vector<Triple> t;
    for (std::int64_t r = 0; r < rows; ++r)
      for (auto q = data.features.row_ptr[r]; q < data.features.row_ptr[r + 1]; ++q) t.push_back({r, data.features.col_idx[q], data.features.values[q]});
    in = csr_from_triples(rows, n, std::move(t));
  }
  add(0, in);
  for (int k = 0; k < eng.layers(); ++k) add(k + 1, eng.gather_output(rows, k));
  if (write) w->finish();
#else
  (void)path, (void)tr, (void)data, (void)batch, (void)write;
  throw InputError("--trace: this build has no trace library (traces/ module missing)");
#endif
}

}  // namespace spartan::sdnn::cli
