// Shared-memory sparse DNN inference (see infer.h).
#include "spartan/sdnn/infer.h"

#include <omp.h>

#include <algorithm>
#include <cmath>

#include "spartan/common/error.h"

namespace spartan::sdnn {

std::vector<Csr> load_weights(const std::string& dir, int layers) {
  if (layers < 1) throw InputError("--layers must be >= 1, got " + std::to_string(layers));
  std::vector<Csr> w(static_cast<std::size_t>(layers));
  std::vector<std::string> files(static_cast<std::size_t>(layers));
  std::vector<bool> inferred(static_cast<std::size_t>(layers));
  // A TSV layer file has no header: its size is inferred from its largest indices. A layer is N x N, so a TSV
  // layer takes N from the largest index of any layer (a MatrixMarket layer's stated N, else the largest row
  // or column index of the TSV layers): a neuron with no outgoing edge in one layer (an empty last row) made
  // that layer (N - 1) x N and was refused (thirty-seventh session's review). A neuron with no edge in any layer
  // cannot be seen in TSV files (use MatrixMarket, whose header states N).
  std::int64_t n_tsv = 0;
  for (int k = 0; k < layers; ++k) {
    files[k] = find_layer_file(dir, k + 1);
    w[k] = read_matrix(files[k]);
    const std::string& f = files[k];
    inferred[k] = f.size() >= 4 && (f.compare(f.size() - 4, 4, ".tsv") == 0 || (f.size() >= 7 && f.compare(f.size() - 7, 7, ".tsv.gz") == 0));
    n_tsv = std::max({n_tsv, w[k].rows, w[k].cols});
  }
  for (int k = 0; k < layers; ++k)
    if (!inferred[k]) n_tsv = w[k].rows;  // a stated size wins (and is checked below)
  for (int k = 0; k < layers; ++k) {
    const std::string& f = files[k];
    if (inferred[k] && w[k].rows <= n_tsv && w[k].cols <= n_tsv) {
      w[k].row_ptr.resize(static_cast<std::size_t>(n_tsv) + 1, w[k].row_ptr.back());
      w[k].rows = w[k].cols = n_tsv;
    }
    if (w[k].rows != w[k].cols) throw InputError(f + ": weight matrix is " + std::to_string(w[k].rows) + " x " + std::to_string(w[k].cols) + ", expected square");
    if (k > 0 && w[k].rows != w[0].rows) throw InputError(f + ": layer has " + std::to_string(w[k].rows) + " neurons, layer 1 has " + std::to_string(w[0].rows));
  }
  return w;
}

Csr load_features(const std::string& path, std::int64_t neurons) {
  Csr y = read_matrix(path, 0, neurons);
  if (neurons > 0 && y.cols != neurons)
    throw InputError(path + ": features have " + std::to_string(y.cols) + " columns, the network has " + std::to_string(neurons) + " neurons");
  return y;
}

namespace {
constexpr double kParallelWork = 2.0e6;  // multiply-adds (about 1-2 ms on one core)
struct Chunk {
  std::vector<std::int32_t> cols;
  std::vector<float> vals;
  std::vector<std::int64_t> row_nnz;
};
}  // namespace

Csr layer_forward(const Csr& y, const Csr& w, float bias, float ymax) {
  if (y.cols != w.rows) throw InputError("layer_forward: Y has " + std::to_string(y.cols) + " columns, W has " + std::to_string(w.rows) + " rows");
  const std::int64_t rows = y.rows, n = w.cols;
  constexpr std::int64_t kChunkRows = 32;
  const std::int64_t nchunks = (rows + kChunkRows - 1) / kChunkRows;
  std::vector<Chunk> chunks(static_cast<std::size_t>(nchunks));
  // Like GraphBLAS, use threads only when there is enough work to amortise the fork/join (an oversubscribed
  // machine makes every barrier cost a time slice): estimated multiply-adds = nnz(Y) x mean nnz per W row.
  const double est_work = static_cast<double>(y.nnz()) * static_cast<double>(w.nnz()) / static_cast<double>(std::max<std::int64_t>(1, w.rows));
  const bool parallel = est_work > kParallelWork;
#pragma omp parallel if (parallel)
  {
    std::vector<float> acc(static_cast<std::size_t>(n), 0.0f);
    std::vector<unsigned char> mark(static_cast<std::size_t>(n), 0);
    std::vector<std::int32_t> touched;
    touched.reserve(static_cast<std::size_t>(n));
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t c = 0; c < nchunks; ++c) {
      Chunk& ch = chunks[c];
      const std::int64_t r0 = c * kChunkRows, r1 = std::min(rows, r0 + kChunkRows);
      ch.row_nnz.assign(static_cast<std::size_t>(r1 - r0), 0);
      for (std::int64_t r = r0; r < r1; ++r) {
        const auto p0 = y.row_ptr[r], p1 = y.row_ptr[r + 1];
        if (p0 == p1) {
          ch.row_nnz[r - r0] = static_cast<std::int64_t>(ch.cols.size());
          continue;
        }
        std::int64_t work = 0;
        for (auto p = p0; p < p1; ++p) work += w.row_ptr[y.col_idx[p] + 1] - w.row_ptr[y.col_idx[p]];
        if (work * 2 >= n) {
          // Dense path: branch-free scatter, then one ordered scan of the accumulator.
          for (auto p = p0; p < p1; ++p) {
            const float yv = y.values[p];
            const auto j = y.col_idx[p];
            const auto q1 = w.row_ptr[j + 1];
            for (auto q = w.row_ptr[j]; q < q1; ++q) {
              const auto col = w.col_idx[q];
              acc[col] += yv * w.values[q];
              mark[col] = 1;
            }
          }
          for (std::int64_t col = 0; col < n; ++col) {
            if (!mark[col]) continue;
            const float v = acc[col] + bias;
            acc[col] = 0.0f;
            mark[col] = 0;
            if (v > 0.0f) {
              ch.cols.push_back(static_cast<std::int32_t>(col));
              ch.vals.push_back(std::min(v, ymax));
            }
          }
        } else {
          // Sparse path: remember the touched columns, sort them.
          touched.clear();
          for (auto p = p0; p < p1; ++p) {
            const float yv = y.values[p];
            const auto j = y.col_idx[p];
            for (auto q = w.row_ptr[j]; q < w.row_ptr[j + 1]; ++q) {
              const auto col = w.col_idx[q];
              if (!mark[col]) {
                mark[col] = 1;
                touched.push_back(col);
              }
              acc[col] += yv * w.values[q];
            }
          }
          std::sort(touched.begin(), touched.end());
          for (auto col : touched) {
            const float v = acc[col] + bias;
            acc[col] = 0.0f;
            mark[col] = 0;
            if (v > 0.0f) {
              ch.cols.push_back(col);
              ch.vals.push_back(std::min(v, ymax));
            }
          }
        }
        ch.row_nnz[r - r0] = static_cast<std::int64_t>(ch.cols.size());
      }
    }
  }
  Csr out;
  out.rows = rows;
  out.cols = n;
  out.row_ptr.assign(static_cast<std::size_t>(rows) + 1, 0);
  std::vector<std::int64_t> base(static_cast<std::size_t>(nchunks) + 1, 0);
  for (std::int64_t c = 0; c < nchunks; ++c) base[c + 1] = base[c] + static_cast<std::int64_t>(chunks[c].cols.size());
  out.col_idx.resize(static_cast<std::size_t>(base[nchunks]));
  out.values.resize(static_cast<std::size_t>(base[nchunks]));
#pragma omp parallel for schedule(static) if (parallel)
  for (std::int64_t c = 0; c < nchunks; ++c) {
    const Chunk& ch = chunks[c];
    std::copy(ch.cols.begin(), ch.cols.end(), out.col_idx.begin() + base[c]);
    std::copy(ch.vals.begin(), ch.vals.end(), out.values.begin() + base[c]);
    for (std::size_t i = 0; i < ch.row_nnz.size(); ++i) out.row_ptr[c * kChunkRows + static_cast<std::int64_t>(i) + 1] = base[c] + ch.row_nnz[i];
  }
  return out;
}

