// Tile-sparse GEMM engines (CPU; CUDA ones in cuda.h) and the engine factory.
//
// C = alpha * op(A) * op(B) + beta * C (row-major, BLAS convention of gemm.h), where the operand named
// by GemmCall::sparse (the ReLU activation or the ReLU-masked gradient) is compacted into the one
// tile-sparse format (spartan/format/tile_format.h) and the other operand is dense. Per tile of the
// stored sparse operand: nnz == 0 -> skipped; DENSE (density >= threshold) -> dense micro-kernel
// (OpenBLAS sgemm on maximal runs of adjacent dense tiles, left in place); ELL/BITMAP -> sparse
// micro-kernel (AVX-512, AVX2/FMA or portable, chosen at run time; OpenMP over tile bands).
// No transpose of an operand is materialised except the dense operand's packing for the sparse
// micro-kernel when its rows are not contiguous along the output, and, for sparse A with op T under
// TransposedKernel::RowGather (Auto: forward GEMMs whose op(B) has 32 columns or more, on AVX-512), the
// compaction tiles op(A) = A^T instead of A (format::compact_transposed: the tiles, not a dense copy;
// Orientation::Op).
// alpha: 1 and -1 are folded into the products (exact); any other non-zero alpha runs the call with alpha 1 into
// a scratch M x N buffer and scales that, so that C = alpha * (sum of products) as in BLAS (a folded alpha
// overflowed or underflowed products whose scaled sum is finite). The kernels run with MXCSR.DAZ cleared on
// their threads (restored after): with DAZ a denormal activation was taken for ELL padding.
// Documented in sw/gemm/README.md.
#pragma once
#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "spartan/format/tile_format.h"
#include "spartan/gemm/gemm.h"

