// CUDA engines: cuBLAS SGEMM, the tile-sparse GEMM on the one tile-sparse format, and a cuSPARSE SpMM
// timing helper for the benchmark. See spartan/gemm/cuda.h and sw/gemm/README.md.
//
// Tile-sparse kernel: grid (bands of P on x, Q chunks of 128 on y, chunks of a band's P rows on z: the band
// count, N*P/tile for a conv's backward-data GEMM, can exceed gridDim.y's 65535 limit, Q cannot in practice,
// and a band has at most 1024 rows). A block owns Out[p_chunk rows of its band][128 columns of Q] as
// accumulators in shared memory (one column per thread, so shared-memory accesses are conflict-free; p_chunk
// <= kMaxPChunk rows, chosen by the engine so the block fits the GPU's shared memory, see chunk_rows()) and
// walks the band's tiles along R: nnz == 0 -> skipped (uniform branch); DENSE -> the tile is staged in shared
// memory and multiplied densely; ELL/BITMAP -> the block decodes the tile into a shared non-zero list
// {v, p, r} (BITMAP with a per-row prefix sum) and every thread applies each non-zero of its P rows to its
// column. Every block of a band decodes the band's tiles whole; each output element is summed in the same
// order whatever the chunking (tiles along R, then rows of a DENSE tile / entries of a sparse tile in list
// order). The same logical view as the CPU engine: Out[P x Q] += S[P x R] * D[R x Q].
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusparse.h>

#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "spartan/common/error.h"
#include "spartan/gemm/cuda.h"
#include "tile_compact_hd.h"

#ifndef SPARTAN_CUDA_ARCHS
#define SPARTAN_CUDA_ARCHS "(unknown)"
#endif

namespace spartan::gemm {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(std::string("cuda: ") + what + ": " + cudaGetErrorString(e));
}
void check(cublasStatus_t e, const char* what) {
  if (e != CUBLAS_STATUS_SUCCESS) throw Error(std::string("cublas: ") + what + ": status " + std::to_string(int(e)));
}
void check(cusparseStatus_t e, const char* what) {
  if (e != CUSPARSE_STATUS_SUCCESS) throw Error(std::string("cusparse: ") + what + ": " + cusparseGetErrorString(e));
}

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// Device buffer (RAII).
template <class T>
struct DevBuf {
  T* p = nullptr;
  std::size_t n = 0;
  explicit DevBuf(std::size_t count) : n(count) {
    if (n) check(cudaMalloc(&p, n * sizeof(T)), "cudaMalloc");
  }
  DevBuf(const T* host, std::size_t count) : DevBuf(count) {
    if (n) check(cudaMemcpy(p, host, n * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy H2D");
  }
  ~DevBuf() {
    if (p) cudaFree(p);
  }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  void to_host(T* host) const {
    if (n) check(cudaMemcpy(host, p, n * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
  }
};

struct Events {
  cudaEvent_t a = nullptr, b = nullptr;
  Events() {
    check(cudaEventCreate(&a), "cudaEventCreate");
    if (const cudaError_t e = cudaEventCreate(&b); e != cudaSuccess) {
      cudaEventDestroy(a);  // the destructor does not run when the constructor throws
      check(e, "cudaEventCreate");
    }
  }
  ~Events() {
    cudaEventDestroy(a);
    cudaEventDestroy(b);
  }
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
  double seconds() {
    check(cudaEventSynchronize(b), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, a, b), "cudaEventElapsedTime");
    return ms * 1e-3;
  }
};

void require_gpu() {
  const std::string why = cuda_unusable_reason();
  if (!why.empty()) throw Error("cuda: " + why);
}

/// Grow-only device scratch (kept by an engine across calls).
struct DevScratch {
  void* p = nullptr;
  std::size_t bytes = 0;
  DevScratch() = default;
  DevScratch(const DevScratch&) = delete;
  DevScratch& operator=(const DevScratch&) = delete;
  ~DevScratch() {
    if (p) cudaFree(p);
  }
  template <class T>
  T* get(std::size_t count) {
    const std::size_t want = count * sizeof(T) > 0 ? count * sizeof(T) : 1;
    if (want > bytes) {
      if (p) check(cudaFree(p), "cudaFree");
      p = nullptr;
      bytes = 0;
      check(cudaMalloc(&p, want), "cudaMalloc");
      bytes = want;
    }
    return static_cast<T*>(p);
  }
};

// Device compaction (tile_compact_hd.h): headers + aligned payload sizes, exclusive scan, payload writes.
__global__ void compact_count_kernel(hd::CompactGeom g, std::uint64_t tiles, format::TileHeader* hdr,
                                     std::uint64_t* sizes) {
  const std::uint64_t t = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= tiles) return;
  format::TileHeader h;
  sizes[t] = hd::align_up(hd::tile_count_header(g, t, &h), format::kPayloadAlignBytes);
  hdr[t] = h;
}

__global__ void compact_write_kernel(hd::CompactGeom g, std::uint64_t tiles, format::TileHeader* hdr,
                                     const std::uint64_t* offsets, std::uint8_t* payload) {
  const std::uint64_t t = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= tiles) return;
  format::TileHeader h = hdr[t];
  h.offset = offsets[t];
  hdr[t] = h;
  hd::tile_write_payload(g, t, h, payload);
}

// ---------------------------------------------------------------------------------------------------
// Kernels

// C = beta * C over M x N (beta == 0 writes zeros without reading C). Grid-stride over M*N, so that M may
// exceed the 65535 limit of gridDim.y.
__global__ void scale_kernel(float* C, int M, int N, int ldc, float beta) {
  const std::size_t total = std::size_t(M) * N;
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += std::size_t(gridDim.x) * blockDim.x) {
    float* c = C + (i / N) * ldc + i % N;
    *c = beta == 0.0f ? 0.0f : *c * beta;
  }
}

