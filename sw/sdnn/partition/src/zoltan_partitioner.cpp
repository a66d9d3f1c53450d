// `hypergraph` partitioner: Zoltan's parallel hypergraph partitioner PHG (Devine et al., IPDPS 2006; Zoltan
// User's Guide, "Hypergraph partitioning"), connectivity-1 objective (PHG_CUT_OBJECTIVE=CONNECTIVITY).
//
// Per-layer balance is obtained layer by layer with fixed vertices. For layer k (1..L):
//   - free vertices: the N neurons of layer k, weight nnz(column of W_k) + kVectorWork;
//   - fixed vertices: the N neurons of layer k-1 (k >= 2), weight 0, fixed to the parts already chosen;
//   - nets: the true expand nets n(k-1, j) = {(k-1, j)} U {(k, c) : W_k(j, c) != 0} (their connectivity-1 is
//     exactly layer k's volume, given layer k-1);
//   - look-ahead nets {(k, j) : W_{k+1}(j, c') != 0} for every neuron c' of layer k+1 (the readers' view of the
//     next expand), weight kLookahead: layer 1 (no incoming nets: inputs are not communicated) always has them;
//     on later layers a two-state dynamic programme over the layers (below) chooses per layer between the
//     partitions without and with them by the total volume of the path (look-ahead nets on every layer
//     doubled the volume: on RadiX-Net topologies they pull against the expand nets). docs/sdnn.md.
// Zoltan balances the free vertices to IMBALANCE_TOL = 1 + tol (fixed vertices weigh 0).
#include <mpi.h>
#include <zoltan.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "spartan/common/error.h"
#include "spartan/sdnn/partition.h"

namespace spartan::sdnn {
namespace {

/// Initialises MPI for single-process use when the caller has not (Zoltan needs a communicator).
struct MpiGuard {
  bool we_init = false;
  MpiGuard() {
    int init = 0;
    MPI_Initialized(&init);
    if (!init) {
      MPI_Init(nullptr, nullptr);
      we_init = true;
    }
  }
  ~MpiGuard() {
    int fin = 0;
    MPI_Finalized(&fin);
    if (we_init && !fin) MPI_Finalize();
  }
};

struct LayerHg {
  int nfree = 0, nfixed = 0;
  std::vector<float> wgt;             // free vertices
  std::vector<int> fixed_part;        // fixed vertices (GID nfree + j)
  std::vector<ZOLTAN_ID_TYPE> net_gid;
  std::vector<float> net_wgt;
  std::vector<int> net_ptr{0};
  std::vector<ZOLTAN_ID_TYPE> pins;
};

int num_obj(void* d, int* ierr) {
  auto* h = static_cast<LayerHg*>(d);
  *ierr = ZOLTAN_OK;
  return h->nfree + h->nfixed;
}
void obj_list(void* d, int, int, ZOLTAN_ID_PTR gids, ZOLTAN_ID_PTR lids, int wdim, float* w, int* ierr) {
  auto* h = static_cast<LayerHg*>(d);
  for (int i = 0; i < h->nfree + h->nfixed; ++i) {
    gids[i] = static_cast<ZOLTAN_ID_TYPE>(i);
    lids[i] = static_cast<ZOLTAN_ID_TYPE>(i);
    if (wdim > 0) w[i] = i < h->nfree ? h->wgt[i] : 0.0f;
  }
  *ierr = ZOLTAN_OK;
}
void hg_size(void* d, int* nlists, int* npins, int* format, int* ierr) {
  auto* h = static_cast<LayerHg*>(d);
  *nlists = static_cast<int>(h->net_gid.size());
  *npins = static_cast<int>(h->pins.size());
  *format = ZOLTAN_COMPRESSED_EDGE;
  *ierr = ZOLTAN_OK;
}
void hg_cs(void* d, int, int nnets, int npins, int, ZOLTAN_ID_PTR net_gid, int* net_ptr, ZOLTAN_ID_PTR pin_gid, int* ierr) {
  auto* h = static_cast<LayerHg*>(d);
  std::copy(h->net_gid.begin(), h->net_gid.begin() + nnets, net_gid);
  std::copy(h->net_ptr.begin(), h->net_ptr.begin() + nnets, net_ptr);
  std::copy(h->pins.begin(), h->pins.begin() + npins, pin_gid);
  *ierr = ZOLTAN_OK;
}
int num_fixed(void* d, int* ierr) {
  *ierr = ZOLTAN_OK;
  return static_cast<LayerHg*>(d)->nfixed;
}
void fixed_list(void* d, int n, int, ZOLTAN_ID_PTR gids, int* parts, int* ierr) {
  auto* h = static_cast<LayerHg*>(d);
  for (int i = 0; i < n; ++i) {
    gids[i] = static_cast<ZOLTAN_ID_TYPE>(h->nfree + i);
    parts[i] = h->fixed_part[i];
  }
  *ierr = ZOLTAN_OK;
}

void set(Zoltan_Struct* zz, const char* k, const std::string& v) {
  if (Zoltan_Set_Param(zz, k, v.c_str()) != ZOLTAN_OK) throw Error(std::string("Zoltan rejected parameter ") + k, 1);
}

/// Expand volume of layer k (entries per image) for producer parts `prev` and reader parts `cur`.
std::int64_t layer_volume(const Csr& wk, const std::vector<std::int32_t>& prev, const std::vector<std::int32_t>& cur, int parts) {
  std::vector<std::int64_t> stamp(static_cast<std::size_t>(parts), -1);
  std::int64_t v = 0;
  for (std::int64_t j = 0; j < wk.rows; ++j) {
    stamp[prev[j]] = j;
    for (auto q = wk.row_ptr[j]; q < wk.row_ptr[j + 1]; ++q)
      if (stamp[cur[wk.col_idx[q]]] != j) {
        stamp[cur[wk.col_idx[q]]] = j;
        ++v;
      }
  }
  return v;
}

void hg_size_ew(void* d, int* n, int* ierr) {
  *n = static_cast<int>(static_cast<LayerHg*>(d)->net_gid.size());
  *ierr = ZOLTAN_OK;
}
void hg_ew(void* d, int, int, int nedges, int, ZOLTAN_ID_PTR gid, ZOLTAN_ID_PTR, float* wgt, int* ierr) {
  auto* h = static_cast<LayerHg*>(d);
  for (int e = 0; e < nedges; ++e) {
    gid[e] = h->net_gid[e];
    wgt[e] = h->net_wgt[e];
  }
  *ierr = ZOLTAN_OK;
}

class ZoltanPartitioner : public Partitioner {
 public:
  ZoltanPartitioner(std::uint64_t seed, double tol) : seed_(seed), tol_(tol) {}

