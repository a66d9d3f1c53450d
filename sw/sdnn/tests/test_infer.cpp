// Inference against independent oracles: SuiteSparse:GraphBLAS on the 30-layer, 1200-image challenge subset,
// and a dense reference (written here) for the structural-bias rule.
#include <gtest/gtest.h>
#include <unistd.h>
#include <omp.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include "spartan/common/error.h"
#include "spartan/sdnn/graphblas_ref.h"
#include "spartan/sdnn/infer.h"
#include "test_tmp_dir.h"

using namespace spartan::sdnn;

TEST(SdnnInfer, ChallengeSubsetMatchesGraphBLAS) {
  const auto w = load_weights(SDNN_DATA_DIR, 30);
  const auto y0 = load_features(std::string(SDNN_DATA_DIR) + "/sparse-images-1024_subset.mtx.gz", 1024);
  const Csr y = infer(y0, w, -0.3f);
  graphblas::Problem gb(y0, w);
  const Csr ref = gb.run(-0.3f);
  const auto cats = categories(y), rcats = categories(ref);
  ASSERT_FALSE(rcats.empty());
  EXPECT_EQ(cats, rcats);
  ASSERT_EQ(y.row_ptr, ref.row_ptr);
  ASSERT_EQ(y.col_idx, ref.col_idx);
  for (std::size_t e = 0; e < y.values.size(); ++e) ASSERT_NEAR(y.values[e], ref.values[e], 1e-4f * std::max(1.0f, std::fabs(ref.values[e])));
  for (float v : y.values) {
    ASSERT_GT(v, 0.0f);
    ASSERT_LE(v, 32.0f);
  }
}

TEST(SdnnInfer, ThreadCountDoesNotChangeResult) {
  const auto w = load_weights(SDNN_DATA_DIR, 5);
  const auto y0 = load_features(std::string(SDNN_DATA_DIR) + "/sparse-images-1024_subset.mtx.gz", 1024);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const Csr a = infer(y0, w, -0.3f);
  omp_set_num_threads(2);
  const Csr b = infer(y0, w, -0.3f);
  omp_set_num_threads(saved);
  EXPECT_EQ(a, b);
}

// Dense reference: z = y W (in double), bias only where some y_ij != 0 meets W_jk != 0.
TEST(SdnnInfer, StructuralBiasMatchesDenseReference) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> val(-1.0f, 1.0f);
  const int rows = 37, n = 50;
  std::vector<Triple> ty, tw;
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < n; ++c)
      if (rng() % 6 == 0) ty.push_back({r, c, std::fabs(val(rng)) * 3});
  for (int r = 0; r < n; ++r)
    for (int c = 0; c < n; ++c)
      if (rng() % 9 == 0) tw.push_back({r, c, val(rng) * 4});
  const Csr y = csr_from_triples(rows, n, ty), w = csr_from_triples(n, n, tw);
  for (float bias : {0.5f, -0.3f}) {
    SCOPED_TRACE(bias);
    const Csr out = layer_forward(y, w, bias, 2.0f);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < n; ++c) {
        double z = 0;
        bool structural = false;
        for (auto p = y.row_ptr[r]; p < y.row_ptr[r + 1]; ++p) {
          const int j = y.col_idx[p];
          for (auto q = w.row_ptr[j]; q < w.row_ptr[j + 1]; ++q)
            if (w.col_idx[q] == c) {
              z += static_cast<double>(y.values[p]) * w.values[q];
              structural = true;
            }
        }
        const double expect = structural ? std::min(std::max(z + bias, 0.0), 2.0) : 0.0;
        float got = 0;
        for (auto q = out.row_ptr[r]; q < out.row_ptr[r + 1]; ++q)
          if (out.col_idx[q] == c) got = out.values[q];
        ASSERT_NEAR(got, expect, 1e-5) << r << "," << c;
      }
  }
  EXPECT_THROW(layer_forward(y, csr_from_triples(n + 1, n, {}), 0.0f), spartan::InputError);
}

// A TSV layer has no header: it is N x N with N the largest index of any layer, so a neuron without outgoing
// edges in one layer (its empty last row) does not make that layer (N - 1) x N (review of the thirty-seventh
// session: refused as "15 x 16, expected square"). A MatrixMarket layer's stated N wins; a TSV index beyond it
// is an error.
TEST(SdnnInfer, TsvLayersAreSquareWithTheNetworksNeuronCount) {
  namespace fs = std::filesystem;
  const fs::path dir = spartan::sdnn::testing::tmp_path("sdnn_infer_", "tsv_layers");
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "n4-l1.tsv") << "1\t4\t1\n2\t1\t1\n3\t2\t1\n";  // row 4 empty: max row 3, max column 4
  std::ofstream(dir / "n4-l2.tsv") << "1\t1\t1\n2\t2\t1\n";          // rows and columns 3, 4 empty here
  std::ofstream(dir / "n4-l3.tsv") << "4\t3\t2\n";
  const auto w = load_weights(dir.string(), 3);
  ASSERT_EQ(w.size(), 3u);
  for (const auto& l : w) {
    EXPECT_EQ(l.rows, 4);
    EXPECT_EQ(l.cols, 4);
    EXPECT_EQ(l.row_ptr.size(), 5u);
  }
  EXPECT_EQ(w[0].nnz(), 3);
  EXPECT_EQ(w[0].row_ptr[4], w[0].row_ptr[3]);  // the padded row is empty
  EXPECT_EQ(w[1].nnz(), 2);
  // A MatrixMarket layer states N = 6: the TSV layers take it.
  std::ofstream(dir / "n4-l4.mtx") << "%%MatrixMarket matrix coordinate real general\n6 6 1\n6 6 1\n";
  const auto w6 = load_weights(dir.string(), 4);
  for (const auto& l : w6) EXPECT_EQ(l.rows, 6);
  // ... and one of N = 3 is smaller than the TSV layers' index 4: an error, not a silent cut.
  fs::remove(dir / "n4-l4.mtx");
  std::ofstream(dir / "n4-l4.mtx") << "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1 1\n";
  EXPECT_THROW(load_weights(dir.string(), 4), spartan::InputError);
}