struct KParams {
  const format::TileHeader* hdr;
  const std::uint8_t* payload;
  const float* S;  // stored sparse operand (for in-place DENSE tiles)
  int lds;
  int g_rows, g_cols, TR, TC, tiles_c;
  int trans_s;  // logical S = stored^T
  int P, R, Q, p_tile, r_tile, n_rt;
  int p_chunk;  // rows of P per block (blockIdx.z selects the chunk of the band)
  const float* X;  // dense operand as stored
  int ldx;
  int d_rowmajor;  // D[r][q] = X[r*ldx + q] (else X[q*ldx + r])
  float* C;
  int ldc;
  int out_t;  // Out = C^T
  float alpha;
  int idx_bytes;
};

struct NzEntry {
  float v;
  unsigned short p, r;  // local row of S (P) and local column of S (R)
};

constexpr int kQB = 128;  // threads per block = Q columns per block
/// Most P rows (accumulator rows of kQB floats) one block keeps: 32 rows are 16 KiB of shared memory, so an
/// 8 x 256 tile needs 45,060 bytes per block in either orientation (under the 48 KiB that needs no opt-in) and
/// the default 16 x 256 tile 61,444 (as stored: 16 rows) or 69,636 (transposed: 32 rows), opted in by launch();
/// every GPU the build targets has at least 64 KiB (chunk_rows() takes fewer rows where it must).
constexpr int kMaxPChunk = 32;