  /// Partitions layer k with Zoltan PHG. prev: parts of layer k-1 (fixed vertices) or nullptr;
  /// lookahead > 0 adds the look-ahead nets of layer k+1 with that net weight (expand nets weigh 1).
  std::vector<std::int32_t> layer(const std::vector<Csr>& w, std::size_t k, int parts, const std::vector<std::int32_t>* prev, float lookahead) {
    const int n = static_cast<int>(w[k].cols);
    LayerHg h;
    h.nfree = n;
    const auto vw = vertex_weights(w[k]);
    h.wgt.assign(vw.begin(), vw.end());
    ZOLTAN_ID_TYPE next_net = 0;
    if (prev) {
      h.nfixed = n;
      h.fixed_part.assign(prev->begin(), prev->end());
      const Csr& wk = w[k];
      for (int j = 0; j < n; ++j) {
        h.net_gid.push_back(next_net++);
        h.net_wgt.push_back(1.0f);
        h.pins.push_back(static_cast<ZOLTAN_ID_TYPE>(n + j));
        for (auto q = wk.row_ptr[j]; q < wk.row_ptr[j + 1]; ++q) h.pins.push_back(static_cast<ZOLTAN_ID_TYPE>(wk.col_idx[q]));
        h.net_ptr.push_back(static_cast<int>(h.pins.size()));
      }
    }
    if (lookahead > 0 && k + 1 < w.size()) {
      const Csr wt = transpose(w[k + 1]);  // row c' = the layer-k neurons read by neuron c' of layer k+1
      for (std::int64_t c = 0; c < wt.rows; ++c) {
        if (wt.row_ptr[c + 1] - wt.row_ptr[c] < 2) continue;
        h.net_gid.push_back(next_net++);
        h.net_wgt.push_back(lookahead);
        for (auto q = wt.row_ptr[c]; q < wt.row_ptr[c + 1]; ++q) h.pins.push_back(static_cast<ZOLTAN_ID_TYPE>(wt.col_idx[q]));
        h.net_ptr.push_back(static_cast<int>(h.pins.size()));
      }
    }
    h.net_ptr.pop_back();  // Zoltan wants one start offset per net
    Zoltan_Struct* zz = Zoltan_Create(MPI_COMM_SELF);
    if (!zz) throw Error("Zoltan_Create failed", 1);
    struct Destroy {
      Zoltan_Struct*& z;
      ~Destroy() { Zoltan_Destroy(&z); }
    } destroy{zz};
    set(zz, "DEBUG_LEVEL", "0");
    set(zz, "LB_METHOD", "HYPERGRAPH");
    set(zz, "HYPERGRAPH_PACKAGE", "PHG");
    set(zz, "LB_APPROACH", "PARTITION");
    set(zz, "PHG_CUT_OBJECTIVE", "CONNECTIVITY");
    set(zz, "NUM_GID_ENTRIES", "1");
    set(zz, "NUM_LID_ENTRIES", "1");
    set(zz, "OBJ_WEIGHT_DIM", "1");
    set(zz, "EDGE_WEIGHT_DIM", "1");
    set(zz, "RETURN_LISTS", "PARTS");
    set(zz, "NUM_GLOBAL_PARTS", std::to_string(parts));
    set(zz, "IMBALANCE_TOL", std::to_string(1.0 + tol_));
    set(zz, "SEED", std::to_string(static_cast<unsigned>(seed_ + k)));
    set(zz, "PHG_OUTPUT_LEVEL", "0");
    set(zz, "CHECK_HYPERGRAPH", "0");
    Zoltan_Set_Num_Obj_Fn(zz, num_obj, &h);
    Zoltan_Set_Obj_List_Fn(zz, obj_list, &h);
    Zoltan_Set_HG_Size_CS_Fn(zz, hg_size, &h);
    Zoltan_Set_HG_CS_Fn(zz, hg_cs, &h);
    Zoltan_Set_HG_Size_Edge_Wts_Fn(zz, hg_size_ew, &h);
    Zoltan_Set_HG_Edge_Wts_Fn(zz, hg_ew, &h);
    Zoltan_Set_Num_Fixed_Obj_Fn(zz, num_fixed, &h);
    Zoltan_Set_Fixed_Obj_List_Fn(zz, fixed_list, &h);
    int changes = 0, ngid = 0, nlid = 0, nimp = 0, nexp = 0;
    ZOLTAN_ID_PTR igid = nullptr, ilid = nullptr, egid = nullptr, elid = nullptr;
    int *iproc = nullptr, *ipart = nullptr, *eproc = nullptr, *epart = nullptr;
    const int rc = Zoltan_LB_Partition(zz, &changes, &ngid, &nlid, &nimp, &igid, &ilid, &iproc, &ipart, &nexp, &egid, &elid, &eproc, &epart);
    if (rc != ZOLTAN_OK && rc != ZOLTAN_WARN) throw Error("Zoltan_LB_Partition failed for layer " + std::to_string(k + 1), 1);
    std::vector<std::int32_t> part(static_cast<std::size_t>(n), 0);
    for (int i = 0; i < nexp; ++i)
      if (egid[i] < static_cast<ZOLTAN_ID_TYPE>(n)) part[egid[i]] = epart[i];
    Zoltan_LB_Free_Part(&igid, &ilid, &iproc, &ipart);
    Zoltan_LB_Free_Part(&egid, &elid, &eproc, &epart);
    return part;
  }

