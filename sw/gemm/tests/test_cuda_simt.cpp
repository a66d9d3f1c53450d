// The CUDA engines' kernels and host driver on the host emulation of CUDA launches (spartan/common/simt.h,
// spartan/gemm/simt.h): the shared cases of cuda_engine_cases.cpp, which a GPU runs in test_cuda.cpp, here on
// every machine; the emulator's own rules; and what the emulation can check that a GPU run would not show
// (the P-row chunking's independence of shared memory, shared-memory limits of smaller GPUs).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda_engine_cases.h"
#include "cuda_tile_kernels.h"
#include "spartan/gemm/simt.h"
#include "spartan/common/error.h"
#include "spartan/common/simt.h"

using namespace spartan::gemm;
using spartan::format::TileFormat;
namespace simt = spartan::simt;

namespace {

struct HostArray final : cuda_cases::DeviceArray {
  std::vector<float> v;
  explicit HostArray(const std::vector<float>& h) : v(h) { p = v.data(); }
  std::vector<float> host() const override { return v; }
};

cuda_cases::CudaBackend simt_backend() {
  cuda_cases::CudaBackend b;
  b.name = "Simt";
  b.unusable_reason = [] { return std::string(); };
  b.dense = [] { return make_simt_dense_engine(); };
  b.tile = [](const TileSparseOptions& o) { return make_simt_tile_sparse_engine(o); };
  b.stats = [](const GemmEngine& e) { return simt_last_tile_stats(e); };
  b.upload = [](const std::vector<float>& h) -> std::shared_ptr<cuda_cases::DeviceArray> {
    return std::make_shared<HostArray>(h);
  };
  return b;
}

}  // namespace

namespace spartan::gemm::cuda_cases {
INSTANTIATE_TEST_SUITE_P(Host, CudaEngineCases, ::testing::Values(simt_backend()), backend_name);
}  // namespace spartan::gemm::cuda_cases

// ---------------------------------------------------------------------------------------------------------
// The emulator

namespace {
SPARTAN_SIMT_NAMES

// Each thread writes its slot, waits, reads its neighbour's: right only if the barrier holds every thread
// until all have written. Also records the indices the kernel saw.
SPARTAN_KERNEL void neighbour_kernel(int* out, unsigned* dims) {
  SPARTAN_DYNAMIC_SHARED(int, slot);
  const unsigned n = blockDim.x * blockDim.y * blockDim.z;
  const unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  slot[t] = int(1000 * b + t);
  SPARTAN_SYNCTHREADS();
  out[b * n + t] = slot[(t + 1) % n];
  SPARTAN_SYNCTHREADS();
  slot[t] = -slot[t];  // a second phase: reads below see the negated values of every thread
  SPARTAN_SYNCTHREADS();
  out[b * n + t] += 7 * slot[(t + n - 1) % n];
  if (b == 0 && t == 0) {
    dims[0] = blockDim.x, dims[1] = blockDim.y, dims[2] = blockDim.z;
    dims[3] = gridDim.x, dims[4] = gridDim.y, dims[5] = gridDim.z;
  }
}

}  // namespace

TEST(Simt, BarrierOrdersSharedMemoryAcrossTheBlocksThreads) {
  const simt::Dim3 grid{3, 2, 2}, block{8, 4, 2};
  const unsigned n = 64, blocks = 12;
  std::vector<int> out(std::size_t(n) * blocks, 0);
  unsigned dims[6] = {};
  simt::launch(grid, block, n * sizeof(int), true, [&] { neighbour_kernel(out.data(), dims); });
  for (unsigned b = 0; b < blocks; ++b)
    for (unsigned t = 0; t < n; ++t)
      ASSERT_EQ(out[b * n + t], int(1000 * b + (t + 1) % n) - 7 * int(1000 * b + (t + n - 1) % n))
          << "block " << b << " thread " << t;
  EXPECT_EQ(dims[0], 8u);
  EXPECT_EQ(dims[1], 4u);
  EXPECT_EQ(dims[2], 2u);
  EXPECT_EQ(dims[3], 3u);
  EXPECT_EQ(dims[4], 2u);
  EXPECT_EQ(dims[5], 2u);
}