__global__ void tile_sparse_kernel(KParams k) {
  extern __shared__ float smem[];
  float* acc = smem;                                // [p_chunk][kQB]
  float* stile = acc + k.p_chunk * kQB;             // [TR * TC] staged DENSE tile
  NzEntry* ent = reinterpret_cast<NzEntry*>(stile + k.TR * k.TC);  // [TR * TC]
  __shared__ unsigned rowstart[1025];
  const int tid = threadIdx.x, q = blockIdx.y * kQB + tid, band = blockIdx.x;
  const int p0 = band * k.p_tile, prows = min(k.p_tile, k.P - p0);
  const int c0 = int(blockIdx.z) * k.p_chunk;  // this block's first row within the band
  const int crows = min(k.p_chunk, prows - c0);  // its rows: [c0, c0 + crows)
  if (crows <= 0) return;  // whole block (a short last band has fewer chunks); before any barrier
  for (int i = tid; i < k.p_chunk * kQB; i += kQB) acc[i] = 0.0f;
  __syncthreads();
  for (int rt = 0; rt < k.n_rt; ++rt) {
    const int ti = k.trans_s ? rt : band, tj = k.trans_s ? band : rt;
    const format::TileHeader h = k.hdr[std::size_t(ti) * k.tiles_c + tj];
    if (h.nnz == 0) continue;  // uniform across the block
    const int re = min(k.TR, k.g_rows - ti * k.TR), ce = min(k.TC, k.g_cols - tj * k.TC);
    const int r0 = rt * k.r_tile;
    const std::uint8_t* pl = k.payload + h.offset;
    int first = 0, count = 0;  // entries [first, count) of ent[] can hold rows of this chunk
    if (h.format == 0) {  // DENSE: stage the tile, multiply densely
      const bool in_payload = h.flags & format::kFlagDenseInPayload;
      for (int i = tid; i < re * ce; i += kQB) {
        const int r = i / ce, c = i % ce;
        stile[i] = in_payload ? reinterpret_cast<const float*>(pl)[i]
                              : k.S[std::size_t(ti * k.TR + r) * k.lds + tj * k.TC + c];
      }
      __syncthreads();
      if (q < k.Q) {
        const int rext = k.trans_s ? re : ce, pend = min(k.trans_s ? ce : re, c0 + crows);
        for (int rl = 0; rl < rext; ++rl) {
          const int r = r0 + rl;
          const float d = k.d_rowmajor ? k.X[std::size_t(r) * k.ldx + q] : k.X[std::size_t(q) * k.ldx + r];
          for (int p = c0; p < pend; ++p) {
            const float sv = k.trans_s ? stile[rl * ce + p] : stile[p * ce + rl];
            acc[(p - c0) * kQB + tid] += sv * d;
          }
        }
      }
      __syncthreads();
      continue;
    }
    if (h.format == 1) {  // ELL: one entry per slot, padding keeps v = +0.0 and is skipped
      const int w = h.width, slots = re * w;
      const int voff = ((slots * k.idx_bytes) + 3) / 4 * 4;
      const float* vals = reinterpret_cast<const float*>(pl + voff);
      for (int s = tid; s < slots; s += kQB) {
        const int row = s / w;
        const int col = k.idx_bytes == 1 ? pl[s] : (pl[2 * s] | (pl[2 * s + 1] << 8));
        NzEntry e;
        e.v = vals[s];
        e.p = static_cast<unsigned short>(k.trans_s ? col : row);
        e.r = static_cast<unsigned short>(k.trans_s ? row : col);
        ent[s] = e;
      }
      count = slots;
      if (!k.trans_s) first = c0 * w, count = (c0 + crows) * w;  // p = tile row: rows c0.. are contiguous
    } else {  // BITMAP: per-row popcount, prefix sum, then each row writes its entries
      const int words = (ce + 31) / 32;
      const std::uint32_t* bm = reinterpret_cast<const std::uint32_t*>(pl);
      const float* vals = reinterpret_cast<const float*>(pl + std::size_t(re) * words * 4);
      for (int r = tid; r < re; r += kQB) {
        unsigned n = 0;
        for (int wi = 0; wi < words; ++wi) n += __popc(bm[r * words + wi]);
        rowstart[r + 1] = n;
      }
      __syncthreads();
      if (tid == 0) {
        rowstart[0] = 0;
        for (int r = 0; r < re; ++r) rowstart[r + 1] += rowstart[r];
      }
      __syncthreads();
      for (int r = tid; r < re; r += kQB) {
        unsigned pos = rowstart[r];
        for (int wi = 0; wi < words; ++wi) {
          std::uint32_t bits = bm[r * words + wi];
          while (bits) {
            const int b = __ffs(bits) - 1;
            bits &= bits - 1;
            const int col = wi * 32 + b;
            NzEntry e;
            e.v = vals[pos];
            e.p = static_cast<unsigned short>(k.trans_s ? col : r);
            e.r = static_cast<unsigned short>(k.trans_s ? r : col);
            ent[pos++] = e;
          }
        }
      }
      count = int(h.nnz);
    }
    __syncthreads();
    if (!k.trans_s && h.format != 1) first = int(rowstart[c0]), count = int(rowstart[c0 + crows]);  // BITMAP rows
    if (q < k.Q)
      for (int i = first; i < count; ++i) {
        const NzEntry e = ent[i];
        if (e.v == 0.0f) continue;  // ELL padding (stored values are never zero)
        const int pl = int(e.p) - c0;
        if (unsigned(pl) >= unsigned(crows)) continue;  // another chunk's row (S transposed)
        const int r = r0 + e.r;
        const float d = k.d_rowmajor ? k.X[std::size_t(r) * k.ldx + q] : k.X[std::size_t(q) * k.ldx + r];
        acc[pl * kQB + tid] += e.v * d;
      }
    __syncthreads();
  }
  if (q < k.Q)
    for (int p = 0; p < crows; ++p) {
      const int pg = p0 + c0 + p;
      float* c = k.out_t ? k.C + std::size_t(q) * k.ldc + pg : k.C + std::size_t(pg) * k.ldc + q;
      *c += k.alpha * acc[p * kQB + tid];
    }
}

