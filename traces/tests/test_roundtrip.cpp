// Writer -> reader round trips (bit-exact, every dtype), key parsing, writer failure paths, CLI info.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>
#include <gtest/gtest.h>

#include <cmath>

#include "golden_data.h"
#include "spartan/trace/keys.h"
#include "spartan/trace/metadata.h"
#include "spartan/trace/sptrace.h"
#include "test_util.h"

namespace spartan::trace {
namespace {
using testutil::temp_path;

std::string write_golden(const std::string& path) {
  TraceWriter w(path);
  w.set_metadata(keys::kFormatVersion, kFormatVersion);
  w.set_metadata(keys::kModel, "lenet5");
  w.set_metadata("dataset", "none");
  w.set_metadata("device", "cpu: test (1 threads)");
  w.set_metadata("seed", "1");
  w.set_metadata("batch", "2");
  w.set_metadata(keys::kLayers, layers_to_json({make_conv_layer(0, "conv1", 2, 3, 4, 4, 8, 3, 3, 1, 1, true),
                                                 make_fc_layer(1, "fc1", 2, 9, 10, false)}));
  for (const auto& t : testdata::golden_tensors()) w.add_tensor(t.name, t.dtype, t.shape, t.bytes.data(), t.bytes.size());
  w.finish();
  return path;
}

TEST(TraceRoundTrip, EveryDtypeBitExact) {
  const std::string path = write_golden(temp_path("golden.sptrace"));
  TraceReader r(path);
  const auto expect = testdata::golden_tensors();
  ASSERT_EQ(r.tensors().size(), expect.size());
  EXPECT_EQ(r.metadata().at("model"), "lenet5");
  EXPECT_EQ(r.metadata().at("format_version"), "1");
  for (const auto& t : expect) {
    SCOPED_TRACE(t.name);
    const TensorInfo* info = r.find(t.name);
    ASSERT_NE(info, nullptr);
    EXPECT_EQ(info->dtype, t.dtype);
    EXPECT_EQ(info->shape, t.shape);
    const TensorView v = r.view(t.name);
    ASSERT_EQ(v.bytes, t.bytes.size());
    if (v.bytes > 0) {
      EXPECT_EQ(std::memcmp(v.data, t.bytes.data(), v.bytes), 0);
    }
  }
  // Tensors come back in data-offset order = insertion order, contiguous from 0.
  std::uint64_t cursor = 0;
  for (std::size_t i = 0; i < expect.size(); ++i) {
    EXPECT_EQ(r.tensors()[i].begin, cursor);
    cursor = r.tensors()[i].end;
  }
  std::remove(path.c_str());
}

TEST(TraceRoundTrip, TypedAccessors) {
  const std::string path = write_golden(temp_path("typed.sptrace"));
  TraceReader r(path);
  const auto f = r.to_f32("it0/L1/act");
  const auto ref = testdata::special_floats();
  ASSERT_EQ(f.size(), ref.size());
  for (std::size_t i = 0; i < f.size(); ++i) {
    std::uint32_t a, b;
    std::memcpy(&a, &f[i], 4);
    std::memcpy(&b, &ref[i], 4);
    EXPECT_EQ(a, b) << i;
  }
  const auto h = r.to_f32("it0/L2/act");  // F16 -> F32
  EXPECT_TRUE(std::isnan(h[4]));
  EXPECT_TRUE(std::signbit(h[1]) && h[1] == 0.0f);
  EXPECT_EQ(h[2], 1.0f);
  EXPECT_EQ(h[18], std::ldexp(1.0f, -24));
  const auto bf = r.to_f32("it0/L3/act");
  EXPECT_EQ(bf[3], -1.5f);
  EXPECT_EQ(r.copy_as<std::int64_t>("it1/L0/i64")[2], std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(r.copy_as<std::uint32_t>("it1/L0/u32")[2], 0xffffffffu);
  EXPECT_EQ(r.to_f32("it1/L0/i32")[1], -1.0f);
  EXPECT_THROW(r.copy_as<float>("it1/L0/i64"), InputError);
  EXPECT_THROW(r.view("nope"), InputError);
  EXPECT_EQ(r.find("nope"), nullptr);
  EXPECT_TRUE(r.to_f32("it1/L0/empty").empty());
  EXPECT_EQ(r.to_f32("scalar"), std::vector<float>{42.0f});
  // Mask bit order: element e is bit e%8 of byte e/8.
  std::vector<std::uint8_t> flags(256);
  for (std::size_t i = 0; i < flags.size(); ++i) flags[i] = (i * 7 % 5) < 2;
  EXPECT_EQ(unpack_bits(r.view("it0/L0/dz_mask"), 256), flags);
  EXPECT_THROW(unpack_bits(r.view("it0/L0/dz_mask"), 300), InputError);
  EXPECT_THROW(unpack_bits(r.view("it0/L0/dz_mask"), 37), InputError);
  EXPECT_THROW(unpack_bits(r.view("it0/L1/act"), 8), InputError);
  std::remove(path.c_str());
}

TEST(TraceRoundTrip, PackBitsLittleEndianBitOrder) {
  const std::uint8_t f[10] = {1, 0, 0, 0, 0, 0, 0, 1, 0, 1};
  EXPECT_EQ(pack_bits(f, 10), (std::vector<std::uint8_t>{0x81, 0x02}));
  EXPECT_TRUE(pack_bits(f, 0).empty());
}

TEST(TraceRoundTrip, KeysSortedByIterationLayerKind) {
  const std::string path = temp_path("keys.sptrace");
  {
    TraceWriter w(path);
    const float x = 1.0f;
    for (const char* n : {"it10/L2/act", "it2/L10/act", "it2/L3/dz_mask", "it2/L3/act", "meta_tensor"})
      w.add_tensor(n, DType::F32, {1}, &x, 4);
    w.finish();
  }
  TraceReader r(path);
  const auto k = r.keys();
  ASSERT_EQ(k.size(), 4u);
  EXPECT_EQ(k[0].name(), "it2/L3/act");
  EXPECT_EQ(k[1].name(), "it2/L3/dz_mask");
  EXPECT_EQ(k[2].name(), "it2/L10/act");
  EXPECT_EQ(k[3].name(), "it10/L2/act");
  std::remove(path.c_str());
}

TEST(TraceKeyParse, ValidAndInvalid) {
  auto k = parse_key("it12/L3/act");
  ASSERT_TRUE(k);
  EXPECT_EQ(k->iteration, 12);
  EXPECT_EQ(k->layer, 3);
  EXPECT_EQ(k->kind, "act");
  EXPECT_EQ(k->name(), "it12/L3/act");
  k = parse_key("it0/L0/dz_mask");
  ASSERT_TRUE(k);
  EXPECT_EQ(k->kind, "dz_mask");
  for (const char* bad : {"", "it", "it1/L2/", "it1/L2", "itx/L2/act", "it1/2/act", "it-1/L2/act", "it01/L2/act",
                          "it1/L+2/act", "it1/L2/a/b", "IT1/L2/act", "it1//act", "it1/L/act",
                          "it9999999999999999999/L0/act", " it1/L2/act"})
    EXPECT_FALSE(parse_key(bad)) << bad;
  EXPECT_TRUE(parse_key("it999999999999999999/L0/act"));
}

TEST(TraceDType, NamesAndSizes) {
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64, DType::U8, DType::I8, DType::I32, DType::U32,
                  DType::I64, DType::U64, DType::BOOL}) {
    const auto back = parse_dtype(dtype_name(t));
    ASSERT_TRUE(back);
    EXPECT_EQ(*back, t);
  }
  EXPECT_EQ(dtype_size(DType::BF16), 2u);
  EXPECT_EQ(dtype_size(DType::I64), 8u);
  EXPECT_FALSE(parse_dtype("f32"));
  EXPECT_FALSE(parse_dtype("F8_E4M3"));
}

bool dir_has_prefix(const std::string& dir, const std::string& prefix) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return false;
  bool found = false;
  while (dirent* e = ::readdir(d))
    if (std::string(e->d_name).rfind(prefix, 0) == 0) found = true;
  ::closedir(d);
  return found;
}

