// Readers: MatrixMarket (every field and symmetry kind) and Graph Challenge TSV, plain and gzip, and the
// error paths (file + line number).
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <limits>

#include "spartan/common/error.h"
#include "test_tmp_dir.h"
#include "spartan/sdnn/sparse.h"

using namespace spartan::sdnn;

namespace {

std::string tmp_path(const std::string& name) { return spartan::sdnn::testing::tmp_path("sdnn_io_", name); }

std::string write(const std::string& name, const std::string& text) {
  const std::string p = tmp_path(name);
  if (name.size() > 3 && name.substr(name.size() - 3) == ".gz") {
    gzFile f = gzopen(p.c_str(), "wb");
    gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
    gzclose(f);
  } else {
    std::ofstream(p) << text;
  }
  return p;
}

float at(const Csr& a, std::int64_t r, std::int64_t c) {
  for (auto q = a.row_ptr[r]; q < a.row_ptr[r + 1]; ++q)
    if (a.col_idx[q] == c) return a.values[q];
  return 0.0f;
}

/// Expects a FormatError from `fn` whose line number is `line` and whose message names the file.
template <class F>
void expect_line_error(F fn, const std::string& path, std::uint64_t line, const std::string& needle) {
  try {
    fn();
    FAIL() << "no error for " << path;
  } catch (const spartan::FormatError& e) {
    EXPECT_EQ(e.offset(), line) << e.what();
    EXPECT_EQ(e.file(), path);
    const std::string msg = e.what();
    EXPECT_NE(msg.find("line " + std::to_string(line)), std::string::npos) << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
  }
}

}  // namespace

TEST(SdnnIo, GeneralRealWithCommentsAndDuplicates) {
  const auto p = write("g.mtx", "%%MatrixMarket matrix coordinate real general\n% comment\n\n3 4 4\n1 1 1.5\n3 4 -2\n2 2 0.25\n1 1 0.5\n");
  const Csr a = read_matrix_market(p);
  EXPECT_EQ(a.rows, 3);
  EXPECT_EQ(a.cols, 4);
  EXPECT_EQ(a.nnz(), 3);  // the duplicate (1,1) is summed
  EXPECT_FLOAT_EQ(at(a, 0, 0), 2.0f);
  EXPECT_FLOAT_EQ(at(a, 2, 3), -2.0f);
  EXPECT_FLOAT_EQ(at(a, 1, 1), 0.25f);
  const Csc c = to_csc(a);
  EXPECT_EQ(c.col_ptr, (std::vector<std::int64_t>{0, 1, 2, 2, 3}));
  EXPECT_EQ(c.row_idx, (std::vector<std::int32_t>{0, 1, 2}));
  EXPECT_EQ(to_csr(c), a);
}

TEST(SdnnIo, IntegerPatternAndGzip) {
  const auto pi = write("i.mtx.gz", "%%MatrixMarket matrix coordinate integer general\n2 2 2\n1 2 7\n2 1 -3\n");
  const Csr a = read_matrix_market(pi);
  EXPECT_FLOAT_EQ(at(a, 0, 1), 7.0f);
  EXPECT_FLOAT_EQ(at(a, 1, 0), -3.0f);
  const auto pp = write("p.mtx", "%%MatrixMarket matrix coordinate pattern general\n2 3 2\n1 3\n2 2\n");
  const Csr b = read_matrix_market(pp);
  EXPECT_EQ(b.nnz(), 2);
  EXPECT_FLOAT_EQ(at(b, 0, 2), 1.0f);
  EXPECT_FLOAT_EQ(at(b, 1, 1), 1.0f);
}

TEST(SdnnIo, SymmetricMirrorsLowerTriangle) {
  const auto p = write("s.mtx", "%%MatrixMarket matrix coordinate real symmetric\n3 3 3\n1 1 4\n3 1 2\n3 2 -1\n");
  const Csr a = read_matrix_market(p);
  EXPECT_EQ(a.nnz(), 5);
  EXPECT_FLOAT_EQ(at(a, 0, 0), 4.0f);
  EXPECT_FLOAT_EQ(at(a, 2, 0), 2.0f);
  EXPECT_FLOAT_EQ(at(a, 0, 2), 2.0f);
  EXPECT_FLOAT_EQ(at(a, 1, 2), -1.0f);
  EXPECT_EQ(transpose(a), a);
}

