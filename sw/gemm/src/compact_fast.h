// Vectorised compaction of an f32 activation operand into the one tile-sparse format (sw/format), for the
// CPU engine's compact_operand(). The format's own format::compact() stays the definition (and what the CUDA
// host code, the compaction-engine model and the RTL scoreboard use); this produces the same headers and
// payload byte for byte (test TileSparseCompactFast.*), faster.
#pragma once

#include <cstddef>
#include <cstdint>

#include "spartan/format/tile_format.h"

namespace spartan::gemm::detail {

/// True when this CPU runs compact_f32_avx512 (AVX-512 F, BW and VL).
bool cpu_has_avx512_bw();

/// nnz / (rows x cols) >= density, as one expression: the whole-call guard of TileSparseEngine::run_compacted
/// and the headers-only compaction below must take the same decision on the same numbers (an operand
/// compacted without its payload must go to the guard's sgemm). False for rows x cols == 0 (0 / 0).
inline bool density_at_least(std::uint64_t nnz, std::uint64_t rows, std::uint64_t cols, double density) {
  return double(nnz) / (double(rows) * double(cols)) >= density;
}

/// format::compact() of the row-major f32 matrix `dense` (rows x cols, row stride ld floats) with options `o`:
/// the same TiledMatrix (grid, headers, payload, source), computed with AVX-512 loops: per tile row, pass 1
/// counts each row's non-zeros per tile from a 16-lane zero test (|x| bits != 0: +-0.0 are zero, NaN, Inf and
/// denormals are not) and a popcount; the tile formats and payload offsets follow as in format::compact();
/// pass 2 writes each ELL row with in-register compress and masked stores of its values and column indices
/// (u8 or u16). Tile rows are split over `nthreads` OpenMP threads in both passes (1: no parallel region).
/// Returns false, leaving `out` untouched, when the CPU lacks AVX-512 F/BW/VL or the call is outside this
/// path (elements other than F32, or BITMAP tiles): the caller then uses format::compact().
/// Throws spartan::InputError on options format::compact() rejects (format::check_options).
/// skip_payload_density: when the matrix's density (its nnz / (rows x cols)) is >= this, pass 2 is skipped and
/// `out` has the headers but an empty payload (for a caller that runs one dense sgemm of the whole call and
/// wants the tile counts only: the engine's whole-call guard); the default 2 never skips.
bool compact_f32_avx512(const float* dense, std::uint32_t rows, std::uint32_t cols, std::size_t ld,
                        const format::CompactOptions& o, int nthreads, format::TiledMatrix& out,
                        double skip_payload_density = 2.0);

/// Pass 2 of compact_transposed_f32_avx512. Scan: source row by source row across each tile column, the non-zeros
/// found 64 elements at a time and each placed in its result row's next ELL slot (work per non-zero). Blocks: tile
/// by tile, 16 result rows x 16 source rows loaded (one 64-byte piece of each source row, prefetched two pieces
/// ahead), transposed in registers and each result row's non-zeros compressed and stored with masks (work per
/// element). Auto: Blocks when the operand's density is at least kTransposedBlocksMinDensity. Both give the same
/// payload (each row's slots in source-row order).
enum class TransposedFill { Auto, Scan, Blocks };
/// The density from which Auto fills by blocks: between bench-gemm's 97 % rows, where the scan was as fast or
/// faster, and its 90 % rows, where the blocks were faster (docs/bench/gemm.md, forty-seventh session).
inline constexpr double kTransposedBlocksMinDensity = 0.05;
/// format::compact_transposed() of the row-major f32 matrix `src` (stored_rows x stored_cols, row stride ld
/// floats): the tiles of src^T (stored_cols x stored_rows), the same TiledMatrix byte for byte. Pass 1 reads src
/// row by row, adding 16 rows' non-zero flags at a time to the per-row counters; pass 2 as `fill` says
/// (TransposedFill). One thread. Returns false, leaving `out` untouched, when the CPU
/// lacks AVX-512 F/BW/VL or the call is outside this path (elements other than F32, BITMAP tiles, or DENSE
/// tiles copied into the payload): the caller then uses format::compact_transposed(). Throws
/// spartan::InputError on options format::compact_transposed() rejects. skip_payload_density: as for
/// compact_f32_avx512.
bool compact_transposed_f32_avx512(const float* src, std::uint32_t stored_rows, std::uint32_t stored_cols,
                                   std::size_t ld, const format::CompactOptions& o, format::TiledMatrix& out,
                                   double skip_payload_density = 2.0, TransposedFill fill = TransposedFill::Auto);

}  // namespace spartan::gemm::detail