// The distributed run's verification compares results whose structures may differ (a lost halo vector drops or
// adds activations): an entry stored in one matrix only counts with its whole value, and a NaN is never hidden.
TEST(SdnnInfer, MaxAbsDifferenceCountsEntriesOfEitherStructure) {
  const Csr a = csr_from_triples(2, 4, {{0, 1, 2.0f}, {1, 0, 1.0f}, {1, 3, 5.0f}});
  EXPECT_EQ(max_abs_difference(a, a), 0.0);
  const Csr b = csr_from_triples(2, 4, {{0, 1, 2.25f}, {1, 0, 1.0f}, {1, 3, 5.0f}});
  EXPECT_DOUBLE_EQ(max_abs_difference(a, b), 0.25);
  const Csr missing = csr_from_triples(2, 4, {{0, 1, 2.0f}, {1, 0, 1.0f}});  // a's 5.0 not stored
  EXPECT_DOUBLE_EQ(max_abs_difference(a, missing), 5.0);
  EXPECT_DOUBLE_EQ(max_abs_difference(missing, a), 5.0);
  const Csr extra = csr_from_triples(2, 4, {{0, 1, 2.0f}, {0, 2, 7.0f}, {1, 0, 1.0f}, {1, 3, 5.0f}});
  EXPECT_DOUBLE_EQ(max_abs_difference(a, extra), 7.0);
  const Csr nan = csr_from_triples(2, 4, {{0, 1, std::nanf("")}, {1, 0, 1.0f}, {1, 3, 50.0f}});
  EXPECT_TRUE(std::isnan(max_abs_difference(a, nan)));
  EXPECT_THROW(max_abs_difference(a, csr_from_triples(3, 4, {})), spartan::InputError);
}

TEST(SdnnInfer, CliBadInputExitsTwo) {
  const std::string bin = SDNN_BIN;
  const std::string d = SDNN_DATA_DIR;
  auto run = [](const std::string& cmd) { return WEXITSTATUS(std::system((cmd + " >/dev/null 2>&1").c_str())); };
  EXPECT_EQ(run(bin + " infer --weights /nonexistent --layers 2 --features x.mtx --bias -0.3"), 2);
  EXPECT_EQ(run(bin + " infer --weights " + d + " --layers 31 --features " + d + "/sparse-images-1024_subset.mtx.gz --bias -0.3"), 2);
  EXPECT_EQ(run(bin + " infer --weights " + d + " --layers 2 --bias -0.3"), 2);
  EXPECT_EQ(run(bin + " frobnicate"), 2);
  EXPECT_EQ(run(bin + " partition --weights " + d + " --layers 2 --parts 2 --method nonsense --out /tmp/sdnn_never.txt"), 2);
  EXPECT_EQ(run(bin + " partition --weights " + d + " --layers 2 --parts 0 --method block --out /tmp/sdnn_never.txt"), 2);
  EXPECT_EQ(run(bin + " generate --neurons 1000 --layers 2 --out /tmp/sdnn_never_dir"), 2);
  EXPECT_EQ(run(bin + " generate --neurons 64 --layers 2 --init nonsense --out /tmp/sdnn_never_dir"), 2);
  EXPECT_EQ(run(bin + " train --neurons 1000 --layers 2"), 2);
  {  // --out naming an existing file: one line that names the option, exit 2
    const std::string f = ::testing::TempDir() + "sdnn_out_is_a_file_" + std::to_string(::getpid());
    std::FILE* fp = std::fopen(f.c_str(), "w");
    ASSERT_NE(fp, nullptr);
    std::fclose(fp);
    const std::string err = f + ".err";
    EXPECT_EQ(WEXITSTATUS(std::system((bin + " generate --neurons 64 --layers 2 --out " + f + " >/dev/null 2>" + err).c_str())), 2);
    std::ifstream in(err);
    std::string line, extra;
    std::getline(in, line);
    EXPECT_NE(line.find("--out"), std::string::npos) << line;
    EXPECT_FALSE(std::getline(in, extra)) << "more than one line: " << extra;
    std::remove(f.c_str());
    std::remove(err.c_str());
  }
  EXPECT_EQ(run(bin + " train --neurons 1024 --layers 2 --bias-mode sometimes"), 2);
  EXPECT_EQ(run(bin + " infer --weights " + d + " --layers 2 --features " + d + "/sparse-images-1024_subset.mtx.gz --bias -0.3 --partition /nonexistent.txt"), 2);
  EXPECT_FALSE(std::filesystem::exists("/tmp/sdnn_never.txt"));
  EXPECT_EQ(run(bin + " infer --weights " + d + " --layers 2 --features " + d + "/sparse-images-1024_subset.mtx.gz --bias -0.3"), 0);
}
