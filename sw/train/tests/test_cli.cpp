// spartan-train as a user runs it: --help, bad options and bad data (exit 2, one line, no trace
// left behind), and a short end-to-end run on a small raw-IDX subset of Fashion-MNIST whose trace is
// read back and validated.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>
#include <vector>

#include "spartan/trace/keys.h"
#include "spartan/trace/metadata.h"
#include "spartan/trace/sptrace.h"
#include "spartan/train/device.h"
#include "spartan/train/idx.h"

namespace fs = std::filesystem;

namespace {

struct RunResult {
  int code = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class Cli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("spartan_train_cli_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  RunResult run(const std::string& args) {
    const std::string cmd = std::string("OMP_NUM_THREADS=1 ") + SPARTAN_TRAIN_BIN + " " + args + " >" +
                            (dir_ / "out.txt").string() + " 2>" + (dir_ / "err.txt").string();
    const int st = std::system(cmd.c_str());
    RunResult r;
    r.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    r.out = slurp(dir_ / "out.txt");
    r.err = slurp(dir_ / "err.txt");
    return r;
  }
  /// Writes raw (uncompressed) IDX files holding the first n_train / n_test Fashion-MNIST images.
  bool make_subset(const fs::path& d, int n_train, int n_test) {
    const std::string src = spartan::train::kDefaultFashionMnistDir;
    if (!fs::exists(src + "/t10k-images-idx3-ubyte.gz")) return false;
    fs::create_directories(d);
    for (auto [prefix, n] : {std::pair<std::string, int>{"train", n_train}, {"t10k", n_test}}) {
      for (const std::string kind : {"images-idx3", "labels-idx1"}) {
        // t10k files are small; the training subset is cut from the test split to keep the test fast.
        auto a = spartan::train::read_idx(src + "/t10k-" + kind + "-ubyte.gz");
        a.dims[0] = static_cast<std::uint32_t>(n);
        std::size_t per = 1;
        for (std::size_t i = 1; i < a.dims.size(); ++i) per *= a.dims[i];
        const std::size_t first = prefix == "train" ? std::size_t(n_test) * per : 0;
        std::ofstream out(d / (prefix + "-" + kind + "-ubyte"), std::ios::binary);
        const unsigned char head[4] = {0, 0, 8, static_cast<unsigned char>(a.dims.size())};
        out.write(reinterpret_cast<const char*>(head), 4);
        for (auto v : a.dims) {
          const unsigned char be[4] = {static_cast<unsigned char>(v >> 24), static_cast<unsigned char>(v >> 16),
                                       static_cast<unsigned char>(v >> 8), static_cast<unsigned char>(v)};
          out.write(reinterpret_cast<const char*>(be), 4);
        }
        out.write(reinterpret_cast<const char*>(a.data.data() + first), static_cast<std::streamsize>(n * per));
      }
    }
    return true;
  }
  /// Writes a synthetic raw-IDX dataset of `rows` x `cols` images (n_train / n_test images, 10 classes) into `d`.
  static void make_synthetic(const fs::path& d, int rows, int cols, int n_train = 32, int n_test = 16) {
    fs::create_directories(d);
    auto write = [&](const std::string& name, std::vector<std::uint32_t> dims) {
      std::ofstream out(d / name, std::ios::binary);
      const unsigned char head[4] = {0, 0, 8, static_cast<unsigned char>(dims.size())};
      out.write(reinterpret_cast<const char*>(head), 4);
      std::size_t count = 1;
      for (auto v : dims) {
        const unsigned char be[4] = {static_cast<unsigned char>(v >> 24), static_cast<unsigned char>(v >> 16),
                                     static_cast<unsigned char>(v >> 8), static_cast<unsigned char>(v)};
        out.write(reinterpret_cast<const char*>(be), 4);
        count *= v;
      }
      const bool labels = dims.size() == 1;
      for (std::size_t i = 0; i < count; ++i) out.put(static_cast<char>(labels ? i % 10 : (i * 37) % 251));
    };
    for (auto [prefix, n] : {std::pair<std::string, int>{"train", n_train}, {"t10k", n_test}}) {
      write(prefix + "-images-idx3-ubyte", {std::uint32_t(n), std::uint32_t(rows), std::uint32_t(cols)});
      write(prefix + "-labels-idx1-ubyte", {std::uint32_t(n)});
    }
  }
  fs::path dir_;
};

int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

}  // namespace

