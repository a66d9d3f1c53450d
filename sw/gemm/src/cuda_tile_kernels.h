// The CUDA tile-sparse engine's kernels and the host-side arithmetic of its launches, in one source for nvcc
// (cuda_engines.cu) and for the host emulation of CUDA launches (spartan/common/simt.h; simt_engines.cpp), so
// that the very kernels the GPU runs are also tested on machines without one (tests/test_cuda_simt.cpp).
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
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "spartan/common/error.h"
#include "spartan/common/simt.h"
#include "spartan/format/tile_format.h"
#include "spartan/gemm/gemm.h"
#include "spartan/gemm/tile_sparse.h"
#include "tile_compact_hd.h"

namespace spartan::gemm::cudak {
inline namespace SPARTAN_SIMT_ABI {  // nvcc's and the host emulation's symbols differ (simt.h)

SPARTAN_SIMT_NAMES

SPARTAN_HD inline int imin(int a, int b) { return a < b ? a : b; }

/// Words of tile_sparse_kernel's static shared array rowstart[] (BITMAP row starts: tiles have <= 1024 rows).
constexpr int kRowstartWords = 1025;

// Device compaction (tile_compact_hd.h): headers + aligned payload sizes, exclusive scan, payload writes.
SPARTAN_KERNEL void compact_count_kernel(hd::CompactGeom g, std::uint64_t tiles, format::TileHeader* hdr,
                                     std::uint64_t* sizes) {
  const std::uint64_t t = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= tiles) return;
  format::TileHeader h;
  sizes[t] = hd::align_up(hd::tile_count_header(g, t, &h), format::kPayloadAlignBytes);
  hdr[t] = h;
}

SPARTAN_KERNEL void compact_write_kernel(hd::CompactGeom g, std::uint64_t tiles, format::TileHeader* hdr,
                                     const std::uint64_t* offsets, std::uint8_t* payload) {
  const std::uint64_t t = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= tiles) return;
  format::TileHeader h = hdr[t];
  h.offset = offsets[t];
  hdr[t] = h;
  hd::tile_write_payload(g, t, h, payload);
}

