// `graph` partitioner: METIS k-way (Karypis & Kumar, SIAM J. Sci. Comput. 1998) on the multi-layer graph
// that replaces every expand net by edges producer -> reader: vertex (k, c) for every layer, an edge between
// (k-1, j) and (k, c) for each W_k(j, c) != 0. Per-layer balance uses METIS multi-constraint partitioning:
// vertex (k, c) carries its weight in constraint k and 0 elsewhere, with tolerance 1 + tol per constraint.
// The graph edge cut over-counts the volume (a producer read by m neurons of one remote part is cut m times);
// it is the classical baseline the hypergraph model improves on.
#include <metis.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>

#include "spartan/common/error.h"
#include "spartan/sdnn/partition.h"

namespace spartan::sdnn {
namespace {

class MetisPartitioner : public Partitioner {
 public:
  MetisPartitioner(std::uint64_t seed, double tol) : seed_(seed), tol_(tol) {}
  Partition run(const std::vector<Csr>& w, int parts) override {
    if (w.empty()) throw InputError("partition: network has no layers");
    if (parts < 1 || parts > w[0].cols) throw InputError("partition: parts must be in [1, " + std::to_string(w[0].cols) + "], got " + std::to_string(parts));
    if (parts > 1) {
      // Before any idx_t arithmetic: n x L, the adjacency offsets and the per-layer weight sums must fit.
      std::int64_t adjacency = 0, max_weight = 0;
      for (std::size_t k = 0; k < w.size(); ++k) {
        if (k > 0) adjacency += 2 * w[k].nnz();
        max_weight = std::max<std::int64_t>(max_weight, w[k].nnz() + kVectorWork * w[k].cols);
      }
      const std::int64_t vertices = w[0].cols * static_cast<std::int64_t>(w.size());
      check_metis_graph_size(vertices, adjacency, max_weight, vertices * static_cast<std::int64_t>(w.size()));
    }
    const idx_t n = static_cast<idx_t>(w[0].cols);
    const idx_t L = static_cast<idx_t>(w.size());
    Partition p;
    p.parts = parts;
    p.neurons = n;
    p.method = "graph";
    if (parts == 1) {
      p.part.assign(static_cast<std::size_t>(L), std::vector<std::int32_t>(static_cast<std::size_t>(n), 0));
      return p;
    }
    const idx_t nv = n * L;
    std::vector<std::vector<idx_t>> adj(static_cast<std::size_t>(nv));
    for (idx_t k = 1; k < L; ++k) {
      const Csr& wk = w[k];
      for (idx_t j = 0; j < n; ++j)
        for (auto q = wk.row_ptr[j]; q < wk.row_ptr[j + 1]; ++q) {
          const idx_t a = (k - 1) * n + j, b = k * n + wk.col_idx[q];
          adj[a].push_back(b);
          adj[b].push_back(a);
        }
    }
    std::vector<idx_t> xadj(static_cast<std::size_t>(nv) + 1, 0), adjncy;
    for (idx_t v = 0; v < nv; ++v) {
      auto& a = adj[v];
      std::sort(a.begin(), a.end());
      a.erase(std::unique(a.begin(), a.end()), a.end());
      adjncy.insert(adjncy.end(), a.begin(), a.end());
      xadj[v + 1] = static_cast<idx_t>(adjncy.size());
    }
    idx_t ncon = L;
    std::vector<idx_t> vwgt(static_cast<std::size_t>(nv) * L, 0);
    for (idx_t k = 0; k < L; ++k) {
      const auto vw = vertex_weights(w[k]);
      for (idx_t c = 0; c < n; ++c) vwgt[static_cast<std::size_t>(k * n + c) * L + k] = static_cast<idx_t>(vw[c]);
    }
    std::vector<real_t> ubvec(static_cast<std::size_t>(L), static_cast<real_t>(1.0 + tol_));
    idx_t options[METIS_NOPTIONS];
    METIS_SetDefaultOptions(options);
    options[METIS_OPTION_SEED] = static_cast<idx_t>(seed_ % 2147483647u);
    idx_t nparts = parts, objval = 0;
    std::vector<idx_t> out(static_cast<std::size_t>(nv));
    const int rc = METIS_PartGraphKway(const_cast<idx_t*>(&nv), &ncon, xadj.data(), adjncy.data(), vwgt.data(), nullptr, nullptr, &nparts, nullptr,
                                       ubvec.data(), options, &objval, out.data());
    if (rc != METIS_OK) throw Error("METIS_PartGraphKway failed (" + std::to_string(rc) + ")", 1);
    for (idx_t k = 0; k < L; ++k) p.part.emplace_back(out.begin() + k * n, out.begin() + (k + 1) * n);
    return p;
  }

 private:
  std::uint64_t seed_;
  double tol_;
};

}  // namespace

std::int64_t metis_index_max() { return static_cast<std::int64_t>(std::numeric_limits<idx_t>::max()); }

void check_metis_graph_size(std::int64_t vertices, std::int64_t adjacency_entries, std::int64_t max_layer_weight,
                            std::int64_t weight_entries) {
  const std::int64_t lim = metis_index_max();
  if (vertices <= lim && adjacency_entries <= lim && max_layer_weight <= lim && weight_entries <= lim) return;
  throw InputError("partition: the graph method's METIS graph has " + std::to_string(vertices) + " vertices (neurons x layers), " +
                   std::to_string(adjacency_entries) + " adjacency entries (2 x the non-zeros of layers 2..L), a layer weight of " +
                   std::to_string(max_layer_weight) + " and " + std::to_string(weight_entries) +
                   " vertex weights (vertices x layers, one constraint per layer), more than METIS's " + std::to_string(sizeof(idx_t) * 8) +
                   "-bit index holds (" + std::to_string(lim) + "); use the hypergraph method or fewer layers");
}

std::unique_ptr<Partitioner> make_metis_partitioner(std::uint64_t seed, double imbalance_tol) {
  return std::make_unique<MetisPartitioner>(seed, imbalance_tol);
}

}  // namespace spartan::sdnn