// Without the barrier the same kernel reads slots not yet written (the NaN fill) or already negated: the
// emulation's thread orders (index order, reverse order, alternating per block) expose the missing barrier.
TEST(Simt, AMissingBarrierGivesWrongValues) {
  const unsigned n = 32, blocks = 2;
  std::vector<int> out(n * blocks, 0);
  auto racy = [&] {
    SPARTAN_DYNAMIC_SHARED(int, slot);
    const unsigned t = threadIdx.x, b = blockIdx.x;
    slot[t] = int(1000 * b + t);
    // (no barrier)
    out[b * n + t] = slot[(t + 1) % n] + slot[(t + n - 1) % n];
  };
  simt::launch({blocks, 1, 1}, {n, 1, 1}, n * sizeof(int), true, racy);
  for (unsigned b = 0; b < blocks; ++b) {
    unsigned wrong = 0;
    for (unsigned t = 0; t < n; ++t)
      wrong += out[b * n + t] != int(1000 * b + (t + 1) % n) + int(1000 * b + (t + n - 1) % n);
    EXPECT_GE(wrong, n - 1) << "block " << b;  // all but the last thread to run read an unwritten slot
  }
}

TEST(Simt, ABarrierInDivergentCodeIsReportedNotHung) {
  // In block 1, threads 0-4 leave before the barrier the others wait at (reported in either block order).
  auto early_exit = [] {
    if (blockIdx.x == 1 && threadIdx.x < 5) return;
    SPARTAN_SYNCTHREADS();
  };
  for (int launch = 0; launch < 2; ++launch) {
    try {
      simt::launch({2, 1, 1}, {32, 1, 1}, 0, true, early_exit);
      FAIL() << "no error";
    } catch (const spartan::Error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("some threads ended while others wait at the __syncthreads() at " __FILE__ ":"),
                std::string::npos)
          << what;
      EXPECT_NE(what.find("block (1,0,0)"), std::string::npos) << what;
      EXPECT_EQ(e.exit_code(), 1);  // a kernel bug, not bad input
    }
  }
  // Odd threads wait twice, even ones once (the counts differ at the end of the block).
  auto uneven = [] {
    SPARTAN_SYNCTHREADS();
    if (threadIdx.x % 2) SPARTAN_SYNCTHREADS();
  };
  EXPECT_THROW(simt::launch({1, 1, 1}, {16, 1, 1}, 0, true, uneven), spartan::Error);
  // As many barriers each, but at different calls (the two branches' own __syncthreads()).
  auto two_sites = [] {
    if (threadIdx.x < 4) {
      SPARTAN_SYNCTHREADS();
    } else {
      SPARTAN_SYNCTHREADS();
    }
  };
  try {
    simt::launch({1, 1, 1}, {16, 1, 1}, 0, true, two_sites);
    FAIL() << "no error";
  } catch (const spartan::Error& e) {
    EXPECT_NE(std::string(e.what()).find("wait at different __syncthreads() calls (" __FILE__ ":"), std::string::npos)
        << e.what();
  }
  // A uniform early return (the whole block, before any barrier) is fine, as in CUDA.
  std::vector<int> ran(4, 0);
  auto uniform = [&] {
    if (blockIdx.x % 2) return;
    SPARTAN_SYNCTHREADS();
    if (threadIdx.x == 0) ran[blockIdx.x] = 1;
  };
  EXPECT_NO_THROW(simt::launch({4, 1, 1}, {16, 1, 1}, 0, true, uniform));
  EXPECT_EQ(ran, (std::vector<int>{1, 0, 1, 0}));
}

// Without barriers, even blocks run their threads in index order and odd blocks in reverse order.
TEST(Simt, LaunchesWithoutBarriersAlternateTheThreadOrder) {
  std::vector<std::vector<unsigned>> order(3);
  simt::launch({3, 1, 1}, {4, 1, 1}, 0, false, [&] { order[blockIdx.x].push_back(threadIdx.x); });
  EXPECT_EQ(order[0], (std::vector<unsigned>{0, 1, 2, 3}));
  EXPECT_EQ(order[1], (std::vector<unsigned>{3, 2, 1, 0}));
  EXPECT_EQ(order[2], (std::vector<unsigned>{0, 1, 2, 3}));
}