TEST_F(Cli, HelpDocumentsEveryOption) {
  const RunResult r = run("--help");
  EXPECT_EQ(r.code, 0);
  for (const char* opt : {"--model", "--data", "--epochs", "--iterations", "--batch", "--lr", "--lr-schedule",
                          "--momentum", "--weight-decay", "--seed", "--threads", "--gemm", "--device", "--trace",
                          "--capture-every", "--gemm-repeats", "--trace-dtype", "--quiet", "--eval-every", "--test-limit", "--out-json"})
    EXPECT_NE(r.out.find(opt), std::string::npos) << opt;
}

TEST_F(Cli, BadOptionsExit2WithOneLine) {
  for (const std::string args : {"--bogus", "--model nope --iterations 1", "--batch 0", "--trace-dtype f8",
                                 "--gemm magic", "--device tpu", "--device cuda" /* no GPU here */, "--capture-every 0", "--gemm-repeats 0", "--lr -1", "--epochs x",
                                 "--lr-schedule step", "--threads 0", "--threads 100000", "--seed -1", "extra_positional"}) {
    const RunResult r = run(args + " --data " + (dir_ / "none").string());
    EXPECT_EQ(r.code, 2) << args << ": " << r.err;
    EXPECT_EQ(lines(r.err), 1) << args << ": " << r.err;
    EXPECT_NE(r.err.find("spartan-train: error:"), std::string::npos) << r.err;
  }
}

