#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include "spartan/common/error.h"
#include "spartan/train/idx.h"

namespace fs = std::filesystem;
using spartan::train::read_idx;

namespace {

std::vector<std::uint8_t> idx_bytes(const std::vector<std::uint32_t>& dims, std::size_t data_bytes, std::uint8_t fill = 7) {
  std::vector<std::uint8_t> b = {0, 0, 8, static_cast<std::uint8_t>(dims.size())};
  for (auto d : dims)
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<std::uint8_t>(d >> s));
  for (std::size_t i = 0; i < data_bytes; ++i) b.push_back(static_cast<std::uint8_t>(fill + i));
  return b;
}

class IdxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("spartan_idx_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write_raw(const std::string& name, const std::vector<std::uint8_t>& b) {
    const std::string p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
    return p;
  }
  std::string write_gz(const std::string& name, const std::vector<std::uint8_t>& b) {
    const std::string p = (dir_ / name).string();
    gzFile f = gzopen(p.c_str(), "wb");
    gzwrite(f, b.data(), static_cast<unsigned>(b.size()));
    gzclose(f);
    return p;
  }
  fs::path dir_;
};

}  // namespace

TEST_F(IdxTest, ReadsRawAndGzip) {
  const auto b = idx_bytes({2, 3, 4}, 24);
  for (const std::string& p : {write_raw("a.idx", b), write_gz("a.idx.gz", b)}) {
    const auto a = read_idx(p);
    ASSERT_EQ(a.dims, (std::vector<std::uint32_t>{2, 3, 4}));
    ASSERT_EQ(a.data.size(), 24u);
    EXPECT_EQ(a.data[0], 7);
    EXPECT_EQ(a.data[23], 30);
  }
}

TEST_F(IdxTest, BadMagicNamesOffset) {
  auto b = idx_bytes({3}, 3);
  b[1] = 1;
  const std::string p = write_raw("bad.idx", b);
  try {
    read_idx(p);
    FAIL() << "no throw";
  } catch (const spartan::FormatError& e) {
    EXPECT_EQ(e.file(), p);
    EXPECT_EQ(e.offset(), 0u);
  }
  b[1] = 0;
  b[2] = 0x0D;  // float elements: unsupported
  try {
    read_idx(write_raw("f.idx", b));
    FAIL() << "no throw";
  } catch (const spartan::FormatError& e) {
    EXPECT_EQ(e.offset(), 2u);
    // The element type in hex as the IDX specification writes it (was "0x13": decimal digits after "0x").
    EXPECT_NE(std::string(e.what()).find("element type 0x0D "), std::string::npos) << e.what();
  }
}

TEST_F(IdxTest, TruncatedDataAndHeader) {
  auto b = idx_bytes({10, 2}, 20);
  b.resize(b.size() - 5);
  try {
    read_idx(write_raw("t.idx", b));
    FAIL() << "no throw";
  } catch (const spartan::FormatError& e) {
    EXPECT_EQ(e.offset(), b.size());
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos);
  }
  EXPECT_THROW(read_idx(write_raw("h.idx", {0, 0, 8, 3, 0, 0})), spartan::FormatError);
  EXPECT_THROW(read_idx(write_raw("e.idx", {0, 0})), spartan::FormatError);
}

TEST_F(IdxTest, TruncatedGzipStream) {
  const std::string p = write_gz("z.gz", idx_bytes({100}, 100));
  std::ifstream in(p, std::ios::binary);
  std::vector<std::uint8_t> gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  gz.resize(gz.size() / 2);
  EXPECT_THROW(read_idx(write_raw("z2.gz", gz)), spartan::FormatError);
}

