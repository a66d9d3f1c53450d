// Distributed forward/backward engine (see dist.h).
#include "spartan/sdnn/dist.h"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "spartan/common/error.h"

namespace spartan::sdnn {

DistEngine::DistEngine(const std::vector<Csr>& w, const Partition& p, int rank, int size, bool use_mpi)
    : rank_(rank), size_(size), mpi_(use_mpi) {
  if (const char* f = std::getenv("SPARTAN_SDNN_TEST_FAULT")) {
    if (std::strcmp(f, "drop-halo") == 0) fault_ = Fault::kDropHalo;
    else if (std::strcmp(f, "drop-fold") == 0) fault_ = Fault::kDropFold;
    else if (*f) throw InputError(std::string("SPARTAN_SDNN_TEST_FAULT: unknown fault '") + f + "' (expected drop-halo or drop-fold)");
    // A leaked variable must not corrupt a real run silently.
    if (fault_ != Fault::kNone && rank == 0 && size > 1)
      std::fprintf(stderr, "spartan-sdnn: warning: SPARTAN_SDNN_TEST_FAULT=%s: the distributed engine is wrong on purpose (a test hook)\n", f);
  }
  if (p.parts != size) throw InputError("partition has " + std::to_string(p.parts) + " parts but the run has " + std::to_string(size) + " ranks");
  if (static_cast<int>(w.size()) != p.layers()) throw InputError("partition has " + std::to_string(p.layers()) + " layers, the network " + std::to_string(w.size()));
  neurons_ = w.empty() ? 0 : w[0].rows;
  plan_.resize(w.size());
  for (std::size_t k = 0; k < w.size(); ++k) {
    const Csr& wk = w[k];
    if (static_cast<std::int64_t>(p.part[k].size()) != wk.cols)
      throw InputError("partition layer " + std::to_string(k + 1) + " has " + std::to_string(p.part[k].size()) + " neurons, the network " +
                       std::to_string(wk.cols));
    LayerPlan& L = plan_[k];
    const auto& part = p.part[k];
    for (std::int32_t c = 0; c < static_cast<std::int32_t>(wk.cols); ++c)
      if (part[c] == rank) L.out.push_back(c);
    const Csr wt = transpose(wk);
    std::vector<std::int32_t> slot_of(static_cast<std::size_t>(wk.rows), -1);
    for (auto c : L.out)
      for (auto q = wt.row_ptr[c]; q < wt.row_ptr[c + 1]; ++q) slot_of[wt.col_idx[q]] = 0;
    for (std::int32_t j = 0; j < static_cast<std::int32_t>(wk.rows); ++j)
      if (slot_of[j] == 0) {
        slot_of[j] = static_cast<std::int32_t>(L.slot_global.size());
        L.slot_global.push_back(j);
      }
    for (auto c : L.out) {
      for (auto q = wt.row_ptr[c]; q < wt.row_ptr[c + 1]; ++q) {
        L.slot.push_back(slot_of[wt.col_idx[q]]);
        L.values.push_back(wt.values[q]);
      }
      L.row_ptr.push_back(static_cast<std::int64_t>(L.slot.size()));
    }
    // Transposed local structure (slot -> entries) for the backward partial sums.
    const std::size_t ns = L.slot_global.size();
    L.st_ptr.assign(ns + 1, 0);
    for (auto s : L.slot) ++L.st_ptr[static_cast<std::size_t>(s) + 1];
    for (std::size_t s = 0; s < ns; ++s) L.st_ptr[s + 1] += L.st_ptr[s];
    L.st_row.resize(L.slot.size());
    L.st_pos.resize(L.slot.size());
    {
      std::vector<std::int64_t> pos(L.st_ptr.begin(), L.st_ptr.end() - 1);
      for (std::size_t i = 0; i < L.out.size(); ++i)
        for (auto q = L.row_ptr[i]; q < L.row_ptr[i + 1]; ++q) {
          const auto s = L.slot[q];
          L.st_row[pos[s]] = static_cast<std::int32_t>(i);
          L.st_pos[pos[s]++] = q;
        }
    }
    L.send_count.assign(static_cast<std::size_t>(size), 0);
    L.recv_count.assign(static_cast<std::size_t>(size), 0);
    if (k == 0) {
      for (std::size_t i = 0; i < L.out.size(); ++i) L.interior.push_back(static_cast<std::int32_t>(i));
      continue;
    }
    const auto& prev_part = p.part[k - 1];
    const LayerPlan& P = plan_[k - 1];
    std::vector<std::int32_t> prev_index(static_cast<std::size_t>(wk.rows), -1);
    for (std::size_t i = 0; i < P.out.size(); ++i) prev_index[P.out[i]] = static_cast<std::int32_t>(i);
    // Receive lists: non-local slots grouped by owner, increasing global id within each owner.
    L.slot_src.assign(ns, -1);
    std::vector<std::vector<std::int32_t>> recv_by(static_cast<std::size_t>(size));
    for (std::size_t s = 0; s < ns; ++s) {
      const auto j = L.slot_global[s];
      if (prev_part[j] == rank) L.slot_src[s] = prev_index[j];
      else recv_by[prev_part[j]].push_back(static_cast<std::int32_t>(s));
    }
    for (int r = 0; r < size; ++r) {
      L.recv_count[r] = static_cast<int>(recv_by[r].size());
      L.recv_slot.insert(L.recv_slot.end(), recv_by[r].begin(), recv_by[r].end());
    }
    // Send lists: for each owned y_{k-1}[j] (increasing j), every other rank owning a reader of j.
    std::vector<std::vector<std::int32_t>> send_by(static_cast<std::size_t>(size));
    std::vector<std::int64_t> stamp(static_cast<std::size_t>(size), -1);
    for (std::size_t i = 0; i < P.out.size(); ++i) {
      const auto j = P.out[i];
      stamp[rank] = j;
      for (auto q = wk.row_ptr[j]; q < wk.row_ptr[j + 1]; ++q) {
        const auto d = part[wk.col_idx[q]];
        if (stamp[d] != j) {
          stamp[d] = j;
          send_by[d].push_back(static_cast<std::int32_t>(i));
        }
      }
    }
    for (int r = 0; r < size; ++r) {
      L.send_count[r] = static_cast<int>(send_by[r].size());
      L.send_idx.insert(L.send_idx.end(), send_by[r].begin(), send_by[r].end());
    }
    for (std::size_t i = 0; i < L.out.size(); ++i) {
      bool local = true;
      for (auto q = L.row_ptr[i]; q < L.row_ptr[i + 1] && local; ++q) local = L.slot_src[L.slot[q]] >= 0;
      (local ? L.interior : L.boundary).push_back(static_cast<std::int32_t>(i));
    }
  }
}

namespace {

void displs(const std::vector<int>& count, int batch, std::vector<int>& c, std::vector<int>& d) {
  c.resize(count.size());
  d.resize(count.size());
  std::int64_t off = 0;
  for (std::size_t r = 0; r < count.size(); ++r) {
    const std::int64_t n = static_cast<std::int64_t>(count[r]) * batch;
    if (n > std::numeric_limits<int>::max() || off + n > std::numeric_limits<int>::max())
      throw InputError("an exchange of " + std::to_string(off + n) + " floats exceeds MPI's int counts: use a smaller batch");
    c[r] = static_cast<int>(n);
    d[r] = static_cast<int>(off);
    off += n;
  }
}

/// Non-zero image indices of every input slot (CSC of the slot x batch block), so that the layer's work is
/// proportional to the non-zeros of Y, not to slots x batch.
struct SlotNz {
  std::vector<std::int64_t> ptr{0};
  std::vector<std::int32_t> idx;
  void build(const std::vector<float>& x, std::size_t slots, int batch) {
    ptr.assign(1, 0);
    idx.clear();
    for (std::size_t s = 0; s < slots; ++s) {
      const float* xs = x.data() + s * batch;
      for (int b = 0; b < batch; ++b)
        if (xs[b] != 0.0f) idx.push_back(b);
      ptr.push_back(static_cast<std::int64_t>(idx.size()));
    }
  }
  /// The structure of the layer-0 input: every STORED feature entry of images row0 .. row0 + batch - 1 whose
  /// column is one of the slots (slot_of: column -> slot, -1 if not), a stored zero included, as in the
  /// shared-memory layer_forward and GraphBLAS (the bias goes on the structural non-zeros of Y W). Until the
  /// sixteenth session the layer-0 structure was taken from the values, so a stored zero in the features lost
  /// its bias in distributed runs only (found by a fresh-eyes review).
  void build_from_features(const Csr& f, std::int64_t row0, int batch, const std::vector<std::int32_t>& slot_of,
                           std::size_t slots) {
    ptr.assign(slots + 1, 0);
    for (int pass = 0; pass < 2; ++pass) {  // count per slot, then place (images in ascending order per slot)
      std::vector<std::int64_t> next;
      if (pass == 1) {
        for (std::size_t s = 0; s < slots; ++s) ptr[s + 1] += ptr[s];
        idx.assign(static_cast<std::size_t>(ptr[slots]), 0);
        next.assign(ptr.begin(), ptr.end() - 1);
      }
      for (int b = 0; b < batch; ++b) {
        const std::int64_t r = row0 + b;
        if (r >= f.rows) break;
        for (auto q = f.row_ptr[r]; q < f.row_ptr[r + 1]; ++q) {
          const auto s = slot_of[f.col_idx[q]];
          if (s < 0) continue;
          if (pass == 0) ++ptr[static_cast<std::size_t>(s) + 1];
          else idx[static_cast<std::size_t>(next[static_cast<std::size_t>(s)]++)] = b;
        }
      }
    }
  }
};

/// Computes local outputs `rows` of one layer: y = clip(sum_j W(j,c) x_j + b on structural non-zeros).
void compute_rows(const LayerPlan& L, const std::vector<std::int32_t>& rows, const std::vector<float>& x, const SlotNz& nz, int batch,
                  const std::vector<float>& bias, float ymax, std::vector<float>& y) {
  const std::int64_t nrows = static_cast<std::int64_t>(rows.size());
#pragma omp parallel if (static_cast<double>(nz.idx.size()) * 32.0 > 2.0e6)
  {
    std::vector<unsigned char> flag(static_cast<std::size_t>(batch));
#pragma omp for schedule(dynamic, 8)
    for (std::int64_t t = 0; t < nrows; ++t) {
      const auto i = rows[t];
      float* yi = y.data() + static_cast<std::size_t>(i) * batch;
      std::fill(yi, yi + batch, 0.0f);
      std::fill(flag.begin(), flag.end(), 0);
      for (auto q = L.row_ptr[i]; q < L.row_ptr[i + 1]; ++q) {
        const auto s = L.slot[q];
        const float wv = L.values[q];
        const float* xs = x.data() + static_cast<std::size_t>(s) * batch;
        for (auto e = nz.ptr[s]; e < nz.ptr[s + 1]; ++e) {
          const auto b = nz.idx[e];
          yi[b] += wv * xs[b];
          flag[b] = 1;
        }
      }
      const float bi = bias[i];
      for (int b = 0; b < batch; ++b) {
        const float v = flag[b] ? yi[b] + bi : 0.0f;
        yi[b] = v > 0.0f ? std::min(v, ymax) : 0.0f;
      }
    }
  }
}

}  // namespace

void DistEngine::forward(const Csr& features, std::int64_t row0, int batch, const std::vector<std::vector<float>>& bias, float ymax) {
  if (!mpi_ && size_ != 1) throw InputError("DistEngine: running more than one rank requires MPI (plans can be built without)");
  if (features.cols != neurons_) throw InputError("features have " + std::to_string(features.cols) + " columns, the network " + std::to_string(neurons_) + " neurons");
  batch_ = batch;
  counters_.forward_images += static_cast<std::uint64_t>(batch);
  const int L = layers();
  x_.resize(static_cast<std::size_t>(L));
  y_.resize(static_cast<std::size_t>(L));
  for (int k = 0; k < L; ++k) {
    const LayerPlan& P = plan_[k];
    auto& x = x_[k];
    x.assign(P.slot_global.size() * static_cast<std::size_t>(batch), 0.0f);
    std::vector<float> sendbuf, recvbuf;
    MPI_Request req = MPI_REQUEST_NULL;
    std::vector<int> sc, sd, rc, rd;
    SlotNz slot_nz;
    if (k == 0) {
      std::vector<std::int32_t> slot_of(static_cast<std::size_t>(neurons_), -1);
      for (std::size_t s = 0; s < P.slot_global.size(); ++s) slot_of[P.slot_global[s]] = static_cast<std::int32_t>(s);
      for (int b = 0; b < batch; ++b) {
        const std::int64_t r = row0 + b;
        if (r >= features.rows) break;
        for (auto q = features.row_ptr[r]; q < features.row_ptr[r + 1]; ++q) {
          const auto s = slot_of[features.col_idx[q]];
          if (s >= 0) x[static_cast<std::size_t>(s) * batch + b] = features.values[q];
        }
      }
      slot_nz.build_from_features(features, row0, batch, slot_of, P.slot_global.size());
    } else {
      const auto& yprev = y_[k - 1];
      for (std::size_t s = 0; s < P.slot_global.size(); ++s)
        if (P.slot_src[s] >= 0) std::copy_n(yprev.data() + static_cast<std::size_t>(P.slot_src[s]) * batch, batch, x.data() + s * batch);
      if (size_ > 1) {
        sendbuf.resize(P.send_idx.size() * static_cast<std::size_t>(batch));
        for (std::size_t t = 0; t < P.send_idx.size(); ++t)
          std::copy_n(yprev.data() + static_cast<std::size_t>(P.send_idx[t]) * batch, batch, sendbuf.data() + t * batch);
        recvbuf.resize(P.recv_slot.size() * static_cast<std::size_t>(batch));
        displs(P.send_count, batch, sc, sd);
        displs(P.recv_count, batch, rc, rd);
        MPI_Ialltoallv(sendbuf.data(), sc.data(), sd.data(), MPI_FLOAT, recvbuf.data(), rc.data(), rd.data(), MPI_FLOAT, MPI_COMM_WORLD, &req);
        counters_.expand_bytes += sendbuf.size() * sizeof(float);
      }
    }
    auto& y = y_[k];
    y.assign(P.out.size() * static_cast<std::size_t>(batch), 0.0f);
    // Layers after the first: a stored entry of Y is a positive value (the clipped ReLU drops the rest), so the
    // structure is the non-zero values. Remote slots are still zero here: interior rows do not read them.
    if (k > 0) slot_nz.build(x, P.slot_global.size(), batch);
    compute_rows(P, P.interior, x, slot_nz, batch, bias[k], ymax, y);
    if (req != MPI_REQUEST_NULL) {
      MPI_Wait(&req, MPI_STATUS_IGNORE);
      // (test fault drop-halo: the first received vector of every layer is lost, as if its message were dropped)
      for (std::size_t t = fault_ == Fault::kDropHalo ? 1 : 0; t < P.recv_slot.size(); ++t)
        std::copy_n(recvbuf.data() + t * batch, batch, x.data() + static_cast<std::size_t>(P.recv_slot[t]) * batch);
    }
    if (!P.boundary.empty()) {
      if (k > 0) slot_nz.build(x, P.slot_global.size(), batch);  // layer 0: every slot came from the features
      compute_rows(P, P.boundary, x, slot_nz, batch, bias[k], ymax, y);
    }
    if (!keep_) {  // inference: this layer's inputs and the previous outputs are no longer needed
      std::vector<float>().swap(x);
      if (k > 0) std::vector<float>().swap(y_[k - 1]);
    }
  }
}

void DistEngine::backward(const std::vector<float>& dy_last, float ymax, std::vector<std::vector<float>>& dw, std::vector<std::vector<float>>& db) {
  if (!keep_) throw std::logic_error("DistEngine::backward after an inference-only forward (set_keep_activations(false))");
  const int L = layers();
  const int batch = batch_;
  counters_.backward_images += static_cast<std::uint64_t>(batch);
  dw.resize(static_cast<std::size_t>(L));
  db.resize(static_cast<std::size_t>(L));
  std::vector<float> delta = dy_last;
  for (int k = L - 1; k >= 0; --k) {
    const LayerPlan& P = plan_[k];
    const auto& y = y_[k];
    const auto& x = x_[k];
    // Clipped-ReLU derivative: 1 where 0 < y < ymax.
    for (std::size_t t = 0; t < delta.size(); ++t)
      if (!(y[t] > 0.0f && y[t] < ymax)) delta[t] = 0.0f;
    auto& gw = dw[k];
    auto& gb = db[k];
    gw.assign(P.values.size(), 0.0f);
    gb.assign(P.out.size(), 0.0f);
    const std::int64_t nout = static_cast<std::int64_t>(P.out.size());
    const bool par = static_cast<double>(P.values.size()) * batch > 2.0e6;  // threads only for enough work
#pragma omp parallel for schedule(dynamic, 8) if (par)
    for (std::int64_t i = 0; i < nout; ++i) {
      const float* di = delta.data() + static_cast<std::size_t>(i) * batch;
      float sb = 0;
      for (int b = 0; b < batch; ++b) sb += di[b];
      gb[i] = sb;
      for (auto q = P.row_ptr[i]; q < P.row_ptr[i + 1]; ++q) {
        const float* xs = x.data() + static_cast<std::size_t>(P.slot[q]) * batch;
        float s = 0;
        for (int b = 0; b < batch; ++b) s += xs[b] * di[b];
        gw[q] = s;
      }
    }
    if (k == 0) break;
    // Partial sums for every input slot: g_j = sum_c W(j, c) delta_c.
    const std::int64_t ns = static_cast<std::int64_t>(P.slot_global.size());
    std::vector<float> g(static_cast<std::size_t>(ns) * batch, 0.0f);
#pragma omp parallel for schedule(dynamic, 8) if (par)
    for (std::int64_t s = 0; s < ns; ++s) {
      float* gs = g.data() + static_cast<std::size_t>(s) * batch;
      for (auto e = P.st_ptr[s]; e < P.st_ptr[s + 1]; ++e) {
        const float wv = P.values[P.st_pos[e]];
        const float* di = delta.data() + static_cast<std::size_t>(P.st_row[e]) * batch;
        for (int b = 0; b < batch; ++b) gs[b] += wv * di[b];
      }
    }
    const LayerPlan& Prev = plan_[k - 1];
    std::vector<float> nd(Prev.out.size() * static_cast<std::size_t>(batch), 0.0f);
    for (std::int64_t s = 0; s < ns; ++s)
      if (P.slot_src[s] >= 0) {
        float* d = nd.data() + static_cast<std::size_t>(P.slot_src[s]) * batch;
        const float* gs = g.data() + static_cast<std::size_t>(s) * batch;
        for (int b = 0; b < batch; ++b) d[b] += gs[b];
      }
    if (size_ > 1) {
      // Fold: the reverse of the expand (send what we received, receive what we sent).
      std::vector<float> sendbuf(P.recv_slot.size() * static_cast<std::size_t>(batch)), recvbuf(P.send_idx.size() * static_cast<std::size_t>(batch));
      for (std::size_t t = 0; t < P.recv_slot.size(); ++t)
        std::copy_n(g.data() + static_cast<std::size_t>(P.recv_slot[t]) * batch, batch, sendbuf.data() + t * batch);
      std::vector<int> sc, sd, rc, rd;
      displs(P.recv_count, batch, sc, sd);
      displs(P.send_count, batch, rc, rd);
      MPI_Alltoallv(sendbuf.data(), sc.data(), sd.data(), MPI_FLOAT, recvbuf.data(), rc.data(), rd.data(), MPI_FLOAT, MPI_COMM_WORLD);
      counters_.fold_bytes += sendbuf.size() * sizeof(float);
      for (std::size_t t = 0; t < P.send_idx.size(); ++t) {
        if (fault_ == Fault::kDropFold && t % 50 == 0) continue;  // test fault: 2 % of the partial sums lost
        float* d = nd.data() + static_cast<std::size_t>(P.send_idx[t]) * batch;
        const float* r = recvbuf.data() + t * batch;
        for (int b = 0; b < batch; ++b) d[b] += r[b];
      }
    }
    delta.swap(nd);
  }
}

Csr DistEngine::gather_output(std::int64_t rows, int layer) {
  const std::size_t li = layer < 0 ? plan_.size() - 1 : static_cast<std::size_t>(layer);
  const LayerPlan& P = plan_.at(li);
  const auto& y = y_.at(li);
  std::vector<float> vals;
  std::vector<std::int64_t> idx;  // row * neurons + col
  for (std::size_t i = 0; i < P.out.size(); ++i)
    for (int b = 0; b < batch_ && b < rows; ++b) {
      const float v = y[i * batch_ + b];
      if (v != 0.0f) {
        idx.push_back(static_cast<std::int64_t>(b) * neurons_ + P.out[i]);
        vals.push_back(v);
      }
    }
  if (size_ > 1) {
    if (rank_ != 0) counters_.gather_bytes += static_cast<std::uint64_t>(vals.size()) * (sizeof(float) + sizeof(std::int64_t));
    gather_to_root(idx, vals);
  }
  if (rank_ != 0) return Csr{};
  std::vector<Triple> t;
  t.reserve(vals.size());
  for (std::size_t e = 0; e < vals.size(); ++e) t.push_back({idx[e] / neurons_, idx[e] % neurons_, vals[e]});
  return csr_from_triples(rows, neurons_, std::move(t));
}

void gather_to_root(std::vector<std::int64_t>& idx, std::vector<float>& vals) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (idx.size() != vals.size()) throw std::logic_error("gather_to_root: index and value counts differ");
  // Counts as int64 first, so that a rank over MPI's int range fails on every rank (no rank left waiting).
  const long long mine = static_cast<long long>(vals.size());
  std::vector<long long> counts(static_cast<std::size_t>(size));
  MPI_Gather(&mine, 1, MPI_LONG_LONG, counts.data(), 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
  long long total = 0;
  for (long long c : counts) total += c;
  int too_many = rank == 0 && total > std::numeric_limits<int>::max();
  MPI_Bcast(&too_many, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (too_many) throw InputError("gathering " + std::to_string(total) + " values to rank 0 exceeds MPI's int counts: use a smaller batch");
  std::vector<int> c(static_cast<std::size_t>(size)), d(static_cast<std::size_t>(size));
  for (int r = 0, off = 0; r < size; ++r) {
    c[static_cast<std::size_t>(r)] = static_cast<int>(counts[static_cast<std::size_t>(r)]);
    d[static_cast<std::size_t>(r)] = off;
    off += c[static_cast<std::size_t>(r)];
  }
  const std::size_t n_root = rank == 0 ? static_cast<std::size_t>(total) : 0;
  std::vector<std::int64_t> all_idx(n_root);
  std::vector<float> all_vals(n_root);
  MPI_Gatherv(idx.data(), static_cast<int>(mine), MPI_INT64_T, all_idx.data(), c.data(), d.data(), MPI_INT64_T, 0, MPI_COMM_WORLD);
  MPI_Gatherv(vals.data(), static_cast<int>(mine), MPI_FLOAT, all_vals.data(), c.data(), d.data(), MPI_FLOAT, 0, MPI_COMM_WORLD);
  idx.swap(all_idx);
  vals.swap(all_vals);
}

void DistEngine::allreduce_sum(std::vector<float>& v) {
  if (size_ <= 1) return;
  MPI_Allreduce(MPI_IN_PLACE, v.data(), static_cast<int>(v.size()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  counters_.allreduce_bytes += v.size() * sizeof(float);
}

}  // namespace spartan::sdnn