TEST_F(Cli, BadDataExit2AndNoTrace) {
  const fs::path trace = dir_ / "t.sptrace";
  RunResult r = run("--model lenet5 --data " + (dir_ / "missing").string() + " --trace " + trace.string());
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  // A truncated image file: FormatError naming the file.
  const fs::path d = dir_ / "trunc";
  if (!make_subset(d, 64, 32)) GTEST_SKIP() << "Fashion-MNIST not installed";
  fs::resize_file(d / "train-images-idx3-ubyte", 1000);
  r = run("--model lenet5 --data " + d.string() + " --trace " + trace.string());
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("train-images-idx3-ubyte"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("truncated"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(trace));
  for (const auto& e : fs::directory_iterator(dir_)) EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << e.path();
}

// A learning rate that makes the loss non-finite: one line naming --lr, exit 2 (it was 1, which --help does not
// list), no trace or JSON written; an empty output path is refused, not taken as "no trace" (new-user review).
TEST_F(Cli, DivergedTrainingAndEmptyOutputsExit2) {
  const fs::path d = dir_ / "data";
  if (!make_subset(d, 64, 16)) GTEST_SKIP() << "Fashion-MNIST not installed";
  const fs::path trace = dir_ / "div.sptrace", js = dir_ / "div.json";
  RunResult r = run("--model lenet5 --data " + d.string() + " --batch 8 --iterations 4 --threads 1 --quiet --lr 1e30 --trace " +
                    trace.string() + " --out-json " + js.string());
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("training diverged"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(trace));
  EXPECT_FALSE(fs::exists(js));
  for (const std::string opt : {"--trace", "--out-json"}) {
    r = run("--model lenet5 --data " + d.string() + " --batch 8 --iterations 2 --threads 1 --quiet " + opt + " ''");
    EXPECT_EQ(r.code, 2) << opt << ": " << r.err;
    EXPECT_NE(r.err.find(opt.substr(2) + ": empty value"), std::string::npos) << r.err;
  }
}

TEST_F(Cli, ShortRunWritesAValidTrace) {
  const fs::path d = dir_ / "data";
  if (!make_subset(d, 256, 64)) GTEST_SKIP() << "Fashion-MNIST not installed";
  const fs::path trace = dir_ / "run.sptrace", js = dir_ / "m.json";
  for (const std::string gemm : {"tile-sparse", "dense"}) {
    const RunResult r = run("--model lenet5 --data " + d.string() + " --batch 16 --iterations 5 --capture-every 2 --threads 1 --quiet --gemm " +
                            gemm + " --trace-dtype f16 --trace " + trace.string() + " --out-json " + js.string());
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(r.out.empty()) << "--quiet prints nothing: " << r.out;
    namespace tr = spartan::trace;
    tr::TraceReader rd(trace.string());
    tr::check_metadata(rd);
    const auto& md = rd.metadata();
    EXPECT_EQ(md.at(tr::keys::kModel), "lenet5");
    EXPECT_EQ(md.at(tr::keys::kBatch), "16");
    EXPECT_EQ(md.at(tr::keys::kSeed), "1");
    EXPECT_EQ(md.at(tr::keys::kDevice).rfind("cpu: ", 0), 0u);
    const auto layers = tr::read_layers(rd);
    ASSERT_EQ(layers.size(), 5u);  // conv1, conv2, fc1, fc2, fc3
    EXPECT_EQ(layers[0].fwd.M, 16 * 28 * 28);
    EXPECT_EQ(layers[0].fwd.N, 6);
    EXPECT_EQ(layers[0].fwd.K, 25);
    EXPECT_EQ(layers[2].type, "fc");
    EXPECT_FALSE(layers[4].relu_after);
    // Steps 0, 2, 4 captured; every layer has act, all but the classifier a dz_mask.
    const auto keys = rd.keys();
    EXPECT_EQ(keys.size(), 3u * (5 + 4));
    const auto* act = rd.find("it4/L1/act");
    ASSERT_NE(act, nullptr);
    EXPECT_EQ(act->dtype, tr::DType::F16);
    EXPECT_EQ(act->shape, (std::vector<std::int64_t>{16, 6, 14, 14}));
    EXPECT_EQ(rd.find("it4/L4/dz_mask"), nullptr);
    const auto mask = tr::unpack_bits(rd.view("it2/L0/dz_mask"), 16 * 6 * 28 * 28);
    const double ones = std::count(mask.begin(), mask.end(), 1) / double(mask.size());
    EXPECT_GT(ones, 0.05);
    EXPECT_LT(ones, 0.95);
    const auto times = tr::read_gemm_times(rd);
    ASSERT_EQ(times.size(), 3u * 5);
    EXPECT_GT(times[0].fwd.dense_ms, 0.0);
    EXPECT_EQ(times[0].fwd.tile_sparse_ms.has_value(), gemm == "tile-sparse");
    const auto sp = tr::read_sparsity(rd);
    ASSERT_EQ(sp.size(), 5u);
    // The activation of conv2 (after ReLU + max-pool) is sparse but not empty.
    const auto a = rd.to_f32("it4/L2/act");
    const double zeros = std::count(a.begin(), a.end(), 0.0f) / double(a.size());
    EXPECT_GT(zeros, 0.01);
    EXPECT_LT(zeros, 0.99);
    EXPECT_NE(slurp(js).find("\"test_accuracy\""), std::string::npos);
  }
}

TEST_F(Cli, GemmRepeatsOutOfRangeExit2) {
  // Checked before the data is read: the message names the option (1..1000), not the missing data.
  for (const std::string n : {"0", "-3", "1001", "1000000"}) {
    const RunResult r = run("--gemm-repeats " + n + " --data " + (dir_ / "none").string());
    EXPECT_EQ(r.code, 2) << n << ": " << r.err;
    EXPECT_EQ(lines(r.err), 1) << n << ": " << r.err;
    EXPECT_NE(r.err.find("--gemm-repeats must be in 1..1000"), std::string::npos) << n << ": " << r.err;
  }
}

// Images too small for the model (lenet5's second pool would see 1x1; vgg-s's last pool would run over a 28x20
// map's width 2) are refused with exit 2 and one line, before training and without a trace.
TEST_F(Cli, ImagesTooSmallForTheModelExit2) {
  const fs::path small = dir_ / "small", tiny = dir_ / "tiny", wide = dir_ / "wide", trace = dir_ / "t.sptrace";
  make_synthetic(small, 10, 10);
  make_synthetic(tiny, 7, 7);
  make_synthetic(wide, 28, 20);
  for (const auto& [model, d, what] : {std::tuple<std::string, fs::path, std::string>{"lenet5", small, "10x10 input too small"},
                                       {"alexnet-s", small, "10x10 input too small"},
                                       {"vgg-s", tiny, "7x7 input too small"},
                                       {"vgg-s", wide, "needs square input images (got 28x20)"}}) {
    const RunResult r = run("--model " + model + " --data " + d.string() + " --batch 8 --iterations 1 --quiet --trace " + trace.string());
    EXPECT_EQ(r.code, 2) << model << ": " << r.err;
    EXPECT_EQ(lines(r.err), 1) << model << ": " << r.err;
    EXPECT_NE(r.err.find(what), std::string::npos) << model << ": " << r.err;
    EXPECT_FALSE(fs::exists(trace)) << model;
  }
  // The smallest size lenet5 takes trains.
  const fs::path ok = dir_ / "ok";
  make_synthetic(ok, 12, 12);
  const RunResult r = run("--model lenet5 --data " + ok.string() + " --batch 8 --iterations 2 --threads 1 --quiet");
  EXPECT_EQ(r.code, 0) << r.err;
}

// --device cpu with a CUDA GEMM engine: the engine's times and the reference's come from the GPU (cuBLAS beside it,
// both CUDA events) and the trace records that GPU as the measuring device, while the training device stays the CPU.
TEST_F(Cli, CpuLayersWithCudaEngineRecordGpuTimes) {
  if (!spartan::train::cuda_available()) {
    // Without a GPU the CUDA engine is refused up front, naming the option.
    const RunResult r = run("--gemm cuda-tile-sparse --data " + (dir_ / "none").string());
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_EQ(lines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("--gemm cuda-tile-sparse"), std::string::npos) << r.err;
    GTEST_SKIP() << "no CUDA GPU (or build without CUDA): GPU timing of --device cpu --gemm cuda-* not checked";
  }
  const fs::path d = dir_ / "data", trace = dir_ / "gpu.sptrace";
  make_synthetic(d, 28, 28, 64, 16);
  for (const std::string gemm : {"cuda-tile-sparse", "cuda-dense"}) {
    const RunResult r = run("--model lenet5 --device cpu --gemm " + gemm + " --data " + d.string() +
                            " --batch 16 --iterations 1 --capture-every 1 --gemm-repeats 2 --threads 1 --quiet --trace " + trace.string());
    ASSERT_EQ(r.code, 0) << gemm << ": " << r.err;
    namespace tr = spartan::trace;
    tr::TraceReader rd(trace.string());
    tr::check_metadata(rd);
    EXPECT_EQ(rd.metadata().at(tr::keys::kDevice).rfind("cpu: ", 0), 0u) << gemm;
    const auto times = tr::read_gemm_times(rd);
    ASSERT_EQ(times.size(), 5u) << gemm;
    for (const auto& t : times) {
      EXPECT_EQ(t.device.rfind("cuda: ", 0), 0u) << gemm << ": " << t.device;
      EXPECT_EQ(t.timer, "cuda-events") << gemm;
      EXPECT_GT(t.fwd.dense_ms, 0.0) << gemm;
      EXPECT_EQ(t.fwd.tile_sparse_ms.has_value(), gemm == "cuda-tile-sparse") << gemm;
    }
  }
}