// Bytes the header does not describe are refused (they were read silently: thirty-eighth session's review), in
// a raw file and after a gzip stream; a gzip file of several members (`cat a.gz b.gz`) is one stream of data.
TEST_F(IdxTest, TrailingBytesAreRefusedMultiMemberGzipIsRead) {
  auto raw = idx_bytes({4, 2}, 8);
  raw.push_back(0);
  try {
    read_idx(write_raw("r.idx", raw));
    FAIL() << "no throw";
  } catch (const spartan::FormatError& e) {
    EXPECT_EQ(e.offset(), 4u + 8u + 8u);
    EXPECT_NE(std::string(e.what()).find("1 bytes after the 8 elements"), std::string::npos) << e.what();
  }
  const auto full = idx_bytes({4, 2}, 8);
  auto slurp = [](const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::vector<std::uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  std::vector<std::uint8_t> gz = slurp(write_gz("z.gz", full));
  const std::size_t stream_bytes = gz.size();
  auto garbage = gz;
  garbage.insert(garbage.end(), {'x', 'y', 'z'});
  try {
    read_idx(write_raw("g.gz", garbage));
    FAIL() << "no throw";
  } catch (const spartan::FormatError& e) {
    EXPECT_EQ(e.offset(), stream_bytes);
    EXPECT_NE(std::string(e.what()).find("3 bytes after the end of the gzip stream"), std::string::npos) << e.what();
  }
  // two members: the header and the first data bytes, then the rest
  const std::vector<std::uint8_t> a(full.begin(), full.begin() + 13), b(full.begin() + 13, full.end());
  std::vector<std::uint8_t> two = slurp(write_gz("a.gz", a));
  const auto second = slurp(write_gz("b.gz", b));
  two.insert(two.end(), second.begin(), second.end());
  const auto arr = read_idx(write_raw("two.gz", two));
  EXPECT_EQ(arr.dims, (std::vector<std::uint32_t>{4, 2}));
  EXPECT_EQ(arr.data, std::vector<std::uint8_t>(full.begin() + 12, full.end()));
}

// A directory (or FIFO) where a data file is expected: an IoError (exit 2), not the stream's exception (exit 1).
TEST_F(IdxTest, NonRegularFileIsIoError) {
  fs::create_directories(dir_ / "d.idx");
  EXPECT_THROW(read_idx((dir_ / "d.idx").string()), spartan::IoError);
}

TEST_F(IdxTest, MissingFileIsIoError) {
  EXPECT_THROW(read_idx((dir_ / "nope").string()), spartan::IoError);
  EXPECT_THROW(spartan::train::load_idx_dataset(dir_.string()), spartan::IoError);
}

TEST_F(IdxTest, LoadsDatasetPairsAndChecksCounts) {
  write_gz("train-images-idx3-ubyte.gz", idx_bytes({3, 2, 2}, 12, 0));
  write_raw("train-labels-idx1-ubyte", {0, 0, 8, 1, 0, 0, 0, 3, 0, 1, 9});
  write_raw("t10k-images-idx3-ubyte", idx_bytes({1, 2, 2}, 4, 251));
  write_raw("t10k-labels-idx1-ubyte", {0, 0, 8, 1, 0, 0, 0, 1, 2});
  const auto ds = spartan::train::load_idx_dataset(dir_.string());
  EXPECT_EQ(ds.train.n, 3);
  EXPECT_EQ(ds.test.n, 1);
  EXPECT_EQ(ds.train.rows, 2);
  EXPECT_FLOAT_EQ(ds.train.images[0], 0.0f);
  EXPECT_FLOAT_EQ(ds.test.images[3], 254.0f / 255.0f);
  EXPECT_EQ(ds.classes, 10);
  write_raw("t10k-labels-idx1-ubyte", {0, 0, 8, 1, 0, 0, 0, 2, 2, 3});
  EXPECT_THROW(spartan::train::load_idx_dataset(dir_.string()), spartan::InputError);
  // A split of 0 images (valid headers) is refused: it gave "test acc 0.00% on 0 images".
  write_raw("t10k-images-idx3-ubyte", idx_bytes({0, 2, 2}, 0));
  write_raw("t10k-labels-idx1-ubyte", {0, 0, 8, 1, 0, 0, 0, 0});
  try {
    spartan::train::load_idx_dataset(dir_.string());
    ADD_FAILURE() << "an empty test split was accepted";
  } catch (const spartan::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("t10k-images-idx3-ubyte: holds 0 images"), std::string::npos) << e.what();
  }
}