TEST(SdnnIo, SkewSymmetricMirrorsNegated) {
  const auto p = write("k.mtx", "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 5\n3 2 -1.5\n");
  const Csr a = read_matrix_market(p);
  EXPECT_EQ(a.nnz(), 4);
  EXPECT_FLOAT_EQ(at(a, 1, 0), 5.0f);
  EXPECT_FLOAT_EQ(at(a, 0, 1), -5.0f);
  EXPECT_FLOAT_EQ(at(a, 2, 1), -1.5f);
  EXPECT_FLOAT_EQ(at(a, 1, 2), 1.5f);
}

TEST(SdnnIo, PatternSymmetric) {
  const auto p = write("ps.mtx", "%%MatrixMarket matrix coordinate pattern symmetric\n2 2 1\n2 1\n");
  const Csr a = read_matrix_market(p);
  EXPECT_EQ(a.nnz(), 2);
  EXPECT_FLOAT_EQ(at(a, 0, 1), 1.0f);
}

TEST(SdnnIo, MatrixMarketErrorsNameFileAndLine) {
  const std::string hdr = "%%MatrixMarket matrix coordinate real general\n";
  struct Case {
    const char* name;
    std::string text;
    std::uint64_t line;
    const char* needle;
  };
  const std::vector<Case> cases = {
      {"e_banner.mtx", "%%MatrixMarkt matrix coordinate real general\n1 1 0\n", 1, "MatrixMarket"},
      {"e_array.mtx", "%%MatrixMarket matrix array real general\n1 1\n1\n", 1, "coordinate"},
      {"e_complex.mtx", "%%MatrixMarket matrix coordinate complex general\n1 1 0\n", 1, "field"},
      {"e_herm.mtx", "%%MatrixMarket matrix coordinate real hermitian\n1 1 0\n", 1, "symmetry"},
      {"e_empty.mtx", "", 1, "empty"},
      {"e_size.mtx", hdr + "% c\n3 x 2\n", 3, "rows cols nnz"},
      {"e_nosize.mtx", hdr + "% only comments\n", 3, "missing size"},
      {"e_malformed.mtx", hdr + "2 2 2\n1 1 1\n1 2 abc\n", 4, "malformed"},
      {"e_short.mtx", hdr + "2 2 2\n1 1 1\n2\n", 4, "malformed"},
      // hexadecimal floats, which strtod reads (thirty-seventh session's review: "0x10" was read as 16)
      {"e_hexfloat.mtx", hdr + "2 2 2\n1 1 1\n2 2 0x10\n", 4, "malformed"},
      {"e_trailing.mtx", hdr + "2 2 1\n1 1 1 9\n", 3, "trailing"},
      {"e_range.mtx", hdr + "2 2 2\n1 1 1\n3 1 1\n", 4, "out of range"},
      {"e_zero.mtx", hdr + "2 2 1\n0 1 1\n", 3, "out of range"},
      {"e_few.mtx", hdr + "2 2 3\n1 1 1\n2 2 1\n", 5, "2 of 3"},
      {"e_many.mtx", hdr + "2 2 1\n1 1 1\n2 2 1\n", 4, "more entries"},
      {"e_upper.mtx", "%%MatrixMarket matrix coordinate real symmetric\n2 2 1\n1 2 1\n", 3, "lower triangle"},
      {"e_skewdiag.mtx", "%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n1 1 1\n", 3, "strict lower"},
      {"e_symrect.mtx", "%%MatrixMarket matrix coordinate real symmetric\n2 3 0\n", 2, "square"},
      // fuzz finding: 4e8 declared rows and one entry would allocate a 3.2 GB row_ptr
      {"e_hypersparse.mtx", hdr + "% c\n400889119 5 1\n3 1 0.5\n", 3, "exceeds the bound"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto p = write(c.name, c.text);
    expect_line_error([&] { read_matrix_market(p); }, p, c.line, c.needle);
  }
}

// Real values are read into float: a decimal just above FLT_MAX that rounds to it ("3.4028235e+38", numpy's and
// %.8g's spelling of FLT_MAX) is FLT_MAX; one that rounds to inf (2^128 - 2^103 and above) is refused.
TEST(SdnnIo, RealValuesThatRoundToFltMaxAreAccepted) {
  const std::string hdr = "%%MatrixMarket matrix coordinate real general\n";
  const auto ok = write("fltmax.mtx", hdr + "2 2 2\n1 1 3.4028235e+38\n2 2 -3.40282356e38\n");
  const Csr a = read_matrix_market(ok);
  ASSERT_EQ(a.nnz(), 2);
  EXPECT_EQ(a.values[0], std::numeric_limits<float>::max());
  EXPECT_EQ(a.values[1], -std::numeric_limits<float>::max());
  const auto tsv = write("fltmax.tsv", "1\t1\t3.4028235e38\n");
  EXPECT_EQ(read_tsv(tsv).values.at(0), std::numeric_limits<float>::max());
  // 2^128 - 2^103 = 340282356779733661637539395458142568448 rounds (to even) to inf: refused.
  const auto bad = write("fltinf.mtx", hdr + "1 1 1\n1 1 340282356779733661637539395458142568448\n");
  expect_line_error([&] { read_matrix_market(bad); }, bad, 3, "outside the float range");
}

// A refused real value says why: not a decimal number, NaN or Inf, or beyond float's range (all three were
// "malformed real value" in MatrixMarket and "malformed line" in TSV).
TEST(SdnnIo, RefusedRealValuesSayWhy) {
  const std::string hdr = "%%MatrixMarket matrix coordinate real general\n";
  const struct {
    const char* value;
    const char* needle;
  } cases[] = {{"nan", "NaN or Inf"},          {"-inf", "NaN or Inf"},         {"Infinity", "NaN or Inf"},
               {"1e39", "outside the float range"}, {"-1e400", "outside the float range"}, {"0x10", "malformed real value"},
               {"1.5x", "malformed real value"},    {"abc", "malformed real value"}};
  int n = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.value);
    const auto mm = write("why" + std::to_string(n) + ".mtx", hdr + "1 1 1\n1 1 " + c.value + "\n");
    expect_line_error([&] { read_matrix_market(mm); }, mm, 3, c.needle);
    const auto tsv = write("why" + std::to_string(n++) + ".tsv", std::string("1\t1\t0.5\n1\t2\t") + c.value + "\n");
    const bool malformed = std::string(c.needle) == "malformed real value";
    expect_line_error([&] { read_tsv(tsv); }, tsv, 2, malformed ? "malformed line" : c.needle);
  }
}