TEST(TraceWriterFailure, DestroyedWithoutFinishLeavesNoFile) {
  const std::string path = temp_path("unfinished.sptrace");
  const std::string base = path.substr(path.rfind('/') + 1);
  {
    TraceWriter w(path);
    const float x[4] = {1, 2, 3, 4};
    w.add_tensor("it0/L0/act", DType::F32, {4}, x, sizeof x);
  }
  EXPECT_FALSE(dir_has_prefix(::testing::TempDir(), base)) << "file or temp file left behind";
  // An exception in the middle of writing: same.
  try {
    TraceWriter w(path);
    const float x[4] = {1, 2, 3, 4};
    w.add_tensor("a", DType::F32, {4}, x, sizeof x);
    w.add_tensor("a", DType::F32, {4}, x, sizeof x);  // duplicate -> InputError
    w.finish();
    FAIL() << "duplicate name accepted";
  } catch (const InputError&) {
  }
  EXPECT_FALSE(dir_has_prefix(::testing::TempDir(), base));
}

TEST(TraceWriterFailure, RejectsBadArguments) {
  TraceWriter w(temp_path("bad_args.sptrace"));
  const float x[4] = {1, 2, 3, 4};
  EXPECT_THROW(w.add_tensor("t", DType::F32, {3}, x, sizeof x), InputError);  // size mismatch
  EXPECT_THROW(w.add_tensor("t", DType::F32, {-4}, x, sizeof x), InputError);
  EXPECT_THROW(w.add_tensor("__metadata__", DType::F32, {4}, x, sizeof x), InputError);
  EXPECT_THROW(w.add_tensor("", DType::F32, {4}, x, sizeof x), InputError);
  EXPECT_THROW(w.add_tensor("t", DType::U8, {1ll << 62, 1ll << 62}, x, sizeof x), InputError);  // overflow
  w.set_metadata("bad", "\xff\xfe");
  EXPECT_THROW(w.finish(), InputError);  // invalid UTF-8 metadata
  EXPECT_THROW(TraceWriter("/nonexistent-dir/x.sptrace"), IoError);
}

