#include "spartan/train/idx.h"

#include <zlib.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "spartan/common/error.h"

namespace spartan::train {
namespace {

std::vector<std::uint8_t> read_all(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  // A directory made the stream throw out of the reader ("internal error", exit 1; review finding), a FIFO
  // would block: only regular files (or links to them) are data.
  if (fs::exists(st) && !fs::is_regular_file(st)) throw IoError(path + ": not a regular file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path + ": cannot open");
  std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw IoError(path + ": read error");
  return bytes;
}

std::vector<std::uint8_t> gunzip(const std::string& path, const std::vector<std::uint8_t>& in) {
  std::vector<std::uint8_t> out;
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 16) != Z_OK) throw IoError(path + ": zlib inflateInit2 failed");
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.avail_in = static_cast<uInt>(in.size());
  std::vector<std::uint8_t> buf(1 << 20);
  int rc = Z_OK;
  for (;;) {
    if (rc == Z_STREAM_END) {
      // gzip allows several members back to back (`cat a.gz b.gz`); anything else after the stream is not data
      // the header describes (zlib stopped there silently; review finding).
      if (zs.avail_in == 0) break;
      if (zs.avail_in < 2 || zs.next_in[0] != 0x1f || zs.next_in[1] != 0x8b) {
        const std::uint64_t at = in.size() - zs.avail_in;
        const std::uint64_t extra = zs.avail_in;
        inflateEnd(&zs);
        throw FormatError(path, "gzip", at, std::to_string(extra) + " bytes after the end of the gzip stream",
                          "compressed byte offset");
      }
      inflateReset(&zs);
      rc = Z_OK;
    }
    zs.next_out = buf.data();
    zs.avail_out = static_cast<uInt>(buf.size());
    rc = inflate(&zs, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) {
      const std::uint64_t at = in.size() - zs.avail_in;
      inflateEnd(&zs);
      throw FormatError(path, "gzip", at,
                        rc == Z_BUF_ERROR ? "truncated gzip stream" : "corrupt gzip stream (zlib code " +
                                                                          std::to_string(rc) + ")",
                        "compressed byte offset");
    }
    out.insert(out.end(), buf.data(), buf.data() + (buf.size() - zs.avail_out));
    if (rc == Z_OK && zs.avail_in == 0 && zs.avail_out != 0) {
      const std::uint64_t at = in.size() - zs.avail_in;
      inflateEnd(&zs);
      throw FormatError(path, "gzip", at, "truncated gzip stream", "compressed byte offset");
    }
  }
  inflateEnd(&zs);
  return out;
}

/// "0x0D": a byte as 0x and two upper-case hex digits.
std::string hex_byte(std::uint8_t b) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02X", static_cast<unsigned>(b));
  return buf;
}

}  // namespace

IdxArray read_idx(const std::string& path) {
  std::vector<std::uint8_t> bytes = read_all(path);
  if (bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b) bytes = gunzip(path, bytes);
  if (bytes.size() < 4) throw FormatError(path, "magic", bytes.size(), "file shorter than the 4-byte IDX magic");
  if (bytes[0] != 0 || bytes[1] != 0) throw FormatError(path, "magic", 0, "bad IDX magic (first two bytes must be 0)");
  if (bytes[2] != 0x08)
    throw FormatError(path, "magic", 2, "unsupported IDX element type " + hex_byte(bytes[2]) + " (need 0x08 = u8)");
  const int d = bytes[3];
  if (d < 1 || d > 4) throw FormatError(path, "magic", 3, "unsupported number of dimensions " + std::to_string(d));
  const std::size_t header = 4 + 4 * static_cast<std::size_t>(d);
  if (bytes.size() < header) throw FormatError(path, "dims", bytes.size(), "file ends inside the dimension sizes");
  IdxArray a;
  std::uint64_t count = 1;
  for (int i = 0; i < d; ++i) {
    const std::uint8_t* p = bytes.data() + 4 + 4 * i;
    const std::uint32_t v = (std::uint32_t(p[0]) << 24) | (std::uint32_t(p[1]) << 16) | (std::uint32_t(p[2]) << 8) | p[3];
    a.dims.push_back(v);
    // Overflow-checked: 2^22 x 2^21 x 2^21 would wrap to 0 elements.
    if (__builtin_mul_overflow(count, std::uint64_t(v), &count) || count > (std::uint64_t(1) << 34))
      throw FormatError(path, "dims", 4 + 4 * static_cast<std::uint64_t>(i), "implausible element count (more than 2^34)");
  }
  if (bytes.size() - header < count)
    throw FormatError(path, "data", bytes.size(),
                      "truncated: header declares " + std::to_string(count) + " elements, file holds " +
                          std::to_string(bytes.size() - header));
  if (bytes.size() - header > count)  // a file of another shape, or two files joined (review finding)
    throw FormatError(path, "data", header + count,
                      std::to_string(bytes.size() - header - count) + " bytes after the " + std::to_string(count) +
                          " elements the header declares");
  a.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(header),
                bytes.begin() + static_cast<std::ptrdiff_t>(header + count));
  return a;
}