TEST(SdnnIo, MatrixMarketDimensionBoundScalesWithNnz) {
  const std::string hdr = "%%MatrixMarket matrix coordinate pattern general\n";
  // 2^24 rows are always accepted; above that only with >= rows / 64 entries.
  EXPECT_EQ(read_matrix_market(write("b_ok.mtx", hdr + "16777216 2 1\n16777216 1\n")).rows, 16777216);
  const auto p = write("b_bad.mtx", hdr + "16777217 2 1\n1 1\n");
  expect_line_error([&] { read_matrix_market(p); }, p, 2, "exceeds the bound");
}

// Fuzz campaign (UBSan): the dimension bound 64 x nnz and the symmetric reserve 2 x nnz overflowed int64 for a
// declared nnz above 2^57 / 2^62. Such a file is now refused as truncated, like any other short file.
TEST(SdnnIo, MatrixMarketHugeDeclaredNnzDoesNotOverflow) {
  for (const std::string kind : {"general", "symmetric"}) {
    SCOPED_TRACE(kind);
    const auto p = write("huge_nnz_" + kind + ".mtx",
                         "%%MatrixMarket matrix coordinate real " + kind + "\n1 1 9223372036854775807\n1 1 2\n");
    expect_line_error([&] { read_matrix_market(p); }, p, 4, "file ends after 1 of 9223372036854775807");
  }
}

TEST(SdnnIo, MissingFileIsIoError) { EXPECT_THROW(read_matrix_market(tmp_path("does-not-exist.mtx")), spartan::IoError); }