// Symbolic links planted at the writer's former scratch name (`<path>.data.tmp.<pid>`; now made by mkostemp) and at
// AtomicFile's temporary name (`<path>.tmp.<pid>`) are not followed: their targets keep their contents and the trace
// is a regular file (review finding 106: the tensor bytes and then the whole trace were written over the targets).
TEST(TraceWriterFailure, NeverWritesThroughPlantedLinks) {
  const std::string path = temp_path("planted.sptrace"), v1 = temp_path("victim1"), v2 = temp_path("victim2");
  const std::string pid = std::to_string(::getpid());
  for (const std::string& v : {v1, v2}) {
    std::FILE* f = std::fopen(v.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fputs("keep", f);
    std::fclose(f);
  }
  std::remove((path + ".data.tmp." + pid).c_str());
  std::remove((path + ".tmp." + pid).c_str());
  ASSERT_EQ(::symlink(v1.c_str(), (path + ".data.tmp." + pid).c_str()), 0);
  ASSERT_EQ(::symlink(v2.c_str(), (path + ".tmp." + pid).c_str()), 0);
  {
    TraceWriter w(path);
    const float x[4] = {1, 2, 3, 4};
    w.add_tensor("t", DType::F32, {4}, x, sizeof x);
    w.finish();
  }
  EXPECT_EQ(testutil::read_bytes(v1), "keep");
  EXPECT_EQ(testutil::read_bytes(v2), "keep");
  struct stat st {};
  ASSERT_EQ(::lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  TraceReader r(path);
  ASSERT_EQ(r.tensors().size(), 1u);
  EXPECT_EQ(r.tensors()[0].name, "t");
  for (const std::string& p : {path, v1, v2, path + ".data.tmp." + pid, path + ".tmp." + pid}) std::remove(p.c_str());
}

// The writer refuses a header the readers would refuse (longer than kMaxHeaderBytes), and leaves no file.
TEST(TraceWriterFailure, RefusesAHeaderOverTheReadersLimit) {
  const std::string path = temp_path("big_header.sptrace");
  const std::string base = path.substr(path.rfind('/') + 1);
  {
    TraceWriter w(path);
    w.set_metadata("big", std::string(std::size_t(kMaxHeaderBytes), 'x'));
    try {
      w.finish();
      ADD_FAILURE() << "a header over the limit was written";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("readers accept"), std::string::npos) << e.what();
    }
  }
  EXPECT_FALSE(dir_has_prefix(::testing::TempDir(), base)) << "file or temp file left behind";
}

TEST(TraceWriterFailure, OverwritesAtomically) {
  const std::string path = temp_path("overwrite.sptrace");
  const float x = 1.0f;
  for (int i = 0; i < 2; ++i) {
    TraceWriter w(path);
    w.add_tensor("t" + std::to_string(i), DType::F32, {1}, &x, 4);
    w.finish();
    EXPECT_THROW(w.finish(), InputError);
  }
  TraceReader r(path);
  ASSERT_EQ(r.tensors().size(), 1u);
  EXPECT_EQ(r.tensors()[0].name, "t1");
  std::remove(path.c_str());
}

TEST(TraceRoundTrip, HeaderIsPaddedAndSafetensorsShaped) {
  const std::string path = write_golden(temp_path("layout.sptrace"));
  const std::string bytes = testutil::read_bytes(path);
  std::uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(bytes[8], '{');
  EXPECT_NE(bytes.find("\"__metadata__\""), std::string::npos);
  EXPECT_NE(bytes.find("\"data_offsets\""), std::string::npos);
  std::remove(path.c_str());
}

TEST(TraceCli, InfoAndCheckOnValidFile) {
  const std::string path = write_golden(temp_path("cli_ok.sptrace"));
  auto c = testutil::run_cli("check '" + path + "'");
  EXPECT_EQ(c.rc, 0) << c.err;
  EXPECT_EQ(c.out, "ok\n");
  EXPECT_EQ(c.err, "");
  c = testutil::run_cli("info '" + path + "' --tensors");
  EXPECT_EQ(c.rc, 0) << c.err;
  EXPECT_NE(c.out.find("tensors: 11"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("model"), std::string::npos);
  EXPECT_NE(c.out.find("density of act"), std::string::npos);
  // it0/L0/act: every third element of 96 is zero -> 64/96 non-zero.
  EXPECT_NE(c.out.find("0.6667"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("it1/L0/i64"), std::string::npos);
  EXPECT_NE(c.out.find("32x8x27"), std::string::npos) << c.out;  // conv1 fwd GEMM: M = 2*4*4, N = 8, K = 3*3*3
  c = testutil::run_cli("--help");
  EXPECT_EQ(c.rc, 0);
  EXPECT_NE(c.out.find("check FILE"), std::string::npos);
  for (const char* bad : {"", "frobnicate x", "info", "check a b", "info x --bogus"}) {
    c = testutil::run_cli(bad);
    EXPECT_EQ(c.rc, 2) << bad;
    EXPECT_EQ(testutil::count_lines(c.err), 1) << bad << ": " << c.err;
  }
  c = testutil::run_cli("check /nonexistent/file.sptrace");
  EXPECT_EQ(c.rc, 2);
  EXPECT_EQ(testutil::count_lines(c.err), 1);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace spartan::trace