namespace {

/// The IDX file stems of one split (`prefix` = "train" or "t10k"): images, labels.
std::array<std::string, 2> split_stems(const std::string& prefix) {
  return {prefix + "-images-idx3-ubyte", prefix + "-labels-idx1-ubyte"};
}

std::string find_file(const std::string& dir, const std::string& stem) {
  namespace fs = std::filesystem;
  const fs::path gz = fs::path(dir) / (stem + ".gz"), raw = fs::path(dir) / stem;
  if (fs::exists(gz) && fs::exists(raw))  // which one was read was not said (review finding)
    std::fprintf(stderr, "spartan-train: note: both %s and %s exist; reading %s\n", gz.c_str(), raw.c_str(), gz.c_str());
  for (const fs::path& p : {gz, raw})
    if (fs::exists(p)) return p.string();
  throw IoError(dir + ": missing IDX file " + stem + "[.gz]");
}

DataSplit load_split(const std::string& dir, const std::string& prefix, int classes) {
  const auto stems = split_stems(prefix);
  const std::string img_path = find_file(dir, stems[0]);
  const std::string lab_path = find_file(dir, stems[1]);
  IdxArray img = read_idx(img_path);
  if (img.dims.size() != 3) throw FormatError(img_path, "dims", 3, "image file must have 3 dimensions (N, rows, cols)");
  // Bounds before the int casts: rows and cols in [1, kMaxImageSide] (rows*cols and the layers' int sizes cannot
  // overflow), N at most INT_MAX (at most 2^34 elements in all, read_idx).
  for (int i = 1; i < 3; ++i)
    if (img.dims[i] < 1 || img.dims[i] > kMaxImageSide)
      throw FormatError(img_path, "dims", 4 + 4 * static_cast<std::uint64_t>(i),
                        std::string(i == 1 ? "rows" : "cols") + " " + std::to_string(img.dims[i]) + " out of range 1.." +
                            std::to_string(kMaxImageSide));
  if (img.dims[0] > static_cast<std::uint32_t>(INT_MAX))
    throw FormatError(img_path, "dims", 4, std::to_string(img.dims[0]) + " images: more than " + std::to_string(INT_MAX));
  IdxArray lab = read_idx(lab_path);
  if (lab.dims.size() != 1) throw FormatError(lab_path, "dims", 3, "label file must have 1 dimension (N)");
  if (img.dims[0] != lab.dims[0])
    throw InputError(img_path + ": " + std::to_string(img.dims[0]) + " images but " + lab_path + " has " +
                     std::to_string(lab.dims[0]) + " labels");
  // An empty split would train nothing, or report a test accuracy of 0 % on 0 images (new-user review).
  if (img.dims[0] == 0) throw InputError(img_path + ": holds 0 images");
  DataSplit s;
  s.n = static_cast<int>(img.dims[0]);
  s.rows = static_cast<int>(img.dims[1]);
  s.cols = static_cast<int>(img.dims[2]);
  s.images.resize(img.data.size());
  std::transform(img.data.begin(), img.data.end(), s.images.begin(), [](std::uint8_t v) { return v / 255.0f; });
  s.labels = std::move(lab.data);
  for (std::size_t i = 0; i < s.labels.size(); ++i)
    if (s.labels[i] >= classes)
      throw FormatError(lab_path, "label[" + std::to_string(i) + "]", 8 + i,
                        "label " + std::to_string(s.labels[i]) + " is out of range for " + std::to_string(classes) +
                            " classes (expected 0.." + std::to_string(classes - 1) + ")");
  return s;
}

}  // namespace

Dataset load_idx_dataset(const std::string& dir, int classes) {
  if (classes < 1 || classes > 256) throw InputError(dir + ": the number of classes must be 1..256, got " + std::to_string(classes));
  Dataset ds;
  ds.dir = dir;
  ds.name = std::filesystem::path(dir).filename().string();
  if (ds.name.empty()) ds.name = std::filesystem::path(dir).parent_path().filename().string();
  ds.train = load_split(dir, "train", classes);
  ds.test = load_split(dir, "t10k", classes);
  if (ds.train.rows != ds.test.rows || ds.train.cols != ds.test.cols)
    throw InputError(dir + ": train and test images have different sizes");
  ds.classes = classes;
  return ds;
}

std::vector<std::string> idx_dataset_files(const std::string& dir) {
  std::vector<std::string> out;
  for (const char* prefix : {"train", "t10k"})
    for (const std::string& stem : split_stems(prefix))
      for (const std::string& name : {stem, stem + ".gz"}) out.push_back((std::filesystem::path(dir) / name).string());
  return out;
}

}  // namespace spartan::train