// New-user review: `infer --features /nonexist` said "unknown matrix format" (the name has no .mtx / .tsv).
TEST(SdnnIo, ReadMatrixChecksExistenceBeforeTheName) {
  for (const std::string name : {"/nonexist", "/nonexist.mtx", "/nonexist.tsv.gz"}) {
    try {
      read_matrix(name);
      ADD_FAILURE() << "no error for " << name;
    } catch (const spartan::IoError& e) {
      EXPECT_NE(std::string(e.what()).find("no such file"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(read_matrix(::testing::TempDir()), spartan::IoError);  // a directory
  const auto other = tmp_path("features.bin");  // an existing file with another name: still the format error
  std::ofstream(other) << "x";
  try {
    read_matrix(other);
    ADD_FAILURE() << "no error for " << other;
  } catch (const spartan::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown matrix format"), std::string::npos) << e.what();
  }
}

TEST(SdnnIo, TsvTriples) {
  const auto p = write("w.tsv.gz", "1\t2\t0.0625\n3\t1\t-0.3\n\n2\t2\t1\n");
  const Csr a = read_tsv(p, 3, 3);
  EXPECT_EQ(a.rows, 3);
  EXPECT_EQ(a.nnz(), 3);
  EXPECT_FLOAT_EQ(at(a, 0, 1), 0.0625f);
  EXPECT_FLOAT_EQ(at(a, 2, 0), -0.3f);
  const Csr inferred = read_matrix(p);
  EXPECT_EQ(inferred.rows, 3);
  EXPECT_EQ(inferred.cols, 2);
}

TEST(SdnnIo, TsvErrorsNameFileAndLine) {
  const auto bad = write("bad.tsv", "1\t1\t1\n1\tx\t1\n");
  expect_line_error([&] { read_tsv(bad); }, bad, 2, "malformed");
  const auto two = write("two.tsv", "1\t1\t1\n2\t2\n");
  expect_line_error([&] { read_tsv(two); }, two, 2, "malformed");
  const auto range = write("range.tsv", "1\t1\t1\n\n1\t5\t1\n");
  expect_line_error([&] { read_tsv(range, 4, 4); }, range, 3, "out of range");
  const auto zero = write("zero.tsv", "0\t1\t1\n");
  expect_line_error([&] { read_tsv(zero); }, zero, 1, "out of range");
  EXPECT_THROW(read_matrix(write("x.csv", "1,1,1\n")), spartan::InputError);
}

TEST(SdnnIo, WriteReadRoundTrip) {
  const auto p = write("src.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 3\n1 2 0.1\n2 3 -7.25\n3 1 3\n");
  const Csr a = read_matrix_market(p);
  for (const char* name : {"rt.mtx", "rt.mtx.gz"}) {
    const auto q = tmp_path(name);
    write_matrix_market(q, a);
    EXPECT_EQ(read_matrix_market(q), a) << name;
  }
}

TEST(SdnnIo, ChallengeSubsetHeaders) {
  // Every layer: 1024 x 1024 with 32 non-zeros per row and column once symmetric storage is mirrored.
  for (int k : {1, 6, 30}) {
    SCOPED_TRACE(k);
    const Csr w = read_matrix(find_layer_file(SDNN_DATA_DIR, k));
    ASSERT_EQ(w.rows, 1024);
    ASSERT_EQ(w.nnz(), 32 * 1024);
    for (std::int64_t r = 0; r < w.rows; ++r) ASSERT_EQ(w.row_ptr[r + 1] - w.row_ptr[r], 32);
    const Csr t = transpose(w);
    for (std::int64_t r = 0; r < t.rows; ++r) ASSERT_EQ(t.row_ptr[r + 1] - t.row_ptr[r], 32);
  }
  const Csr y = read_matrix(std::string(SDNN_DATA_DIR) + "/sparse-images-1024_subset.mtx.gz");
  EXPECT_EQ(y.rows, 1200);
  EXPECT_EQ(y.cols, 1024);
  EXPECT_EQ(y.nnz(), 122713);
  for (float v : y.values) ASSERT_EQ(v, 1.0f);  // pattern
}

TEST(SdnnIo, LayerFileLookup) {
  const auto dir = std::filesystem::path(tmp_path("layers_dir"));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string mtx = "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1\n";
  std::ofstream(dir / "n2-l1.mtx") << mtx;
  std::ofstream(dir / "n2-l11.tsv") << "1\t1\t1\n";  // layer 11, not layer 1
  EXPECT_EQ(find_layer_file(dir.string(), 1), (dir / "n2-l1.mtx").string());
  EXPECT_EQ(find_layer_file(dir.string(), 11), (dir / "n2-l11.tsv").string());
  EXPECT_THROW(find_layer_file(dir.string(), 2), spartan::IoError);
  // The one-scan candidate list follows the same rule: a leading zero or a foreign suffix is no layer file.
  std::ofstream(dir / "n2-l01.mtx") << mtx;
  std::ofstream(dir / "n2-l3.mtx.bak") << mtx;
  const auto cand = layer_file_candidates(dir.string(), 11);
  ASSERT_EQ(cand.size(), 11u);
  EXPECT_EQ(cand[0], std::vector<std::string>{(dir / "n2-l1.mtx").string()});
  EXPECT_TRUE(cand[2].empty());
  EXPECT_EQ(cand[10], std::vector<std::string>{(dir / "n2-l11.tsv").string()});
  EXPECT_TRUE(layer_file_candidates((dir / "missing").string(), 3)[0].empty());
  // Two files for one layer: ambiguous, an input error naming both.
  std::ofstream(dir / "n2-l1.tsv") << "1\t1\t1\n";
  try {
    find_layer_file(dir.string(), 1);
    FAIL() << "no error for two layer-1 files";
  } catch (const spartan::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("n2-l1.mtx"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("n2-l1.tsv"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}
