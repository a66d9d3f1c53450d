// Sparse matrices for the sparse-DNN module: CSR / CSC in float32 with 32-bit column indices, and the
// readers for the two formats the MIT/IEEE/Amazon Sparse DNN Graph Challenge distributes its data in:
//   - Graph Challenge TSV triples: one `row<TAB>col<TAB>value` per line, 1-based (graphchallenge.mit.edu,
//     "Sparse DNN" data sets);
//   - MatrixMarket coordinate format (NIST, "The Matrix Market Exchange Formats", Boisvert et al. 1996):
//     fields real / integer / pattern, symmetry general / symmetric / skew-symmetric.
// Files may be gzip-compressed or plain (zlib's gzread handles both transparently).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace spartan::sdnn {

/// Compressed sparse row matrix, `rows x cols`; column indices sorted within each row, no duplicates.
/// row_ptr has rows+1 entries; col_idx / values have nnz() entries.
struct Csr {
  std::int64_t rows = 0, cols = 0;
  std::vector<std::int64_t> row_ptr{0};
  std::vector<std::int32_t> col_idx;
  std::vector<float> values;
  std::int64_t nnz() const { return static_cast<std::int64_t>(col_idx.size()); }
  /// Structural and numerical equality.
  bool operator==(const Csr& o) const {
    return rows == o.rows && cols == o.cols && row_ptr == o.row_ptr && col_idx == o.col_idx && values == o.values;
  }
};

/// Compressed sparse column matrix (the CSR of the transpose, with rows/cols of the original).
struct Csc {
  std::int64_t rows = 0, cols = 0;
  std::vector<std::int64_t> col_ptr{0};
  std::vector<std::int32_t> row_idx;
  std::vector<float> values;
  std::int64_t nnz() const { return static_cast<std::int64_t>(row_idx.size()); }
};

/// One stored entry, 0-based.
struct Triple {
  std::int64_t row, col;
  float value;
};

/// Builds a CSR from triples (any order); duplicate (row, col) entries are summed (MatrixMarket convention).
Csr csr_from_triples(std::int64_t rows, std::int64_t cols, std::vector<Triple> t);
/// Transpose: result is cols x rows, sorted.
Csr transpose(const Csr& a);
Csc to_csc(const Csr& a);
Csr to_csr(const Csc& a);

/// Bound on a matrix dimension not backed by entries (the largest Graph Challenge DNN has 65,536 neurons).
constexpr std::int64_t kMaxInferredDim = std::int64_t(1) << 24;

/// Reads a MatrixMarket coordinate file (gzip or plain).
/// Throws spartan::FormatError(file, field, line, what, "line") for a bad header/size line, a malformed
/// entry, an index out of range (or on the wrong side of the diagonal for symmetric/skew-symmetric, or a
/// diagonal entry in skew-symmetric), fewer or more entries than the size line says; IoError if unreadable.
/// Symmetric files are mirrored (a_ji = a_ij), skew-symmetric mirrored negated (a_ji = -a_ij); pattern
/// entries get value 1. Declared dimensions above max(kMaxInferredDim, 64 * nnz) are a FormatError (the
/// row/column pointers would cost 8 bytes per row whatever nnz is; found by fuzzing).
Csr read_matrix_market(const std::string& path);

/// Reads Graph Challenge TSV triples (1-based `row col value`, whitespace separated; gzip or plain).
/// rows/cols <= 0 means "infer from the largest index" (bounded: an inferred size above
/// max(kMaxInferredDim, 64 * entries) is a FormatError); otherwise indices beyond them are errors.
/// Throws FormatError with the line number for malformed lines, indices < 1 or out of range.
Csr read_tsv(const std::string& path, std::int64_t rows = 0, std::int64_t cols = 0);

/// Dispatches on the name: `.mtx`/`.mtx.gz` -> MatrixMarket, `.tsv`/`.tsv.gz` -> TSV (with rows/cols).
/// Throws IoError ("no such file", "is a directory") before looking at the name, InputError for another name.
Csr read_matrix(const std::string& path, std::int64_t rows = 0, std::int64_t cols = 0);

/// Finds layer k's weight file in `dir`: the one file named `*-l{k}.mtx[.gz]` or `*-l{k}.tsv[.gz]`
/// (Graph Challenge names, e.g. n1024-l1.tsv). Throws IoError if none exists, InputError if several
/// match (e.g. both n1024-l1.mtx.gz and n1024-l1.tsv: which one is meant is ambiguous).
std::string find_layer_file(const std::string& dir, int layer);

/// The files of `dir` that find_layer_file would consider for layers 1..layers, in one directory scan:
/// element k - 1 lists layer k's candidates (none, one, or several when ambiguous). Nothing is opened; a
/// missing or unreadable directory gives empty lists.
std::vector<std::vector<std::string>> layer_file_candidates(const std::string& dir, int layers);

/// Writes a CSR as MatrixMarket `coordinate real general` (atomically; gzip if the name ends in .gz).
void write_matrix_market(const std::string& path, const Csr& a);
/// The bytes write_matrix_market writes: `%%MatrixMarket matrix coordinate real general`, 1-based entries with
/// 9 significant digits, gzip-compressed (deflate level 6, one call) when `gzip`. Throws IoError if zlib fails.
std::string matrix_market_bytes(const Csr& a, bool gzip);

}  // namespace spartan::sdnn