// ---------------------------------------------------------------------------------------------------
// Engines

struct StatsHolder {
  TileSparseStats stats;
};

class CudaDenseEngine final : public GemmEngine, public StatsHolder {
 public:
  CudaDenseEngine() {
    require_gpu();
    check(cublasCreate(&h_), "cublasCreate");
  }
  ~CudaDenseEngine() override { cublasDestroy(h_); }
  std::string name() const override { return "cuda-dense"; }
  void run(const GemmCall& c) override {
    validate_shape(c);
    stats = TileSparseStats{};
    if (c.M == 0 || c.N == 0) return;
    if (c.device_pointers) {  // device-resident operands: no copies
      stats.compute_s = sgemm(c, c.A, c.B, c.C);
      return;
    }
    const int ar = c.op_a == Op::N ? c.M : c.K, ac = c.op_a == Op::N ? c.K : c.M;
    const int br = c.op_b == Op::N ? c.K : c.N, bc = c.op_b == Op::N ? c.N : c.K;
    // Exactly the BLAS spans. C's span is uploaded whole and the kernels write only its M x N elements, so the
    // copy back leaves the gaps between rows (ldc > N) as they were.
    DevBuf<float> A(c.A, blas_stored_elems(ar, ac, c.lda)), B(c.B, blas_stored_elems(br, bc, c.ldb)),
        C(c.C, blas_stored_elems(c.M, c.N, c.ldc));
    stats.compute_s = sgemm(c, A.p, B.p, C.p);
    C.to_host(c.C);
  }

 private:
  /// cuBLAS on device operands (legacy default stream), timed with CUDA events; returns device seconds.
  double sgemm(const GemmCall& c, const float* A, const float* B, float* C) {
    Events ev;
    check(cudaEventRecord(ev.a), "cudaEventRecord");
    // Row-major C = op(A) op(B)  <=>  column-major C^T = op(B)^T op(A)^T.
    check(cublasSgemm(h_, c.op_b == Op::N ? CUBLAS_OP_N : CUBLAS_OP_T, c.op_a == Op::N ? CUBLAS_OP_N : CUBLAS_OP_T,
                      c.N, c.M, c.K, &c.alpha, B, c.ldb, A, c.lda, &c.beta, C, c.ldc),
          "cublasSgemm");
    check(cudaEventRecord(ev.b), "cudaEventRecord");
    return ev.seconds();
  }
  cublasHandle_t h_{};
};