// Blocks run in index order in one launch and in reverse order in the next, over a 3-D grid: every block once,
// and a kernel whose blocks depend on one another gives different results in two consecutive launches.
TEST(Simt, ConsecutiveLaunchesRunTheBlocksInOppositeOrders) {
  const simt::Dim3 grid{3, 2, 2};
  std::vector<unsigned> first, second;
  for (std::vector<unsigned>* order : {&first, &second})
    simt::launch(grid, {2, 1, 1}, 0, false, [&] {
      if (threadIdx.x == 0) order->push_back((blockIdx.z * grid.y + blockIdx.y) * grid.x + blockIdx.x);
    });
  ASSERT_EQ(first.size(), 12u);
  std::vector<unsigned> reversed(first.rbegin(), first.rend());
  EXPECT_EQ(second, reversed);
  std::vector<unsigned> sorted = first;
  std::sort(sorted.begin(), sorted.end());
  for (unsigned b = 0; b < 12; ++b) EXPECT_EQ(sorted[b], b);
  EXPECT_TRUE(first == sorted || reversed == sorted) << "blocks neither in index order nor reversed";

  // The same barrier-free kernel twice: block b adds its predecessor's value (a dependence between blocks, which
  // a GPU does not order) and every block writes the same last element (a write-write race).
  std::vector<int> chain[2];
  for (auto& out : chain) {
    out.assign(9, 0);
    simt::launch({8, 1, 1}, {1, 1, 1}, 0, false, [&] {
      const unsigned b = blockIdx.x;
      out[b] = 1 + (b > 0 ? out[b - 1] : 0);
      out[8] = int(b);
    });
  }
  EXPECT_NE(chain[0], chain[1]);
  EXPECT_NE(chain[0][8], chain[1][8]);
}

TEST(Simt, SharedMemoryIsPoisonedBeforeEachBlock) {
  // Block 0 writes its shared memory; block 1 reads without writing and must see NaN, not block 0's values.
  std::vector<float> seen(2, 0.0f);
  auto k = [&] {
    SPARTAN_DYNAMIC_SHARED(float, sh);
    if (blockIdx.x == 0) sh[threadIdx.x] = 1.0f;
    SPARTAN_SYNCTHREADS();
    if (threadIdx.x == 0) seen[blockIdx.x] = sh[3];
  };
  simt::launch({2, 1, 1}, {8, 1, 1}, 8 * sizeof(float), true, k);
  EXPECT_EQ(seen[0], 1.0f);
  EXPECT_TRUE(std::isnan(seen[1])) << seen[1];
  // The same without barriers (serial threads; block 1 runs them in reverse order, so thread 0 reads last).
  std::vector<float> serial(2, 0.0f);
  auto s = [&] {
    SPARTAN_DYNAMIC_SHARED(float, sh);
    if (blockIdx.x == 0) sh[threadIdx.x] = 2.0f;
    if (threadIdx.x == (blockIdx.x == 0 ? 7u : 0u)) serial[blockIdx.x] = sh[3];
  };
  simt::launch({2, 1, 1}, {8, 1, 1}, 8 * sizeof(float), false, s);
  EXPECT_EQ(serial[0], 2.0f);
  EXPECT_TRUE(std::isnan(serial[1])) << serial[1];
  // SPARTAN_SHARED_ARRAY (a static on the host, zero at first and kept across blocks) is filled the same way:
  // block 0 writes it, and every block reads an element before anyone of its own block wrote it.
  std::vector<double> before(3, 0.0), after(3, 0.0);
  std::vector<unsigned long long> count_seen(3, 0);
  auto st = [&] {
    SPARTAN_SHARED_ARRAY(double, part, 4);
    SPARTAN_SHARED_ARRAY(unsigned long long, counts, 4);
    if (threadIdx.x == 0) before[blockIdx.x] = part[1], count_seen[blockIdx.x] = counts[2];
    SPARTAN_SYNCTHREADS();
    if (blockIdx.x == 0) part[threadIdx.x] = 5.0, counts[threadIdx.x] = 7;
    SPARTAN_SYNCTHREADS();
    if (threadIdx.x == 0) after[blockIdx.x] = part[1];
  };
  for (int launch = 0; launch < 2; ++launch) {  // both block orders
    simt::launch({3, 1, 1}, {4, 1, 1}, 0, true, st);
    for (int b = 0; b < 3; ++b) {
      EXPECT_TRUE(std::isnan(before[b])) << "launch " << launch << " block " << b << ": " << before[b];
      EXPECT_EQ(count_seen[b], ~0ull) << "launch " << launch << " block " << b;
    }
    EXPECT_EQ(after[0], 5.0);
    EXPECT_TRUE(std::isnan(after[1]) && std::isnan(after[2])) << after[1] << " " << after[2];
  }
  // The first block too (a fresh mapping would read 0): one-block launches, in both block-order parities.
  for (int launch = 0; launch < 2; ++launch) {
    float first = 0.0f;
    simt::launch({1, 1, 1}, {1, 1, 1}, 4 * sizeof(float), false, [&] {
      SPARTAN_DYNAMIC_SHARED(float, sh);
      first = sh[2];
    });
    EXPECT_TRUE(std::isnan(first)) << "launch " << launch << ": " << first;
  }
}