  /// MPI (for single-process use) and Zoltan, once per process: cmd_partition and the bench call this before
  /// their timers start, so their time_s is partitioning only.
  void initialize() override {
    static MpiGuard guard;
    static const bool zoltan_ok = [] {
      float ver = 0;
      return Zoltan_Initialize(0, nullptr, &ver) == ZOLTAN_OK;
    }();
    if (!zoltan_ok) throw Error("Zoltan_Initialize failed", 1);
  }

  Partition run(const std::vector<Csr>& w, int parts) override {
    if (w.empty()) throw InputError("partition: network has no layers");
    const int n = static_cast<int>(w[0].cols);
    if (parts < 1 || parts > n) throw InputError("partition: parts must be in [1, " + std::to_string(n) + "], got " + std::to_string(parts));
    Partition p;
    p.parts = parts;
    p.neurons = n;
    p.method = "hypergraph";
    if (parts == 1) {
      p.part.assign(w.size(), std::vector<std::int32_t>(static_cast<std::size_t>(n), 0));
      return p;
    }
    initialize();
    // Two-state dynamic programme (Viterbi) over the layers: state A partitions a layer for its own expand
    // only; state B also weighs the look-ahead nets (kLookahead), sacrificing some of this layer's volume
    // for the next one's. Each state keeps its cheapest path; the cheaper final path wins.
    constexpr float kLookahead = 4.0f;
    struct Path {
      std::vector<std::vector<std::int32_t>> part;
      std::int64_t cost = 0;
    };
    Path a, b;
    a.part.push_back(layer(w, 0, parts, nullptr, kLookahead));
    b = a;
    for (std::size_t k = 1; k < w.size(); ++k) {
      Path na, nb;
      bool have_a = false, have_b = false;
      for (const Path* from : {&a, &b}) {
        if (from == &b && b.part.back() == a.part.back() && b.cost == a.cost) continue;  // identical states
        for (int s = 0; s < (k + 1 < w.size() ? 2 : 1); ++s) {
          auto cand = layer(w, k, parts, &from->part.back(), s == 0 ? 0.0f : kLookahead);
          const std::int64_t cost = from->cost + layer_volume(w[k], from->part.back(), cand, parts);
          Path& dst = s == 0 ? na : nb;
          bool& have = s == 0 ? have_a : have_b;
          if (!have || cost < dst.cost) {
            dst.part = from->part;
            dst.part.push_back(std::move(cand));
            dst.cost = cost;
            have = true;
          }
        }
      }
      a = std::move(na);
      b = have_b ? std::move(nb) : a;
    }
    p.part = (b.cost < a.cost ? b : a).part;
    return p;
  }

 private:
  std::uint64_t seed_;
  double tol_;
};

}  // namespace

std::unique_ptr<Partitioner> make_zoltan_partitioner(std::uint64_t seed, double imbalance_tol) {
  return std::make_unique<ZoltanPartitioner>(seed, imbalance_tol);
}

}  // namespace spartan::sdnn