namespace spartan::gemm {

/// Density threshold (nnz / tile elements) at or above which a tile is computed by the dense
/// micro-kernel. Produced by `bench-gemm --calibrate` (calibrate_threshold below: the three training GEMMs
/// of ResNet-18 conv3_x as spartan-train issues them) on the 2-core x86-64 development VM (AMD Zen 5,
/// AVX-512 sgemm), single thread, 16 x 256 and 8 x 256 tiles: 0.35 in every run (fwd alone 0.40, bwd-data
/// and bwd-weight 0.35); table in docs/bench/gemm.md. (0.30 until the thirty-first session, from a
/// forward-only calibration in the Caffe layout, which spartan-train does not issue.)
inline constexpr double kCalibratedThreshold = 0.35;
/// Default tile of the GEMM engines (CPU and CUDA), chosen by bench-gemm `--tile` on the CPU
/// (docs/bench/gemm.md, thirtieth and thirty-first sessions: 16 x 256 ahead of 8 x 256 at 90 % sparsity in
/// eight alternated sweep pairs and at 97 % in seven of eight; 32 x 256 behind 16 x 256): wide tiles amortise
/// the per-tile-row cost of the sparse path, taller ones halve the bands a call walks. Not measured on a GPU.
/// (The format's own default, 32 x 32, is the hardware line view.)
inline constexpr std::uint32_t kGemmTileRows = 16;
inline constexpr std::uint32_t kGemmTileCols = 256;

/// Instruction set of the sparse micro-kernel.
/// Avx512: the scatter kernel (forward-type calls) with 16-float AVX-512F vectors for output panels wider than
/// 8 floats (narrower ones: the AVX2 kernel, faster there), the direct row gather in wide panels (sparse A op N
/// with op(B) = B under kWideRowsMinReuse, and op(A)'s rows under TransposedKernel::RowGather), the 16x16
/// transposed store (packs of a transposed dense operand, stores of C^T) and, on a CPU with AVX-512 BW/VL, the
/// vectorised compaction (src/compact_fast.h); the list-based row gather and the non-temporal C^T store stay
/// AVX2 (docs/bench/gemm.md, twenty-second session: a 16-float list gather was no faster). The scatter kernel's
/// and the transposed store's C are bit-identical to Avx2's; the wide gather's is bit-identical to the AVX2
/// direct gather (RowsKernel::Direct), but an Avx2 engine with RowsKernel::Auto takes the row lists there for
/// Q > kDirectRowsMaxQ, whose sums start from C when C is accumulated into (beta != 0, or DENSE runs) and which
/// use two accumulator sets in a last panel of up to 32 floats: the two engines' C may then differ in the last
/// bits. Auto's choice of Avx512 was measured on AMD Zen 5 only.
enum class Isa { Auto, Avx2, Portable, Avx512 };
/// Sparse kernel for S = transpose of the stored operand (TileSparseOptions::transposed_kernel).
/// RowGather: for sparse A with op T only (the train layout's forward, Y^T = col^T W^T), the engine
/// compacts op(A) = A^T instead of A (Orientation::Op, format::compact_transposed), so that S is the
/// stored matrix of the tiles, and gathers its rows: with AVX-512 and u8 ELL tiles the wide direct row gather
/// in R blocks (kRowGatherMinQ), unless RowsKernel::Lists is asked for; otherwise the rows kernels of
/// RowsKernel (lists, or the direct gather for Q <= kDirectRowsMaxQ).
enum class TransposedKernel { Auto, Gather, Scatter, RowGather };
/// Which matrix compact_operand() tiles, and run_compacted() expects (TileSparseEngine::compact_orientation).
enum class Orientation {
  Stored,  ///< the sparse operand as stored (GemmCall::A or B)
  Op,      ///< op(A) for sparse A: its transpose for op T (format::compact_transposed), A itself for op N
};
/// Auto takes RowGather for sparse A op T on an AVX-512 engine with ELL tiles of at most 256 columns when op(B)
/// has at least kRowGatherMinQ columns (N), whatever M and K. The wide gather reads op(B)'s rows (packed R block by
/// R block into 64-byte aligned panels of up to 384 floats, TileSparseStats::dense_block_packed) in R blocks of
/// whole tiles whose panel rows fit one gather slice (L2), adding into C block by block, at about 1.2-1.8 cycles
/// per 16-float vector and non-zero; the scatter kernel's load-FMA-store of its output block costs 1.7-2.4.
/// bench-gemm at 97 %, forward, forty-third session (kernel / kernel+pack / compact+kernel+pack ratios, scatter
/// kernel -> row gather): ResNet-18 conv5_x (M = 49, N = 512, K = 4608) 4.0-4.8 / 2.1 / 1.9 -> 5.2-6.8 / 3.1-3.6 /
/// 2.7-3.0 (four alternated runs); kernel / kernel+pack / compact ms, forced either way, two runs: vgg-s b2c2 (49 x
/// 64 x 576) 0.004 / 0.009-0.010 / 0.008 -> 0.002 / 0.005-0.006 / 0.010; b1c2 (196 x 32 x 288) 0.003 / 0.005 /
/// 0.010-0.011 -> 0.002 / 0.003 / 0.013; fc2 of a vgg-s trace (64 x 256 x 256, 87 % zeros) 0.021 / 0.029 / 0.004
/// -> 0.013 / 0.020 / 0.006. A narrower op(B) keeps the scatter kernel, which adds straight into C's rows for N =
/// 16: vgg-s b0c2 (M = 784 x batch, N = 16, K = 144) at 97 %, kernel ratio at batch 1 6.1-6.4 against 5.7-5.8 for
/// the row gather, at batch 4 / 16 / 64 7.1 / 6.6 / 5.4 against 5.2 / 2.6 / 3.3; at 70 % its kernel took 0.76
/// against 0.79 ms at batch 16 but 4.01 against 3.23 ms at batch 64, while its compaction (of the stored col, not
/// col^T) was 1.2-3.4x faster at every batch and sparsity measured (4.1 against 14.2 ms there); probes of
/// M = 12544, K = 144 with N = 6, 8, 16 and 24, and of N = 16 and 24 with K up to 4608, gave the scatter path the
/// lower compact + kernel time in every case, at 70, 90 and 97 % (forty-seventh session, docs/bench/gemm.md). Until then Auto also took RowGather for a narrow op(B) when op(A) had at least 64
/// rows and 2^18 elements (rules of the twenty-fifth session, measured on ImageNet layers, N >= 64).
inline constexpr int kRowGatherMinQ = 32;
/// Auto picks Scatter when the output width Q (op(A) rows for sparse B) is at most kScatterMaxQ (8 panels
/// of 64) and the reduction length R (GEMM K) at least kScatterMinR. Bucketing the non-zeros by column
/// costs ~10 cycles per non-zero once per call; the scatter kernel's store-bound updates cost a few
/// cycles more than the gather per non-zero and 64-column panel, and it reads every stored row's D row
/// per band and panel. Measured on the development VM (docs/bench/gemm.md): the forward GEMMs of the 14
/// benchmark layers (Q = Cout 16..512, R = Cin*kh*kw >= 144) took 11 % (90 % sparsity) and 23 % (97 %)
/// less kernel time on geometric mean with it (single large-P VGG-16 rows 5-11 % more); backward-data
/// GEMMs (Q = Cin*kh*kw >= 576, R = Cout) ran up to 2x slower, so they keep the gather.
inline constexpr int kScatterMaxQ = 512;
inline constexpr int kScatterMinR = 128;
/// Sparse kernel for S = the stored operand (TileSparseOptions::rows_kernel).
enum class RowsKernel { Auto, Lists, Direct };
/// Auto reads the ELL tiles directly when Q (the output width) is at most this: with one narrow panel the
/// list copy costs about as much as the gather itself. Wider Q re-walks the tile rows (one mispredicted
/// row end per tile and row) in every 64-column panel, and the lists were faster in bench-gemm
/// (docs/bench/gemm.md: Q = 16, 32 gained 25-45 %, Q = 64 and 128 lost 25-55 % at 97 % sparsity).
inline constexpr int kDirectRowsMaxQ = 32;
/// With AVX-512 (Isa::Avx512 or Auto on such a CPU), sparse A op N with op(B) = B (C written by rows) and
/// Q > kDirectRowsMaxQ use the direct row gather in wide panels: up to 24 zmm accumulators per output row
/// (np = ceil(Q / 384) panels of ceil(Q / np) floats rounded up to 16, the last one shorter and masked), each
/// ELL row walked once per panel, no row lists. B is read in place when it is one panel of 64-byte aligned
/// rows with the panel's width as their stride, or several panels under kWideInPlaceMaxReuse, else from a
/// packed copy in 64-byte aligned panels (reused under GemmCall::dense_version). Auto takes it when one panel's
/// rows of B (R x panel floats) fit 1.25 gather slices, R fits one R block, and either all of B fits 1.25
/// slices or the non-zeros number at
/// least kWideRowsMinReuse per row of B: the kernel does not prefetch (software prefetches made it 15-20 %
/// slower), so a B that comes from memory with little reuse (ResNet-18 conv5_x backward-data at 97 %,
/// 1.5 non-zeros per row of its 9.4 MB) was 1.8x slower than the lists, whose kernel prefetches. Measured in
/// bench-gemm (train layout, docs/bench/gemm.md, twenty-fourth session): kernel time 0.56-1.03x the lists'
/// (median 0.72) on the 47 backward-data and backward-weight cases it takes. When R needs several R blocks or
/// one panel's rows of B exceed 1.25 slices, but the non-zeros number at least kWideRowsMinReuse per row of
/// B, Auto (and Direct) run the wide gather in R blocks of whole tiles whose panel rows fit one slice, adding
/// into C block by block (VGG-16 conv2_2 and conv3_2 backward-weight: 0.71 and 0.74x the lists' kernel time at
/// 90 %, twenty-fifth session). Packed panels have rows of panel + 16 floats (no power-of-two stride).
inline constexpr double kWideRowsMinReuse = 4;
/// The wide gather reads a B of several panels in place, without the packed copy, when its rows are 64-byte
/// aligned (ldb a multiple of 16 floats), their stride is not a multiple of 4 KiB (rows in few cache sets), and
/// the non-zeros number fewer than this per row of B: with little reuse the copy (R x Q floats) cost more than
/// the packed panels' contiguous rows saved. bench-gemm, train layout, backward-data at 90 and 97 %, three
/// alternated rounds (docs/bench/gemm.md, forty-fifth session): every row below 32 non-zeros per row of B
/// gained or held (VGG-16 conv5_2 at 97 %, 5.9 per row, 0.88 -> 0.59 ms; ResNet-18 conv5_x at 90 %, 4.9 per
/// row, 0.70 -> 0.41 ms); above, rows of 78-1254 per row lost up to 10 % (VGG-16 conv3_2 / conv4_2 at 90 %).
/// In place or packed, C is bit-identical when the R blocks are the same. The R blocks of the wide gather are
/// sized by the rows it reads (panel floats in place, panel + 16 packed), so with an R long enough for several
/// blocks the two can split R differently and C can differ in the last bits (within the fp32 bound; as before
/// this rule for a one-panel B read in place or, misaligned, packed).
inline constexpr double kWideInPlaceMaxReuse = 32;

/// Rows of S per transposed store into C for large outputs (TileSparseOptions::store_runs_min_bytes).
inline constexpr int kStoreRunRows = 512;
/// Default TileSparseOptions::store_runs_min_bytes: outputs C of at least 2 MiB are stored in runs; smaller
/// ones lost 10-25 % with runs (docs/bench/gemm.md). Chosen on the Zen 3 VM with a 512 KiB L2 (four times it);
/// not re-measured on the Zen 5 host (1 MiB L2), where the other defaults were.
inline constexpr std::size_t kStoreRunsMinBytes = std::size_t(2) << 20;
/// Largest TileSparseOptions::gather_slice_bytes (8 MiB: 32768 rows of 64 floats; with one R block of up to 1.25x
/// that, a band's row-list positions, u32, cannot wrap even for 65535-row tiles).
inline constexpr std::size_t kMaxGatherSliceBytes = std::size_t(8) << 20;

struct TileSparseOptions {
  std::uint32_t tile_rows = kGemmTileRows;
  std::uint32_t tile_cols = kGemmTileCols;
  double threshold = kCalibratedThreshold;                ///< see format::CompactOptions::threshold
  format::TileFormat sparse_format = format::TileFormat::Ell;  ///< Ell or Bitmap
  /// format::CompactOptions::dense_if_not_smaller: a tile whose sparse payload would not be smaller than
  /// its dense elements is DENSE (dense micro-kernel). false: the threshold alone decides.
  bool dense_if_not_smaller = true;
  Isa isa = Isa::Auto;  ///< Auto: Avx512 when the CPU has AVX-512F, else AVX2+FMA when it has them, else portable
  /// OpenMP threads for the sparse part; 0 = OpenMP default. With 1 the engine runs no OpenMP construct at all
  /// (plain loops; it may be called from inside a caller's parallel region or work-sharing loop): libgomp's
  /// futex calls cost 1.1-2.4 us per one-thread region here.
  int num_threads = 0;
  /// Call-level guard: when the whole operand's density (nnz / elements) is >= guard_fraction x threshold,
  /// run one sgemm of the whole call (the calibrated crossover says dense wins on average; mixed tiles would
  /// otherwise fragment the dense part into many small sgemm calls). Tile counts are still reported.
  bool whole_call_guard = true;
  /// The guard fires at overall density >= guard_fraction * threshold. Below 1 because at densities near
  /// the crossover the tiles of a uniformly sparse operand split into DENSE and sparse ones, and the mixed
  /// call (fragmented sgemm runs + the sparse path) is slower than either pure path: bench-gemm measured
  /// ratios 0.61-0.66 at 70 % random sparsity with guard_fraction = 1 and threshold 0.30, 8 x 256 tiles
  /// (docs/bench/gemm.md). 0.95 (0.8 until the thirty-first session): the tile densities of a uniformly
  /// random operand spread by sqrt(d (1 - d) / (TR TC)), 0.007 for 16 x 256 tiles at d = 0.3, so they split only
  /// within about 3 of those (0.02) below the threshold; with 0.8 every operand of density 0.28-0.35 ran as one
  /// sgemm although the sparse path was up to 15 % faster there (calibration), and bench-gemm measured 70 %
  /// random 1.00 -> 1.29-1.31 and the trace's vgg-s conv9, conv10, conv12 (71-72 % zeros) 1.00 -> 1.30-1.34.
  double guard_fraction = 0.95;
  /// Sparse kernel when S is the transpose of the stored operand (forward and backward-data: sparse B with
  /// op N) and all its sparse tiles are ELL with 1-byte indices (tile_cols <= 256): Scatter = outer
  /// products over the stored rows (each non-zero adds alpha * v * D[row] into a per-band output block),
  /// Gather = bucket the non-zeros by column into row lists, then the row-gather kernel; RowGather (sparse A
  /// op T) = compact op(A) instead of A and gather its rows (no transpose of S left). Auto: RowGather for sparse
  /// A op T when N >= kRowGatherMinQ, else Scatter when Q <= kScatterMaxQ and R >=
  /// kScatterMinR, else Gather (sw/gemm/README.md; measured in docs/bench/gemm.md). A run_compacted() call
  /// given the stored orientation takes Auto's Scatter / Gather choice also under RowGather.
  TransposedKernel transposed_kernel = TransposedKernel::Auto;
  /// Row gather when S is the stored operand (rows of S = stored rows: backward-weight with sparse B op T,
  /// sparse A op N), all its sparse tiles are ELL with 1-byte indices and R fits one gather R block
  /// (gather_slice_bytes): Direct = read the tiles in the gather, Lists = first copy their non-zeros into row lists
  /// (one pass, then every Q panel reads the lists). Auto: Direct when Q <= kDirectRowsMaxQ, and with
  /// AVX-512 also in wide panels under the conditions of kWideRowsMinReuse. Direct with AVX-512, sparse A
  /// op N, op(B) = B and Q > kDirectRowsMaxQ uses the wide panels whenever R fits one R block and one
  /// panel's rows of B fit 1.25 gather slices, and in R blocks of whole tiles when B's rows are reused
  /// (kWideRowsMinReuse) but do not fit (last_stats().wide_panel_floats, wide_r_blocked and r_blocks say which
  /// ran).
  RowsKernel rows_kernel = RowsKernel::Auto;
  /// Out = C^T (sparse B; unless streamed): when C (M x N floats) has at least this many bytes, the row
  /// gathers fill pieces of up to kStoreRunRows rows of S (one L2 buffer) before the transposed store, which
  /// then writes eight C rows (sixteen on an AVX-512 engine) at a time front to back, i.e. runs of up to
  /// kStoreRunRows contiguous floats per C row; smaller outputs go through a 64-row L1 buffer (runs of 64
  /// floats). 0: always pieces.
  /// Default: kStoreRunsMinBytes (2 MiB: four times the L2 of the Zen 3 VM where it was measured,
  /// docs/bench/gemm.md).
  std::size_t store_runs_min_bytes = kStoreRunsMinBytes;
  /// Bytes of the dense operand's slice (an R block of rows x kGatherQ floats) that the row gather keeps in
  /// L2 while every row of S uses it: R up to 1.25 x gather_slice_bytes / 256 B is one R block (row lists
  /// built per group of bands and gathered right away), longer R is split into blocks (all lists first).
  /// 0 (default): default_gather_slice_bytes(), from this CPU's L2 size. At most kMaxGatherSliceBytes (the
  /// engine's constructor throws spartan::InputError above it); below 16 KiB it acts as 16 KiB (64 rows).
  std::size_t gather_slice_bytes = 0;
  /// The AVX-512 wide gather prefetches (into L1) the next band's ELL payload while it gathers a band, when the
  /// operand's payload is larger than this CPU's L1 data cache (last_stats().payload_prefetched). false: never
  /// (the kernel is then instantiated without any prefetch state, as before the prefetch was added). Results do
  /// not depend on it. Measured in docs/bench/gemm.md (forty-fourth session): VGG-16 forward and backward-weight
  /// at 97 %: 6-21 % less kernel time warm, 13-33 % cold.
  bool payload_prefetch = true;
};

/// The checks of the density options that both tile-sparse engines (CPU and CUDA) make in their constructors:
/// throws spartan::InputError, naming `engine`, for a NaN or negative threshold or a guard_fraction that is
/// negative or not finite (a NaN guard would never fire, a negative one always).
void check_threshold_options(const TileSparseOptions& opt, const char* engine);

/// The format::compact() options of an engine's options (tile, threshold, sparse format, size rule).
inline format::CompactOptions compact_options(const TileSparseOptions& opt) {
  format::CompactOptions o;
  o.tile_rows = opt.tile_rows;
  o.tile_cols = opt.tile_cols;
  o.threshold = opt.threshold;
  o.sparse_format = opt.sparse_format;
  o.dense_if_not_smaller = opt.dense_if_not_smaller;
  return o;
}

/// The L2 size per core minus 256 KiB, at least 256 KiB (L2 size from sysconf(_SC_LEVEL2_CACHE_SIZE); taken
/// as 512 KiB when the system does not report it): 256 KiB on the 512 KiB-L2 Zen 3 VM where that slice was
/// chosen (R blocks of 1024 rows), 768 KiB on the 1 MiB-L2 Zen 5 host, where the backward-weight GEMMs with
/// R = 3136 took 0.70-0.89x the kernel time in one R block that they took in four (bench-gemm, medians of
/// three runs; docs/bench/gemm.md, twenty-third session).
std::size_t default_gather_slice_bytes();

/// What the last call did (tile counts of the compacted operand and times in seconds).
struct TileSparseStats {
  std::size_t tiles_zero = 0, tiles_sparse = 0, tiles_dense = 0;
  std::size_t nnz = 0;             ///< non-zeros of the sparse operand
  std::size_t dense_calls = 0;     ///< sgemm calls issued for runs of DENSE tiles
  bool full_dense = false;         ///< one sgemm for the whole call (all tiles DENSE, or the call-level guard)
  bool compact_headers_only = false;  ///< run() compacted the operand without its payload (the guard's sgemm
                                      ///< reads the call's operands only; see TileSparseEngine::run)
  bool dense_packed = false;       ///< the sparse path used a packed copy of the dense operand
  bool dense_pack_reused = false;  ///< ... kept from an earlier call (GemmCall::dense_version matched)
  bool dense_block_packed = false;  ///< ... packed R block by R block into one L2-sized buffer, each block right
                                    ///< before the bands gather it, and not kept (the wide gather in R blocks
                                    ///< with GemmCall::dense_version 0)
  bool payload_prefetched = false;  ///< the AVX-512 wide gather prefetched each next band's ELL payload while it
                                    ///< gathered a band (a payload larger than L1d; TileSparseOptions::payload_prefetch)
  bool out_streamed = false;       ///< C^T (>= 32 MiB, beta 0) written with non-temporal stores
  bool scattered = false;          ///< the sparse part ran the outer-product (scatter) kernel, no row lists
  bool gather_pairs = false;       ///< the stored rows' AVX2 direct gather of a narrow Q (<= kDirectRowsMaxQ)
                                   ///< summed each row's non-zeros in two sets (even / odd), added at the end
  bool scatter_into_c = false;     ///< ... and added straight into C's rows, no output block (sparse A, beta 0
                                   ///< and no DENSE tiles, AVX-512, Q one panel of whole 16-float vectors,
                                   ///< ldc <= 128)
  bool direct_rows = false;        ///< the sparse part gathered straight from the ELL tiles, no row lists
  int wide_panel_floats = 0;       ///< > 0: the direct gather ran the AVX-512 wide kernel, panels of this many floats
  bool row_gather = false;         ///< the sparse part gathered rows of op(A)'s tiles (Orientation::Op, sparse A op T): the
                                   ///< wide gather in R blocks (wide_panel_floats > 0) or the rows kernels
  bool wide_r_blocked = false;     ///< the wide gather ran panel by panel through all bands (the R-blocked loop:
                                   ///< op(A)'s tiles, several R blocks, or several wide panels), not by row groups
  int r_blocks = 0;                ///< R blocks of the row gather (0: no row gather; see gather_slice_bytes;
                                   ///< the wide gather's in R blocks are of whole tiles)
  bool store_runs = false;         ///< C^T stored in runs of up to kStoreRunRows (store_runs_min_bytes)
  double compact_s = 0, compute_s = 0;
  double pack_s = 0;               ///< part of compute_s spent packing the dense operand (0 when reused; per R
                                   ///< block: the calling thread's time in the blocks' packs)
  double lists_s = 0;              ///< part of compute_s spent building the row lists of the sparse operand
};

namespace detail {
/// One non-zero of a row of the logical sparse operand: row index r of the dense operand D and the
/// value with alpha folded in (internal to the CPU kernels).
struct Entry {
  std::uint32_t r;
  float v;
};
}  // namespace detail

class TileSparseEngine final : public GemmEngine {
 public:
  /// Throws spartan::InputError on bad options (check_threshold_options for the numeric ones): tile size outside 1..65535, a sparse format other than ELL or
  /// BITMAP, AVX2 or AVX-512 forced on a CPU without it, gather_slice_bytes above kMaxGatherSliceBytes, a NaN or
  /// negative threshold, a negative or non-finite guard_fraction, negative num_threads.
  explicit TileSparseEngine(const TileSparseOptions& opt = {});
  /// Compacts the sparse operand (GemmCall::sparse), then computes. sparse == None: plain sgemm. Where the
  /// vectorised compaction runs (an AVX-512 engine on a CPU with AVX-512 BW/VL, ELL tiles, f32), an operand
  /// dense enough for the whole-call guard is compacted without its payload (headers only: the tile counts of
  /// the stats; TileSparseStats::compact_headers_only), since the guard's one sgemm reads the call's operands
  /// only.
  void run(const GemmCall& call) override;
  std::string name() const override { return "tile-sparse"; }