TEST(Simt, SharedMemoryOutOfBoundsIsCaught) {
  // A write below the start: reported after the block.
  auto below = [] {
    SPARTAN_DYNAMIC_SHARED(float, sh);
    if (threadIdx.x == 5) sh[-1] = 1.0f;
  };
  try {
    simt::launch({3, 1, 1}, {8, 1, 1}, 100 * sizeof(float), true, below);
    FAIL() << "no error";
  } catch (const spartan::Error& e) {
    EXPECT_NE(std::string(e.what()).find("wrote outside its dynamic shared memory"), std::string::npos)
        << e.what();
  }
  // Within bounds: fine, in every block.
  auto inside = [] {
    SPARTAN_DYNAMIC_SHARED(float, sh);
    sh[threadIdx.x] = 1.0f;
    sh[99 - threadIdx.x] = 2.0f;
  };
  EXPECT_NO_THROW(simt::launch({3, 1, 1}, {8, 1, 1}, 100 * sizeof(float), true, inside));
  // A launch without dynamic shared memory: a block that takes the pointer and writes below it is reported.
  auto none = [] {
    SPARTAN_DYNAMIC_SHARED(float, sh);
    if (threadIdx.x == 1 && blockIdx.x == 1) sh[-2] = 1.0f;
  };
  EXPECT_THROW(simt::launch({3, 1, 1}, {4, 1, 1}, 0, false, none), spartan::Error);
  // Reads of the slack below the start and of the rounding after the end give NaN (not a plausible value).
  std::vector<float> slack(2, 0.0f);
  auto reads = [&] {
    SPARTAN_DYNAMIC_SHARED(float, sh);
    if (threadIdx.x == 0) slack[0] = sh[-1], slack[1] = sh[25];
  };
  simt::launch({1, 1, 1}, {8, 1, 1}, 25 * sizeof(float), true, reads);
  EXPECT_TRUE(std::isnan(slack[0])) << slack[0];
  EXPECT_TRUE(std::isnan(slack[1])) << slack[1];
  // Into the 16-byte rounding after the end (25 floats: 100 bytes, rounded to 112): reported after the block.
  auto rounding = [] {
    SPARTAN_DYNAMIC_SHARED(float, sh);
    if (threadIdx.x == 2) sh[26] = 1.0f;
  };
  EXPECT_THROW(simt::launch({1, 1, 1}, {8, 1, 1}, 25 * sizeof(float), true, rounding), spartan::Error);
  // Past the end: the process faults (any death: a plain SIGSEGV, or AddressSanitizer's report of it).
  auto past = [] {
    SPARTAN_DYNAMIC_SHARED(float, sh);
    if (threadIdx.x == 7) sh[100] = 1.0f;
  };
  EXPECT_DEATH(simt::launch({1, 1, 1}, {8, 1, 1}, 100 * sizeof(float), true, past), "");
}

