// The CUDA tile-sparse engine on the host (spartan/gemm/simt.h).
#include "spartan/gemm/simt.h"

#include <chrono>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "cuda_tile_driver.h"
#include "cuda_tile_kernels.h"
#include "spartan/common/simt.h"

namespace spartan::gemm {

namespace {

using cudak::KParams;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct SimtStatsHolder {
  TileSparseStats stats;
};

class SimtDenseEngine final : public GemmEngine, public SimtStatsHolder {
 public:
  std::string name() const override { return "cuda-dense (simt)"; }
  void run(const GemmCall& c) override {
    GemmCall h = c;
    h.device_pointers = false;  // the emulation's device memory is host memory
    stats = TileSparseStats{};
    const auto t0 = std::chrono::steady_clock::now();
    cpu_->run(h);
    stats.compute_s = seconds_since(t0);
  }

 private:
  std::unique_ptr<GemmEngine> cpu_ = make_dense_engine();
};

/// The host side of cudak::run_tile_sparse_call: host copies for device buffers, simt::launch for launches.
class SimtTileDev {
 public:
  /// A "device" copy: exactly n elements on the heap (reads past them fault under AddressSanitizer).
  template <class T>
  struct Buf {
    std::vector<T> v;
    T* p = nullptr;
    Buf(const T* host, std::size_t n) : v(host, host + n), p(n ? v.data() : nullptr) {}
    void to_host(T* host) const {
      if (!v.empty()) std::memcpy(host, v.data(), v.size() * sizeof(T));
    }
  };
  TileSparseStats run_dense(const GemmCall& c) {
    dense_.run(c);
    return dense_.stats;
  }
  /// The CUDA engine's device compaction: zeroed payload, count kernel, exclusive scan, write kernel.
  void compact_on_device(const hd::CompactGeom& g, const format::TileGrid& grid, KParams& k, TileSparseStats& st) {
    const std::uint64_t tiles = grid.num_tiles();
    if (tiles > std::uint64_t(0x7FFFFFFF)) throw InputError("cuda tile-sparse gemm: too many tiles for one scan");
    const auto t0 = std::chrono::steady_clock::now();
    // Scratch as the GPU's (DevScratch) holds it: uninitialised, here all 0xFF bytes, so that the kernels must
    // write every header, size and offset they read; the payload area zeroed, as the engine's memset does.
    hdr_.resize(tiles);
    std::memset(static_cast<void*>(hdr_.data()), 0xFF, tiles * sizeof(format::TileHeader));
    sizes_.assign(tiles, ~std::uint64_t(0));
    offsets_.assign(tiles, ~std::uint64_t(0));
    payload_.assign(tiles * hd::max_tile_payload_bytes(grid.tile_rows, grid.tile_cols), 0);
    const unsigned threads = cudak::kCompactThreads, blocks = cudak::compact_blocks(tiles);
    format::TileHeader* hdr = hdr_.data();
    std::uint64_t* sizes = sizes_.data();
    const std::uint64_t* offsets = offsets_.data();
    std::uint8_t* payload = payload_.data();
    simt::launch({blocks, 1, 1}, {threads, 1, 1}, 0, false,
                 [&] { cudak::compact_count_kernel(g, tiles, hdr, sizes); });
    std::exclusive_scan(sizes_.begin(), sizes_.end(), offsets_.begin(), std::uint64_t(0));
    simt::launch({blocks, 1, 1}, {threads, 1, 1}, 0, false,
                 [&] { cudak::compact_write_kernel(g, tiles, hdr, offsets, payload); });
    st.compact_s = seconds_since(t0);
    cudak::add_tile_stats(hdr_.data(), hdr_.size(), st);
    k.hdr = hdr_.data();
    k.payload = payload_.data();
  }
  void launch(const GemmCall& c, const KParams& k, const cudak::TileLaunch& L, TileSparseStats& st) {
    const auto t0 = std::chrono::steady_clock::now();
    simt::launch({L.scale_blocks, 1, 1}, {cudak::kScaleThreads, 1, 1}, 0, false,
                 [&] { cudak::scale_kernel(k.C, c.M, c.N, c.ldc, c.beta); });
    if (k.alpha != 0.0f)
      simt::launch({L.bands, L.q_blocks, L.p_chunks}, {unsigned(cudak::kQB), 1, 1}, L.smem, true,
                   [&] { cudak::tile_sparse_kernel(k); });
    st.compute_s = seconds_since(t0);
  }

 private:
  SimtDenseEngine dense_;
  std::vector<format::TileHeader> hdr_;
  std::vector<std::uint64_t> sizes_, offsets_;
  std::vector<std::uint8_t> payload_;
};

class SimtTileSparseEngine final : public GemmEngine, public SimtStatsHolder {
 public:
  SimtTileSparseEngine(const TileSparseOptions& opt, int smem_max) : opt_(opt) {
    cudak::check_cuda_tile_options(opt);
    chunk_[0] = cudak::chunk_rows(opt, int(opt.tile_rows), smem_max, cudak::kTileKernelStaticSmemBytes);
    chunk_[1] = cudak::chunk_rows(opt, int(opt.tile_cols), smem_max, cudak::kTileKernelStaticSmemBytes);
  }
  std::string name() const override { return "cuda-tile-sparse (simt)"; }
  void run(const GemmCall& c) override { cudak::run_tile_sparse_call(c, opt_, chunk_, dev_, stats); }

 private:
  TileSparseOptions opt_;
  SimtTileDev dev_;
  int chunk_[2] = {1, 1};
};

}  // namespace

std::unique_ptr<GemmEngine> make_simt_tile_sparse_engine(const TileSparseOptions& opt, int smem_max_bytes) {
  return std::make_unique<SimtTileSparseEngine>(opt, smem_max_bytes);
}
std::unique_ptr<GemmEngine> make_simt_dense_engine() { return std::make_unique<SimtDenseEngine>(); }
const TileSparseStats* simt_last_tile_stats(const GemmEngine& e) {
  if (auto* h = dynamic_cast<const SimtStatsHolder*>(&e)) return &h->stats;
  return nullptr;
}

}  // namespace spartan::gemm
