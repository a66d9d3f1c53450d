// The host side of one CUDA tile-sparse GEMM call, written once for the CUDA engine (cuda_engines.cu, device
// memory and cuBLAS) and its host emulation (simt_engines.cpp, host memory, OpenBLAS and
// spartan::simt::launch): the same steps in the same order, so that what the emulation tests is the engine's
// own logic. See spartan/gemm/cuda.h for the call's semantics.
//
// `Dev` supplies:
//   template <class T> struct Buf { Buf(const T* host, std::size_t n); T* p; void to_host(T* host) const; };
//       a device copy of n elements (the emulation: a host copy of exactly n, so reads past a BLAS span fault
//       under AddressSanitizer);
//   TileSparseStats run_dense(const GemmCall&);     the whole call as one dense SGEMM (compute_s set);
//   void compact_on_device(const hd::CompactGeom&, const format::TileGrid&, cudak::KParams&, TileSparseStats&);
//       format::compact()'s bytes of the device operand on the device: sets k.hdr, k.payload, compact_s and
//       the tile counts;
//   void launch(const GemmCall&, const cudak::KParams&, const cudak::TileLaunch&, TileSparseStats&);
//       C = beta C, then (alpha != 0) the tile kernel; sets compute_s.
#pragma once
#include <chrono>

#include "cuda_tile_kernels.h"
#include "spartan/format/tile_format.h"
#include "spartan/gemm/cuda.h"

namespace spartan::gemm::cudak {
inline namespace SPARTAN_SIMT_ABI {  // as cuda_tile_kernels.h

/// Computes call `c` with the tile-sparse kernels on `dev` (options `opt`, `chunk` as for plan_call) and
/// writes what it did to `stats`. Throws spartan::InputError on inconsistent shapes (validate_shape) and
/// for a Q the grid cannot hold (tile_launch); errors of `dev` pass through.
template <class Dev>
void run_tile_sparse_call(const GemmCall& c, const TileSparseOptions& opt, const int chunk[2], Dev& dev,
                          TileSparseStats& stats) {
  validate_shape(c);
  stats = TileSparseStats{};
  if (c.M == 0 || c.N == 0) return;
  if (c.sparse == SparseOperand::None || c.K == 0) {
    stats = dev.run_dense(c);
    return;
  }
  CallPlan pl = plan_call(c, opt, chunk);
  KParams& k = pl.k;
  auto whole_call = [&] {
    if (!whole_call_dense(c, opt, stats, pl.grid)) return false;
    stats.compute_s = dev.run_dense(c).compute_s;
    stats.full_dense = true;
    stats.dense_calls = 1;
    return true;
  };
  if (c.device_pointers) {  // operands already on the device: compact there, copy nothing
    k.S = pl.s_ptr, k.X = pl.x_ptr, k.C = c.C;
    dev.compact_on_device(compact_geom(pl.s_ptr, pl.grid, pl.lds, opt), pl.grid, k, stats);
    if (whole_call()) return;
    dev.launch(c, k, tile_launch(c, k, pl.n_bands, opt), stats);
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const format::TiledMatrix s =
      format::compact(pl.s_ptr, std::uint32_t(pl.s_rows), std::uint32_t(pl.s_cols), pl.lds, compact_options(opt));
  stats.compact_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  add_tile_stats(s.headers.data(), s.headers.size(), stats);
  if (whole_call()) return;
  const TileLaunch L = tile_launch(c, k, pl.n_bands, opt);
  typename Dev::template Buf<format::TileHeader> H(s.headers.data(), s.headers.size());
  typename Dev::template Buf<std::uint8_t> PL(s.payload.data(), s.payload.size());
  // Exactly the BLAS spans; C's gaps (ldc > N) round-trip unchanged (the kernels write only M x N elements).
  typename Dev::template Buf<float> S(pl.s_ptr, blas_stored_elems(pl.s_rows, pl.s_cols, pl.lds)),
      X(pl.x_ptr, blas_stored_elems(pl.x_rows, pl.x_cols, pl.ldx)), C(c.C, blas_stored_elems(c.M, c.N, c.ldc));
  k.hdr = H.p, k.payload = PL.p, k.S = S.p, k.X = X.p, k.C = C.p;
  dev.launch(c, k, L, stats);
  C.to_host(c.C);
}

}  // inline namespace SPARTAN_SIMT_ABI
}  // namespace spartan::gemm::cudak