TEST_F(IdxTest, RejectsOutOfRangeLabelNamingFileIndexAndLabel) {
  write_raw("train-images-idx3-ubyte", idx_bytes({3, 2, 2}, 12, 0));
  write_raw("train-labels-idx1-ubyte", {0, 0, 8, 1, 0, 0, 0, 3, 0, 12, 9});
  write_raw("t10k-images-idx3-ubyte", idx_bytes({1, 2, 2}, 4, 0));
  const std::string test_labels = write_raw("t10k-labels-idx1-ubyte", {0, 0, 8, 1, 0, 0, 0, 1, 2});
  try {
    spartan::train::load_idx_dataset(dir_.string());
    FAIL() << "label 12 of 10 classes accepted";
  } catch (const spartan::FormatError& e) {
    const std::string w = e.what();
    EXPECT_EQ(e.file(), (dir_ / "train-labels-idx1-ubyte").string());
    EXPECT_NE(w.find("label[1]"), std::string::npos) << w;
    EXPECT_NE(w.find("label 12"), std::string::npos) << w;
    EXPECT_EQ(e.offset(), 9u);
  }
  write_raw("train-labels-idx1-ubyte", {0, 0, 8, 1, 0, 0, 0, 3, 0, 1, 9});
  write_raw("t10k-labels-idx1-ubyte", {0, 0, 8, 1, 0, 0, 0, 1, 255});
  EXPECT_THROW(spartan::train::load_idx_dataset(dir_.string()), spartan::FormatError);
  // With more classes declared, the same label is valid.
  const auto ds = spartan::train::load_idx_dataset(dir_.string(), 256);
  EXPECT_EQ(ds.classes, 256);
  (void)test_labels;
}

TEST_F(IdxTest, ElementCountOverflowAndImageSizeAreFormatErrors) {
  // 2^22 x 2^21 x 2^21 = 2^64 elements: the product wrapped to 0 and passed as an empty file.
  const std::vector<std::uint8_t> wrap = {0, 0, 8, 3, 0, 0x40, 0, 0, 0, 0x20, 0, 0, 0, 0x20, 0, 0};
  try {
    read_idx(write_raw("wrap.idx", wrap));
    FAIL() << "2^64 elements accepted";
  } catch (const spartan::FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("implausible element count"), std::string::npos) << e.what();
  }
  // 2^32-1 images of 0 x 0 pixels: 0 elements, but N, rows and cols do not make a dataset.
  write_raw("train-images-idx3-ubyte", {0, 0, 8, 3, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0});
  write_raw("train-labels-idx1-ubyte", {0, 0, 8, 1, 0xff, 0xff, 0xff, 0xff});
  write_raw("t10k-images-idx3-ubyte", idx_bytes({1, 2, 2}, 4, 0));
  write_raw("t10k-labels-idx1-ubyte", {0, 0, 8, 1, 0, 0, 0, 1, 2});
  try {
    spartan::train::load_idx_dataset(dir_.string());
    FAIL() << "0 x 0 images accepted";
  } catch (const spartan::FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("rows 0 out of range"), std::string::npos) << e.what();
  }
  // 1 x 5000 x 1 image: cols within the element limit, rows above kMaxImageSide.
  write_raw("train-images-idx3-ubyte", idx_bytes({1, 5000, 1}, 5000, 0));
  write_raw("train-labels-idx1-ubyte", {0, 0, 8, 1, 0, 0, 0, 1, 0});
  EXPECT_THROW(spartan::train::load_idx_dataset(dir_.string()), spartan::FormatError);
}