TEST(Simt, BadLaunchesAndMisuseThrow) {
  auto nothing = [] {};
  EXPECT_THROW(simt::launch({1, 1, 1}, {0, 1, 1}, 0, false, nothing), spartan::InputError);
  EXPECT_THROW(simt::launch({1, 1, 1}, {1025, 1, 1}, 0, true, nothing), spartan::InputError);
  EXPECT_THROW(simt::launch({1, 65536, 1}, {1, 1, 1}, 0, false, nothing), spartan::InputError);  // gridDim.y
  EXPECT_THROW(simt::launch({1, 1, 65536}, {1, 1, 1}, 0, false, nothing), spartan::InputError);  // gridDim.z
  EXPECT_THROW(simt::launch({1, 1, 1}, {1, 1, 65}, 0, false, nothing), spartan::InputError);     // blockDim.z
  EXPECT_THROW(simt::launch({0, 1, 1}, {32, 1, 1}, 0, false, nothing), spartan::InputError);
  EXPECT_THROW(simt::syncthreads(), std::logic_error);  // outside a launch
  EXPECT_THROW(simt::dynamic_shared(), std::logic_error);
  EXPECT_THROW(simt::launch({1, 1, 1}, {2, 1, 1}, 0, true, [&] { simt::launch({1, 1, 1}, {1, 1, 1}, 0, false, nothing); }),
               std::logic_error);  // from inside a kernel
  try {  // a barrier in a launch without uses_syncthreads: named with its file:line
    simt::launch({1, 1, 1}, {4, 1, 1}, 0, false, [] { SPARTAN_SYNCTHREADS(); });
    ADD_FAILURE() << "no error";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("syncthreads() at " __FILE__ ":"), std::string::npos) << e.what();
  }
  EXPECT_THROW(simt::static_shared(nullptr, 0), std::logic_error);  // outside a launch
  // A kernel's exception reaches the caller, and the next launch works.
  EXPECT_THROW(simt::launch({2, 1, 1}, {8, 1, 1}, 0, true,
                            [] {
                              if (threadIdx.x == 3 && blockIdx.x == 1) throw std::runtime_error("kernel");
                            }),
               std::runtime_error);
  int count = 0;
  simt::launch({3, 1, 1}, {1, 1, 1}, 0, true, [&] { ++count; });
  EXPECT_EQ(count, 3);
}

// ---------------------------------------------------------------------------------------------------------
// The tile kernel on GPUs of less shared memory

namespace {

/// C of one call of `e` (alpha 1.5, beta 0.5) on fixed random operands; the sparse operand at `sparsity` in
/// even chunks of 4096 stored elements and at 0.4 in odd ones (DENSE tiles beside sparse ones).
std::vector<float> run_once(GemmEngine& e, SparseOperand sp, Op oa, Op ob, int M, int N, int K, double sparsity) {
  std::mt19937 rng(21);
  std::uniform_real_distribution<float> u(-1, 1);
  std::uniform_real_distribution<double> p(0, 1);
  const int ar = oa == Op::N ? M : K, ac = oa == Op::N ? K : M, br = ob == Op::N ? K : N, bc = ob == Op::N ? N : K;
  std::vector<float> A(std::size_t(ar) * ac), B(std::size_t(br) * bc), C(std::size_t(M) * N);
  auto fill = [&](std::vector<float>& v, bool sparse) {
    for (std::size_t i = 0; i < v.size(); ++i)
      v[i] = sparse && p(rng) < ((i / 4096) % 2 ? 0.4 : sparsity) ? 0.0f : u(rng);
  };
  fill(A, sp == SparseOperand::A);
  fill(B, sp == SparseOperand::B);
  for (auto& x : C) x = u(rng);
  e.run({oa, ob, M, N, K, 1.5f, 0.5f, A.data(), ac, B.data(), bc, C.data(), N, sp});
  return C;
}

}  // namespace