Csr infer(const Csr& y0, const std::vector<Csr>& weights, float bias, float ymax) {
  Csr y = y0;
  for (const auto& w : weights) y = layer_forward(y, w, bias, ymax);
  return y;
}

std::vector<std::int64_t> categories(const Csr& y) {
  std::vector<std::int64_t> c;
  for (std::int64_t r = 0; r < y.rows; ++r)
    if (y.row_ptr[r + 1] > y.row_ptr[r]) c.push_back(r);
  return c;
}

double max_abs_difference(const Csr& a, const Csr& b) {
  if (a.rows != b.rows || a.cols != b.cols) throw InputError("max_abs_difference: shapes differ");
  std::vector<double> row(static_cast<std::size_t>(a.cols), 0.0);
  double m = 0;
  for (std::int64_t r = 0; r < a.rows; ++r) {
    for (auto q = a.row_ptr[r]; q < a.row_ptr[r + 1]; ++q) row[static_cast<std::size_t>(a.col_idx[q])] += a.values[q];
    for (auto q = b.row_ptr[r]; q < b.row_ptr[r + 1]; ++q) row[static_cast<std::size_t>(b.col_idx[q])] -= b.values[q];
    for (const Csr* x : {&a, &b})
      for (auto q = x->row_ptr[r]; q < x->row_ptr[r + 1]; ++q) {
        double& v = row[static_cast<std::size_t>(x->col_idx[q])];
        const double d = std::fabs(v);
        if (d > m || std::isnan(d)) m = d;  // a NaN difference makes (and keeps) the result NaN: no check passes it
        v = 0.0;
      }
  }
  return m;
}

std::int64_t total_edges(const std::vector<Csr>& weights) {
  std::int64_t e = 0;
  for (const auto& w : weights) e += w.nnz();
  return e;
}

double throughput_image_edges_per_s(std::int64_t images, std::int64_t edges, double secs) {
  if (images <= 0 || !(secs > 0)) return 0.0;
  return static_cast<double>(images) * static_cast<double>(edges) / secs;
}

}  // namespace spartan::sdnn