class CudaTileSparseEngine final : public GemmEngine, public StatsHolder {
 public:
  explicit CudaTileSparseEngine(const TileSparseOptions& opt) : opt_(opt) {
    if (opt.tile_rows == 0 || opt.tile_cols == 0 || std::size_t(opt.tile_rows) * opt.tile_cols > 4096 ||
        opt.tile_rows > 1024 || opt.tile_cols > 1024)
      throw InputError("cuda tile-sparse gemm: tiles must have 1..4096 elements and sides <= 1024");
    if (opt.sparse_format != format::TileFormat::Ell && opt.sparse_format != format::TileFormat::Bitmap)
      throw InputError("cuda tile-sparse gemm: sparse format must be ELL or BITMAP");
    check_threshold_options(opt, "cuda tile-sparse gemm");
    require_gpu();
    // Shared memory per block, checked here (before any compaction or upload) for both band heights: P rows
    // of a band are TR (S as stored) or TC (S transposed).
    int dev = 0;
    check(cudaGetDevice(&dev), "cudaGetDevice");
    check(cudaDeviceGetAttribute(&smem_max_, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev), "cudaDeviceGetAttribute");
    cudaFuncAttributes fa{};
    check(cudaFuncGetAttributes(&fa, tile_sparse_kernel), "cudaFuncGetAttributes");
    smem_static_ = fa.sharedSizeBytes;  // rowstart[]: the opt-in limit covers static + dynamic
    chunk_[0] = chunk_rows(int(opt.tile_rows));
    chunk_[1] = chunk_rows(int(opt.tile_cols));
  }
  std::string name() const override { return "cuda-tile-sparse"; }
  void run(const GemmCall& c) override {
    validate_shape(c);
    stats = TileSparseStats{};
    if (c.M == 0 || c.N == 0) return;
    if (c.sparse == SparseOperand::None || c.K == 0) {
      stats = run_dense(c);
      return;
    }
    const bool sp_a = c.sparse == SparseOperand::A;
    const bool op_n = sp_a ? c.op_a == Op::N : c.op_b == Op::N;
    const int s_rows = sp_a ? (op_n ? c.M : c.K) : (op_n ? c.K : c.N);
    const int s_cols = sp_a ? (op_n ? c.K : c.M) : (op_n ? c.N : c.K);
    const float* s_ptr = sp_a ? c.A : c.B;
    const int lds = sp_a ? c.lda : c.ldb;
    const float* X = sp_a ? c.B : c.A;
    const int ldx = sp_a ? c.ldb : c.lda;
    const int x_rows = sp_a ? (c.op_b == Op::N ? c.K : c.N) : (c.op_a == Op::N ? c.M : c.K);
    const int x_cols = sp_a ? (c.op_b == Op::N ? c.N : c.K) : (c.op_a == Op::N ? c.K : c.M);
    const format::TileGrid grid{std::uint32_t(s_rows), std::uint32_t(s_cols), opt_.tile_rows, opt_.tile_cols};

    KParams k{};
    k.trans_s = sp_a ? c.op_a == Op::T : c.op_b == Op::N;
    k.g_rows = s_rows, k.g_cols = s_cols, k.TR = int(opt_.tile_rows), k.TC = int(opt_.tile_cols);
    k.tiles_c = int(grid.tiles_c());
    k.P = sp_a ? c.M : c.N, k.R = c.K, k.Q = sp_a ? c.N : c.M;
    k.p_tile = k.trans_s ? k.TC : k.TR;
    k.r_tile = k.trans_s ? k.TR : k.TC;
    k.n_rt = int(k.trans_s ? grid.tiles_r() : grid.tiles_c());
    k.p_chunk = chunk_[k.trans_s ? 1 : 0];
    const int n_bands = int(k.trans_s ? grid.tiles_c() : grid.tiles_r());
    k.ldx = ldx;
    k.d_rowmajor = sp_a ? c.op_b == Op::N : c.op_a == Op::T;
    k.out_t = !sp_a;
    k.ldc = c.ldc;
    k.alpha = c.alpha;
    k.lds = lds;
    k.idx_bytes = int(format::index_bytes(opt_.tile_cols));

    if (c.device_pointers) {  // operands already on the device: compact there, copy nothing
      k.S = s_ptr, k.X = X, k.C = c.C;
      compact_on_device(s_ptr, grid, lds, k);
      if (whole_call(c, grid)) return;
      launch(c, k, n_bands);
      return;
    }
    format::CompactOptions o;
    o.tile_rows = opt_.tile_rows;
    o.tile_cols = opt_.tile_cols;
    o.threshold = opt_.threshold;
    o.sparse_format = opt_.sparse_format;
    o.dense_if_not_smaller = opt_.dense_if_not_smaller;
    const double t0 = now_s();
    const format::TiledMatrix s = format::compact(s_ptr, std::uint32_t(s_rows), std::uint32_t(s_cols), lds, o);
    stats.compact_s = now_s() - t0;
    tile_stats(s.headers);
    if (whole_call(c, grid)) return;
    DevBuf<format::TileHeader> H(s.headers.data(), s.headers.size());
    DevBuf<std::uint8_t> PL(s.payload.data(), s.payload.size());
    // Exactly the BLAS spans; C's gaps (ldc > N) round-trip unchanged (the kernels write only M x N elements).
    DevBuf<float> S(s_ptr, blas_stored_elems(s_rows, s_cols, lds)), Xd(X, blas_stored_elems(x_rows, x_cols, ldx)),
        C(c.C, blas_stored_elems(c.M, c.N, c.ldc));
    k.hdr = H.p, k.payload = PL.p, k.S = S.p, k.X = Xd.p, k.C = C.p;
    launch(c, k, n_bands);
    C.to_host(c.C);
  }