// "Each output element is summed in the same order whatever the chunking" (cuda_tile_kernels.h): a GPU with
// less shared memory per block gets fewer P rows per block (more blocks on gridDim.z) and must give the same
// bits. 8 x 256 tiles: with sm_90's 227 KiB, 8 rows per block (bands of 8, S as stored) and 32 (bands of 256,
// S transposed: 8 chunks); with 32 KiB, 4 and 4 (2 and 64 chunks). DENSE, ELL / BITMAP and zero tiles all
// take part.
TEST(CudaTileSimt, FewerRowsPerBlockGiveTheSameBits) {
  {
    TileSparseOptions o;
    o.tile_rows = 8;
    o.tile_cols = 256;
    const std::size_t st = cudak::kTileKernelStaticSmemBytes;
    EXPECT_EQ(cudak::chunk_rows(o, 8, kSm90SharedMemoryPerBlockOptinBytes, st), 8);
    EXPECT_EQ(cudak::chunk_rows(o, 256, kSm90SharedMemoryPerBlockOptinBytes, st), 32);
    EXPECT_EQ(cudak::chunk_rows(o, 8, 32 * 1024, st), 4);  // 8 rows: 28,672 + 4,100 = 32,772 > 32,768
    EXPECT_EQ(cudak::chunk_rows(o, 256, 32 * 1024, st), 4);
  }
  for (TileFormat f : {TileFormat::Ell, TileFormat::Bitmap})
    for (SparseOperand sp : {SparseOperand::A, SparseOperand::B})
      for (Op op : {Op::N, Op::T}) {
        TileSparseOptions o;
        o.tile_rows = 8;
        o.tile_cols = 256;
        o.sparse_format = f;
        o.threshold = 0.3;
        o.whole_call_guard = false;
        auto big = make_simt_tile_sparse_engine(o);
        auto small = make_simt_tile_sparse_engine(o, 32 * 1024);
        for (double sparsity : {0.8, 0.97}) {
          const std::vector<float> a = run_once(*big, sp, op, op, 70, 150, 300, sparsity);
          const std::vector<float> b = run_once(*small, sp, op, op, 70, 150, 300, sparsity);
          ASSERT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0)
              << "format " << int(f) << " sp " << int(sp) << " op " << int(op) << " sparsity " << sparsity;
          const TileSparseStats* st = simt_last_tile_stats(*small);
          ASSERT_NE(st, nullptr);
          EXPECT_FALSE(st->full_dense);
          EXPECT_GT(st->tiles_sparse, 0u);
          EXPECT_GT(st->tiles_dense, 0u);
        }
      }
}

// The P rows per block follow the shared memory: fewer rows, then a clear error when not even one fits.
// sm_75 (64 KiB opt-in), the smallest of the build's architectures, takes every allowed tile (cuda.h).
TEST(CudaTileSimt, SharedMemoryLimitsOfSmallerGpus) {
  for (cuda_cases::TileShape t : cuda_cases::kAllowedTileExamples) {
    TileSparseOptions o;
    o.tile_rows = t.r;
    o.tile_cols = t.c;
    EXPECT_NO_THROW(make_simt_tile_sparse_engine(o, 64 * 1024)) << t.r << "x" << t.c;
  }
  TileSparseOptions o;  // 16 x 256: 49,152 bytes of tile and entry list + 512 per row + 4,100 static
  try {
    make_simt_tile_sparse_engine(o, 48 * 1024);
    FAIL() << "no error";
  } catch (const spartan::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("shared memory per block"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(make_simt_tile_sparse_engine(o, 49152 + 512 + 4100));  // exactly one row
  EXPECT_THROW(make_simt_tile_sparse_engine(o, 49152 + 512 + 4100 - 1), spartan::InputError);
  // And the one-row engine computes (16 chunks of one row per band as stored, 256 transposed).
  std::mt19937 rng(4);
  o.whole_call_guard = false;
  auto one_row_sparse = make_simt_tile_sparse_engine(o, 49152 + 512 + 4100);
  for (SparseOperand sp : {SparseOperand::A, SparseOperand::B})
    cuda_cases::check_engine(*one_row_sparse, sp, Op::N, Op::T, 33, 140, 300, 0.8, rng);
}