  /// The orientation compact_operand() compacts `call`'s sparse operand in: Op for sparse A with op T when
  /// TileSparseOptions::transposed_kernel is RowGather, or Auto when N >= kRowGatherMinQ
  /// (decided from the call and the options alone, before the non-zeros are known); else Stored.
  Orientation compact_orientation(const GemmCall& call) const;
  /// Compacts the sparse operand of `call` with this engine's options, in compact_orientation(call).
  format::TiledMatrix compact_operand(const GemmCall& call) const;
  /// Computes with an already compacted sparse operand: `s` must be the compaction, in orientation `o`, of
  /// the matrix that `call` names as sparse: the stored matrix (Stored) or op(A) (Op; sparse A only), of
  /// the matching shape. Its DENSE tiles are never read: dense runs use the call's pointer. Pass
  /// compact_orientation(call) with compact_operand(call)'s result; Stored is always accepted (a forward
  /// call then runs the scatter or gather kernel of transposed_kernel's Auto choice without RowGather).
  /// Throws spartan::InputError when the shapes do not match, `o` is Op for sparse B with op T, `o`
  /// contradicts the tiles' own record (tiles of format::compact_transposed, source_transposed, given as
  /// Stored; tiles whose `source` is the call's stored A given as Op), or a sparse tile's payload offset lies
  /// outside the payload (headers-only tiles on a call the whole-call guard does not take). It does not
  /// check payloads further: format::validate() does, for tiles from elsewhere.
  void run_compacted(const GemmCall& call, const format::TiledMatrix& s, Orientation o);
  /// The same in the orientation the tiles record: Op for tiles of format::compact_transposed
  /// (source_transposed), Stored otherwise; so run_compacted(call, compact_operand(call)) always fits.
  void run_compacted(const GemmCall& call, const format::TiledMatrix& s) {
    run_compacted(call, s, s.source_transposed ? Orientation::Op : Orientation::Stored);
  }