 private:
  /// cuBLAS SGEMM of the whole call (one handle kept across calls); returns its stats.
  TileSparseStats run_dense(const GemmCall& c) {
    if (!dense_) dense_ = std::make_unique<CudaDenseEngine>();
    dense_->run(c);
    return dense_->stats;
  }
  /// The CPU engine's whole-call rule (TileSparseEngine::run_compacted), after the tile statistics: with
  /// alpha != 0, when every tile is DENSE or (whole_call_guard) the operand's density is at least
  /// guard_fraction * threshold, the call is one cuBLAS SGEMM of the whole call (so zeros of the sparse
  /// operand meet Inf / NaN of the dense one exactly as in the CPU engine). Returns true when it ran it.
  bool whole_call(const GemmCall& c, const format::TileGrid& grid) {
    if (c.alpha == 0.0f) return false;  // launch(): C = beta * C only, neither operand read
    const double density = double(stats.nnz) / (double(grid.rows) * double(grid.cols));
    if (!((stats.tiles_sparse == 0 && stats.tiles_zero == 0) ||
          (opt_.whole_call_guard && density >= opt_.guard_fraction * opt_.threshold)))
      return false;
    stats.compute_s = run_dense(c).compute_s;
    stats.full_dense = true;
    stats.dense_calls = 1;
    return true;
  }
  /// Dynamic shared memory of a block with `p_chunk` accumulator rows: acc, staged DENSE tile, entry list.
  std::size_t smem_bytes(int p_chunk) const {
    const std::size_t tile = std::size_t(opt_.tile_rows) * opt_.tile_cols;
    return (std::size_t(p_chunk) * kQB + tile) * sizeof(float) + tile * sizeof(NzEntry);
  }
  /// Rows of P per block for bands of `p_tile` rows: the band split into the fewest chunks of at most
  /// kMaxPChunk rows (as equal as possible), fewer rows while the block does not fit the GPU's shared memory.
  /// Throws spartan::InputError when not even one row fits (not the case on any GPU of the build's
  /// architectures: a tile of 4096 elements with one row needs 49,664 + 4,100 bytes).
  int chunk_rows(int p_tile) const {
    for (int cap = kMaxPChunk; cap >= 1; cap /= 2) {
      const int chunks = (p_tile + cap - 1) / cap;
      const int rows = (p_tile + chunks - 1) / chunks;
      if (smem_bytes(rows) + smem_static_ <= std::size_t(smem_max_)) return rows;
    }
    throw InputError("cuda tile-sparse gemm: tile " + std::to_string(opt_.tile_rows) + "x" +
                     std::to_string(opt_.tile_cols) + " needs " + std::to_string(smem_bytes(1)) + " + " +
                     std::to_string(smem_static_) + " (static) bytes of shared memory per block, the GPU allows " +
                     std::to_string(smem_max_) + " (use smaller tiles)");
  }

  void tile_stats(const std::vector<format::TileHeader>& headers) {
    for (const auto& hh : headers) {
      stats.nnz += hh.nnz;
      if (hh.nnz == 0)
        ++stats.tiles_zero;
      else if (hh.format == std::uint8_t(format::TileFormat::Dense))
        ++stats.tiles_dense;
      else
        ++stats.tiles_sparse;
    }
  }