// C = beta * C over M x N (beta == 0 writes zeros without reading C). Grid-stride over M*N, so that M may
// exceed the 65535 limit of gridDim.y.
SPARTAN_KERNEL void scale_kernel(float* C, int M, int N, int ldc, float beta) {
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
/// Most P rows (accumulator rows of kQB floats) one block keeps: 32 rows are 16 KiB of shared memory. Shared
/// memory per block, smem_bytes() + the static rowstart[] (4,100 bytes in the source; the compiled kernel
/// reports its own figure, cudaFuncGetAttributes): an 8 x 256 tile 28,672 + 4,100 = 32,772 bytes as stored
/// (bands of 8 rows) and 40,960 + 4,100 = 45,060 transposed (chunks of 32 rows), under the 48 KiB that needs
/// no opt-in; the default 16 x 256 tile 57,344 + 4,100 = 61,444 as stored and 65,536 + 4,100 = 69,636
/// transposed, opted in by the engine's launch. chunk_rows() takes fewer rows where a GPU allows less (sm_75:
/// 64 KiB, 16 rows for the transposed 16 x 256 tile).
constexpr int kMaxPChunk = 32;

SPARTAN_KERNEL void tile_sparse_kernel(KParams k) {
  SPARTAN_DYNAMIC_SHARED(float, smem);
  float* acc = smem;                                // [p_chunk][kQB]
  float* stile = acc + k.p_chunk * kQB;             // [TR * TC] staged DENSE tile
  NzEntry* ent = reinterpret_cast<NzEntry*>(stile + k.TR * k.TC);  // [TR * TC]
  SPARTAN_SHARED_ARRAY(unsigned, rowstart, kRowstartWords);
  const int tid = threadIdx.x, q = blockIdx.y * kQB + tid, band = blockIdx.x;
  const int p0 = band * k.p_tile, prows = imin(k.p_tile, k.P - p0);
  const int c0 = int(blockIdx.z) * k.p_chunk;  // this block's first row within the band
  const int crows = imin(k.p_chunk, prows - c0);  // its rows: [c0, c0 + crows)
  if (crows <= 0) return;  // whole block (a short last band has fewer chunks); before any barrier
  for (int i = tid; i < k.p_chunk * kQB; i += kQB) acc[i] = 0.0f;
  SPARTAN_SYNCTHREADS();
  for (int rt = 0; rt < k.n_rt; ++rt) {
    const int ti = k.trans_s ? rt : band, tj = k.trans_s ? band : rt;
    const format::TileHeader h = k.hdr[std::size_t(ti) * k.tiles_c + tj];
    if (h.nnz == 0) continue;  // uniform across the block
    const int re = imin(k.TR, k.g_rows - ti * k.TR), ce = imin(k.TC, k.g_cols - tj * k.TC);
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
      SPARTAN_SYNCTHREADS();
      if (q < k.Q) {
        const int rext = k.trans_s ? re : ce, pend = imin(k.trans_s ? ce : re, c0 + crows);
        for (int rl = 0; rl < rext; ++rl) {
          const int r = r0 + rl;
          const float d = k.d_rowmajor ? k.X[std::size_t(r) * k.ldx + q] : k.X[std::size_t(q) * k.ldx + r];
          for (int p = c0; p < pend; ++p) {
            const float sv = k.trans_s ? stile[rl * ce + p] : stile[p * ce + rl];
            acc[(p - c0) * kQB + tid] += sv * d;
          }
        }
      }
      SPARTAN_SYNCTHREADS();
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
        for (int wi = 0; wi < words; ++wi) n += simt::popc(bm[r * words + wi]);
        rowstart[r + 1] = n;
      }
      SPARTAN_SYNCTHREADS();
      if (tid == 0) {
        rowstart[0] = 0;
        for (int r = 0; r < re; ++r) rowstart[r + 1] += rowstart[r];
      }
      SPARTAN_SYNCTHREADS();
      for (int r = tid; r < re; r += kQB) {
        unsigned pos = rowstart[r];
        for (int wi = 0; wi < words; ++wi) {
          std::uint32_t bits = bm[r * words + wi];
          while (bits) {
            const int b = simt::ffs(bits) - 1;
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
    SPARTAN_SYNCTHREADS();
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
    SPARTAN_SYNCTHREADS();
  }
  if (q < k.Q)
    for (int p = 0; p < crows; ++p) {
      const int pg = p0 + c0 + p;
      float* c = k.out_t ? k.C + std::size_t(q) * k.ldc + pg : k.C + std::size_t(pg) * k.ldc + q;
      *c += k.alpha * acc[p * kQB + tid];
    }
}

// ---------------------------------------------------------------------------------------------------
// Host side: options, shared memory, the call's parameters and launch shape (shared by the CUDA engine and
// its host emulation).

/// tile_sparse_kernel's static shared memory (rowstart[]); the CUDA engine asks the runtime for the same
/// figure (cudaFuncGetAttributes), the emulation takes this one.
constexpr std::size_t kTileKernelStaticSmemBytes = kRowstartWords * sizeof(unsigned);

/// The CUDA tile-sparse engine's option checks (before any GPU query): throws spartan::InputError for tiles
/// over 4096 elements or a side over 1024, a format other than ELL/BITMAP, and check_threshold_options'.
inline void check_cuda_tile_options(const TileSparseOptions& opt) {
  if (opt.tile_rows == 0 || opt.tile_cols == 0 || std::size_t(opt.tile_rows) * opt.tile_cols > 4096 ||
      opt.tile_rows > 1024 || opt.tile_cols > 1024)
    throw InputError("cuda tile-sparse gemm: tiles must have 1..4096 elements and sides <= 1024");
  if (opt.sparse_format != format::TileFormat::Ell && opt.sparse_format != format::TileFormat::Bitmap)
    throw InputError("cuda tile-sparse gemm: sparse format must be ELL or BITMAP");
  check_threshold_options(opt, "cuda tile-sparse gemm");
}

/// Dynamic shared memory of a block with `p_chunk` accumulator rows: acc, staged DENSE tile, entry list.
inline std::size_t smem_bytes(const TileSparseOptions& opt, int p_chunk) {
  const std::size_t tile = std::size_t(opt.tile_rows) * opt.tile_cols;
  return (std::size_t(p_chunk) * kQB + tile) * sizeof(float) + tile * sizeof(NzEntry);
}

/// Rows of P per block for bands of `p_tile` rows: the band split into the fewest chunks of at most
/// kMaxPChunk rows (as equal as possible), fewer rows while the block (dynamic + `smem_static` bytes) does not
/// fit `smem_max` bytes (the GPU's opt-in shared memory per block). Throws spartan::InputError when not even
/// one row fits (not the case on any GPU of the build's architectures: a tile of 4096 elements with one row
/// needs 49,664 + 4,100 bytes).
inline int chunk_rows(const TileSparseOptions& opt, int p_tile, int smem_max, std::size_t smem_static) {
  for (int cap = kMaxPChunk; cap >= 1; cap /= 2) {
    const int chunks = (p_tile + cap - 1) / cap;
    const int rows = (p_tile + chunks - 1) / chunks;
    if (smem_bytes(opt, rows) + smem_static <= std::size_t(smem_max)) return rows;
  }
  throw InputError("cuda tile-sparse gemm: tile " + std::to_string(opt.tile_rows) + "x" +
                   std::to_string(opt.tile_cols) + " needs " + std::to_string(smem_bytes(opt, 1)) + " + " +
                   std::to_string(smem_static) + " (static) bytes of shared memory per block, the GPU allows " +
                   std::to_string(smem_max) + " (use smaller tiles)");
}

/// One call's view for the kernel: the stored sparse operand S, the dense operand X, the tile grid of S and
/// the kernel parameters (device pointers left null: the driver sets them).
struct CallPlan {
  KParams k{};
  format::TileGrid grid{};
  int n_bands = 0;
  const float* s_ptr = nullptr;  ///< the call's sparse operand (as stored)
  int s_rows = 0, s_cols = 0, lds = 0;
  const float* x_ptr = nullptr;  ///< the call's dense operand (as stored)
  int x_rows = 0, x_cols = 0, ldx = 0;
};

/// The plan of a call with a sparse operand (c.sparse != None). `chunk` = chunk_rows() for bands of
/// tile_rows (S as stored) and tile_cols (S transposed).
inline CallPlan plan_call(const GemmCall& c, const TileSparseOptions& opt, const int chunk[2]) {
  CallPlan pl;
  const bool sp_a = c.sparse == SparseOperand::A;
  const bool op_n = sp_a ? c.op_a == Op::N : c.op_b == Op::N;
  pl.s_rows = sp_a ? (op_n ? c.M : c.K) : (op_n ? c.K : c.N);
  pl.s_cols = sp_a ? (op_n ? c.K : c.M) : (op_n ? c.N : c.K);
  pl.s_ptr = sp_a ? c.A : c.B;
  pl.lds = sp_a ? c.lda : c.ldb;
  pl.x_ptr = sp_a ? c.B : c.A;
  pl.ldx = sp_a ? c.ldb : c.lda;
  pl.x_rows = sp_a ? (c.op_b == Op::N ? c.K : c.N) : (c.op_a == Op::N ? c.M : c.K);
  pl.x_cols = sp_a ? (c.op_b == Op::N ? c.N : c.K) : (c.op_a == Op::N ? c.K : c.M);
  pl.grid = format::TileGrid{std::uint32_t(pl.s_rows), std::uint32_t(pl.s_cols), opt.tile_rows, opt.tile_cols};

  KParams& k = pl.k;
  k.trans_s = sp_a ? c.op_a == Op::T : c.op_b == Op::N;
  k.g_rows = pl.s_rows, k.g_cols = pl.s_cols, k.TR = int(opt.tile_rows), k.TC = int(opt.tile_cols);
  k.tiles_c = int(pl.grid.tiles_c());
  k.P = sp_a ? c.M : c.N, k.R = c.K, k.Q = sp_a ? c.N : c.M;
  k.p_tile = k.trans_s ? k.TC : k.TR;
  k.r_tile = k.trans_s ? k.TR : k.TC;
  k.n_rt = int(k.trans_s ? pl.grid.tiles_r() : pl.grid.tiles_c());
  k.p_chunk = chunk[k.trans_s ? 1 : 0];
  pl.n_bands = int(k.trans_s ? pl.grid.tiles_c() : pl.grid.tiles_r());
  k.ldx = pl.ldx;
  k.d_rowmajor = sp_a ? c.op_b == Op::N : c.op_a == Op::T;
  k.out_t = !sp_a;
  k.ldc = c.ldc;
  k.alpha = c.alpha;
  k.lds = pl.lds;
  k.idx_bytes = int(format::index_bytes(opt.tile_cols));
  return pl;
}

/// Adds the tile counts of `n` headers to `s` (nnz, zero / sparse / DENSE tiles).
inline void add_tile_stats(const format::TileHeader* h, std::size_t n, TileSparseStats& s) {
  for (std::size_t i = 0; i < n; ++i) {
    s.nnz += h[i].nnz;
    if (h[i].nnz == 0)
      ++s.tiles_zero;
    else if (h[i].format == std::uint8_t(format::TileFormat::Dense))
      ++s.tiles_dense;
    else
      ++s.tiles_sparse;
  }
}

/// The CPU engine's whole-call rule (TileSparseEngine::run_compacted), after the tile statistics `s`: with
/// alpha != 0, when every tile is DENSE or (whole_call_guard) the operand's density is at least
/// guard_fraction * threshold, the call is one dense SGEMM of the whole call (so zeros of the sparse operand
/// meet Inf / NaN of the dense one exactly as in the CPU engine).
inline bool whole_call_dense(const GemmCall& c, const TileSparseOptions& opt, const TileSparseStats& s,
                             const format::TileGrid& grid) {
  if (c.alpha == 0.0f) return false;  // the launch: C = beta * C only, neither operand read
  const double density = double(s.nnz) / (double(grid.rows) * double(grid.cols));
  return (s.tiles_sparse == 0 && s.tiles_zero == 0) ||
         (opt.whole_call_guard && density >= opt.guard_fraction * opt.threshold);
}

/// Threads per block of scale_kernel and of the two device-compaction kernels (one thread per tile).
constexpr unsigned kScaleThreads = 256, kCompactThreads = 128;

/// Blocks of the device-compaction kernels for `tiles` tiles.
inline unsigned compact_blocks(std::uint64_t tiles) { return unsigned((tiles + kCompactThreads - 1) / kCompactThreads); }

/// The shape of a call's two launches: scale_kernel<<<scale_blocks, kScaleThreads>>> and (alpha != 0)
/// tile_sparse_kernel<<<(bands, q_blocks, p_chunks), kQB, smem>>>.
struct TileLaunch {
  unsigned scale_blocks = 0, bands = 0, q_blocks = 0, p_chunks = 0;
  std::size_t smem = 0;  ///< dynamic shared memory per block (bytes)
};

/// Throws spartan::InputError when Q needs more than gridDim.y's 65535 column blocks.
inline TileLaunch tile_launch(const GemmCall& c, const KParams& k, int n_bands, const TileSparseOptions& opt) {
  TileLaunch L;
  L.smem = smem_bytes(opt, k.p_chunk);  // fits: chunk_rows() chose p_chunk
  L.p_chunks = unsigned((k.p_tile + k.p_chunk - 1) / k.p_chunk);  // gridDim.z <= 1024
  const int q_blocks = (k.Q + kQB - 1) / kQB;  // gridDim.y; bands go on gridDim.x (limit 2^31 - 1)
  if (q_blocks > 65535)
    throw InputError("cuda tile-sparse gemm: Q = " + std::to_string(k.Q) + " needs " + std::to_string(q_blocks) +
                     " column blocks of " + std::to_string(kQB) + ", more than gridDim.y's 65535");
  L.q_blocks = unsigned(q_blocks);
  L.bands = unsigned(n_bands);
  const std::size_t mn = std::size_t(c.M) * c.N;
  L.scale_blocks = unsigned(std::min<std::size_t>((mn + kScaleThreads - 1) / kScaleThreads, 65535));
  return L;
}

/// The device compaction's geometry for the stored operand `s` (rows x cols of `grid`, row stride lds).
inline hd::CompactGeom compact_geom(const float* s, const format::TileGrid& grid, int lds,
                                    const TileSparseOptions& opt) {
  return hd::CompactGeom{s, std::uint64_t(lds), grid.rows, grid.cols, grid.tile_rows, grid.tile_cols,
                         grid.tiles_c(), opt.threshold, std::uint8_t(opt.sparse_format), opt.dense_if_not_smaller};
}

}  // inline namespace SPARTAN_SIMT_ABI
}  // namespace spartan::gemm::cudak