  const TileSparseStats& last_stats() const { return stats_; }
  const TileSparseOptions& options() const { return opt_; }
  /// The micro-kernel ISA actually used ("avx512", "avx2" or "portable").
  std::string isa_name() const;
  /// The row gather's D slice in bytes that this engine uses: TileSparseOptions::gather_slice_bytes (or, for
  /// 0, default_gather_slice_bytes()) rounded down to whole 64-float rows and clamped to 16 KiB .. 8 MiB.
  std::size_t gather_slice_bytes() const;

 private:
  TileSparseOptions opt_;
  bool avx2_ = false;    // AVX2 + FMA kernels
  bool avx512_ = false;  // ... and the AVX-512 scatter kernel (implies avx2_)
  TileSparseStats stats_;
  // compact_operand(), leaving the payload empty (headers only) when the operand's density (nnz / elements)
  // is >= skip_payload_density and the AVX-512 compaction runs (compact_fast.h); 2 (> any density): never.
  format::TiledMatrix compact_impl(const GemmCall& call, double skip_payload_density) const;
  // The density at or above which the whole-call guard runs one sgemm (guard_fraction x threshold).
  double guard_density() const { return opt_.guard_fraction * opt_.threshold; }
  // Reused buffers of the sparse part (tile_sparse.cpp): the dense operand transposed when its rows do
  // not run along Q; the row lists of S (entries, per-band offsets, per-row begin/end); the transposed
  // output block; per-row entry bounds of the R blocks.
  std::vector<float> pack_, tmp_;
  std::vector<float> block_pack_;  // one R block of one wide panel of D (TileSparseStats::dense_block_packed)
  std::vector<std::vector<float>> scatter_out_;  // per-thread output block of the scatter kernel
  // Identity of the dense operand packed in pack_ (reused while GemmCall::dense_version != 0 matches).
  struct PackKey {
    const float* x = nullptr;
    int R = 0, Q = 0;
    std::size_t ldx = 0;
    bool trans = false;
    std::uint64_t version = 0;
    int wide_panel = 0;  // the wide row gather's panel width in floats (aligned panels); 0: 64-float panels
    bool operator==(const PackKey& o) const {
      return x == o.x && R == o.R && Q == o.Q && ldx == o.ldx && trans == o.trans && version == o.version &&
             wide_panel == o.wide_panel;
    }
  };
  PackKey pack_key_;
  bool pack_valid_ = false;
  std::vector<detail::Entry> ent_;
  std::vector<std::vector<detail::Entry>> group_ent_;  // per-thread row lists of one band group
  std::vector<std::vector<float>> piece_buf_;  // per-thread C^T pieces (kept across calls: no allocation per call)
  std::vector<std::size_t> band_off_;
  std::vector<std::uint32_t> row_beg_, row_end_, bounds_;
};

std::unique_ptr<TileSparseEngine> make_tile_sparse_engine(const TileSparseOptions& opt = {});

/// Engine by name: "dense", "tile-sparse", and with CUDA "cuda-dense", "cuda-tile-sparse".
/// Throws spartan::InputError naming the known engines for an unknown name.
std::unique_ptr<GemmEngine> make_engine(const std::string& name, const TileSparseOptions& opt = {});
/// Names make_engine accepts in this build.
std::vector<std::string> engine_names();

/// Tile counts / nnz / times of an engine's last call, when it is a tile-sparse engine (CPU, CUDA or its host
/// emulation, spartan/gemm/simt.h) or a CUDA dense engine (compute_s only);
/// nullptr otherwise.
const TileSparseStats* last_tile_stats(const GemmEngine& engine);

/// Result of the threshold calibration. Per density: the time of one training step's three GEMMs of the
/// calibration layer (forward, backward-data, backward-weight; sums) on the sparse and on the dense path,
/// and each pass's own times; per pass the crossover of that pass alone.
struct Calibration {
  std::vector<double> density, sparse_s, dense_s;  ///< sums over the three passes, seconds
  std::array<std::vector<double>, 3> pass_sparse_s, pass_dense_s;  ///< [fwd, bwd-data, bwd-weight][density]
  std::array<double, 3> pass_threshold{{1.0, 1.0, 1.0}};  ///< crossover of each pass alone
  double threshold = 1.0;  ///< crossover of the sums: the calibrated threshold
};
/// The crossover of one path pair: the smallest of `density` (ascending) from which on `dense_s` is never
/// greater than `sparse_s`; 1.0 when dense is slower at the last density. Throws spartan::InputError on
/// vectors of different lengths or empty ones.
double calibration_crossover(const std::vector<double>& density, const std::vector<double>& sparse_s,
                             const std::vector<double>& dense_s);
/// Measures, on the three GEMMs that spartan-train issues for one conv layer (sw/gemm/bench/shapes.h,
/// layout Train; sparse operand A: fwd Y^T = col^T W^T, bwd-data dcol^T = dY^T W, bwd-weight dW^T = col dY^T;
/// default layer = ResNet-18 conv3_x at batch 1: hw = 784 output pixels, cout = 128, ckk = 128 x 3 x 3), with
/// the sparse operand uniformly random at each density, the sparse path (every non-zero tile sparse, no
/// whole-call guard) against the dense path (every tile DENSE: one sgemm of the whole call), interleaved,
/// best of `repeats` after one warm-up call each. The dense operand is packed in every call, as in
/// spartan-train (GemmCall::dense_version 0). The threshold is the crossover of the three passes' summed
/// times (one training step of the layer); the per-pass crossovers are reported beside it. Deterministic
/// inputs for a seed. Throws spartan::InputError for sizes or repeats <= 0.
Calibration calibrate_threshold(const TileSparseOptions& opt, int hw = 784, int cout = 128, int ckk = 1152,
                                unsigned seed = 1, int repeats = 10);

}  // namespace spartan::gemm