  /// Compacts the device operand S (rows x cols of `grid`, row stride lds) into the format of
  /// format::compact() (DENSE tiles in place) in device memory: one thread per tile counts (header, payload
  /// size), CUB exclusive-sums the 16-byte-aligned sizes into offsets, one thread per tile writes its payload
  /// into a zeroed area. compact_s is the device time of these steps (CUDA events). Sets k.hdr and k.payload.
  void compact_on_device(const float* s_dev, const format::TileGrid& grid, int lds, KParams& k) {
    const std::uint64_t tiles = grid.num_tiles();
    if (tiles > std::uint64_t(0x7FFFFFFF)) throw InputError("cuda tile-sparse gemm: too many tiles for one scan");
    hd::CompactGeom g{s_dev, std::uint64_t(lds), grid.rows, grid.cols, grid.tile_rows, grid.tile_cols,
                      grid.tiles_c(), opt_.threshold, std::uint8_t(opt_.sparse_format),
                      opt_.dense_if_not_smaller};
    format::TileHeader* hdr = hdr_.get<format::TileHeader>(tiles);
    std::uint64_t* sizes = sizes_.get<std::uint64_t>(tiles);
    std::uint64_t* offsets = offsets_.get<std::uint64_t>(tiles);
    const std::uint64_t payload_bound = tiles * hd::max_tile_payload_bytes(grid.tile_rows, grid.tile_cols);
    std::uint8_t* payload = payload_.get<std::uint8_t>(payload_bound);
    std::size_t temp_bytes = 0;
    check(cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, sizes, offsets, int(tiles)), "cub ExclusiveSum (size)");
    void* temp = scan_temp_.get<std::uint8_t>(temp_bytes);
    Events ev;
    check(cudaEventRecord(ev.a), "cudaEventRecord");
    check(cudaMemsetAsync(payload, 0, payload_bound), "cudaMemsetAsync");
    const int threads = 128;
    const unsigned blocks = unsigned((tiles + threads - 1) / threads);
    compact_count_kernel<<<blocks, threads>>>(g, tiles, hdr, sizes);
    check(cudaGetLastError(), "compact_count_kernel launch");
    check(cub::DeviceScan::ExclusiveSum(temp, temp_bytes, sizes, offsets, int(tiles)), "cub ExclusiveSum");
    compact_write_kernel<<<blocks, threads>>>(g, tiles, hdr, offsets, payload);
    check(cudaGetLastError(), "compact_write_kernel launch");
    check(cudaEventRecord(ev.b), "cudaEventRecord");
    stats.compact_s = ev.seconds();
    std::vector<format::TileHeader> host_hdr(tiles);  // for the tile statistics (synchronous copy)
    check(cudaMemcpy(host_hdr.data(), hdr, tiles * sizeof(format::TileHeader), cudaMemcpyDeviceToHost),
          "cudaMemcpy D2H (tile headers)");
    tile_stats(host_hdr);
    k.hdr = hdr;
    k.payload = payload;
  }

  /// Scales C by beta and runs the tile kernel (all pointers in k are device pointers); compute_s = device time.
  /// alpha == 0: only the scaling (BLAS semantics: A and B are not read, so Inf or NaN in them cannot make
  /// 0 * Inf = NaN in C).
  void launch(const GemmCall& c, KParams& k, int n_bands) {
    const std::size_t smem = smem_bytes(k.p_chunk);  // fits: chunk_rows() chose p_chunk
    const std::size_t smem_static = smem_static_;
    const int p_chunks = (k.p_tile + k.p_chunk - 1) / k.p_chunk;  // gridDim.z <= 1024
    const int q_blocks = (k.Q + kQB - 1) / kQB;  // gridDim.y; bands go on gridDim.x (limit 2^31 - 1)
    if (q_blocks > 65535)
      throw InputError("cuda tile-sparse gemm: Q = " + std::to_string(k.Q) + " needs " + std::to_string(q_blocks) +
                       " column blocks of " + std::to_string(kQB) + ", more than gridDim.y's 65535");
    if (smem + smem_static > 48 * 1024)
      check(cudaFuncSetAttribute(tile_sparse_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)),
            "cudaFuncSetAttribute");
    Events ev;
    check(cudaEventRecord(ev.a), "cudaEventRecord");
    const std::size_t mn = std::size_t(c.M) * c.N;
    scale_kernel<<<unsigned(std::min<std::size_t>((mn + 255) / 256, 65535)), 256>>>(k.C, c.M, c.N, c.ldc, c.beta);
    if (k.alpha != 0.0f)
      tile_sparse_kernel<<<dim3(unsigned(n_bands), unsigned(q_blocks), unsigned(p_chunks)), kQB, smem>>>(k);
    check(cudaGetLastError(), "tile_sparse_kernel launch");
    check(cudaEventRecord(ev.b), "cudaEventRecord");
    stats.compute_s = ev.seconds();
  }

  DevScratch hdr_, sizes_, offsets_, payload_, scan_temp_;
  TileSparseOptions opt_;
  int smem_max_ = 0;              ///< the device's opt-in shared memory per block (bytes)
  std::size_t smem_static_ = 0;   ///< tile_sparse_kernel's static shared memory (bytes)
  int chunk_[2] = {1, 1};         ///< p_chunk for bands of tile_rows (S as stored) and tile_cols (S transposed)
  std::unique_ptr<CudaDenseEngine> dense_;  ///< for calls without a sparse operand (created on first use)
};

}  // namespace

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky error of a missing driver/device
    return 0;
  }
  return n;
}

std::string cuda_unusable_reason() {
  if (cuda_device_count() == 0) return "no CUDA GPU available";
  cudaFuncAttributes fa{};
  const cudaError_t e = cudaFuncGetAttributes(&fa, scale_kernel);  // fails without a kernel image for the GPU
  if (e == cudaSuccess) return "";
  cudaGetLastError();  // not sticky; clear it
  int dev = 0, major = 0, minor = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
  return "unsupported GPU architecture sm_" + std::to_string(major) + std::to_string(minor) +
         ": this build has kernels for CMAKE_CUDA_ARCHITECTURES " SPARTAN_CUDA_ARCHS " only (" +
         cudaGetErrorString(e) + ")";
}

std::unique_ptr<GemmEngine> make_cuda_dense_engine() { return std::make_unique<CudaDenseEngine>(); }
std::unique_ptr<GemmEngine> make_cuda_tile_sparse_engine(const TileSparseOptions& opt) {
  return std::make_unique<CudaTileSparseEngine>(opt);
}

const TileSparseStats* cuda_last_tile_stats(const GemmEngine& e) {
  if (auto* h = dynamic_cast<const StatsHolder*>(&e)) return &h->stats;
  return nullptr;
}

double cusparse_spmm_seconds(const float* A, const float* B, float* C, int M, int N, int K, int repeats) {
  require_gpu();
  // C^T [N x M] = B^T [N x K] (CSR) * A^T [K x M]; A^T is A read column-major (ld K), C^T is C read
  // column-major (ld N).
  std::vector<int> row_ptr(std::size_t(N) + 1, 0), col;
  std::vector<float> val;
  for (int n = 0; n < N; ++n) {
    for (int k = 0; k < K; ++k) {
      const float v = B[std::size_t(k) * N + n];
      if (!format::is_zero(v)) {
        col.push_back(k);
        val.push_back(v);
      }
    }
    row_ptr[n + 1] = int(col.size());
  }
  if (col.empty()) {  // nnz == 0: cuSPARSE still gets valid (one-element) index/value arrays
    col.push_back(0);
    val.push_back(0.0f);
  }
  const std::size_t nnz = std::size_t(row_ptr[N]);
  DevBuf<int> rp(row_ptr.data(), row_ptr.size()), ci(col.data(), col.size());
  DevBuf<float> vv(val.data(), val.size()), Ad(A, std::size_t(M) * K), Cd(std::size_t(M) * N);
  // The handle and descriptors are released on every path (a failing call below throws).
  struct Handle {
    cusparseHandle_t h = nullptr;
    ~Handle() {
      if (h) cusparseDestroy(h);
    }
  } h;
  struct SpMat {
    cusparseSpMatDescr_t d = nullptr;
    ~SpMat() {
      if (d) cusparseDestroySpMat(d);
    }
  } sa;
  struct DnMat {
    cusparseDnMatDescr_t d = nullptr;
    ~DnMat() {
      if (d) cusparseDestroyDnMat(d);
    }
  } db, dc;
  check(cusparseCreate(&h.h), "cusparseCreate");
  check(cusparseCreateCsr(&sa.d, N, K, std::int64_t(nnz), rp.p, ci.p, vv.p, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
                          CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F),
        "cusparseCreateCsr");
  check(cusparseCreateDnMat(&db.d, K, M, K, Ad.p, CUDA_R_32F, CUSPARSE_ORDER_COL), "cusparseCreateDnMat");
  check(cusparseCreateDnMat(&dc.d, N, M, N, Cd.p, CUDA_R_32F, CUSPARSE_ORDER_COL), "cusparseCreateDnMat");
  const float alpha = 1.0f, beta = 0.0f;
  std::size_t bytes = 0;
  check(cusparseSpMM_bufferSize(h.h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, sa.d,
                                db.d, &beta, dc.d, CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, &bytes),
        "cusparseSpMM_bufferSize");
  DevBuf<std::uint8_t> buf(std::max<std::size_t>(bytes, 1));
  double best = 1e30;
  for (int i = 0; i < std::max(1, repeats) + 1; ++i) {
    Events ev;
    check(cudaEventRecord(ev.a), "cudaEventRecord");
    check(cusparseSpMM(h.h, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, sa.d, db.d,
                       &beta, dc.d, CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, buf.p),
          "cusparseSpMM");
    check(cudaEventRecord(ev.b), "cudaEventRecord");
    const double t = ev.seconds();
    if (i > 0) best = std::min(best, t);  // first call warms up
  }
  Cd.to_host(C);
  return best;
}

}  // namespace spartan::gemm
