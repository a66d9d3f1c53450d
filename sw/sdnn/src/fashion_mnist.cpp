// Fashion-MNIST loader (see train.h).
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "spartan/common/error.h"
#include "spartan/sdnn/train.h"

namespace spartan::sdnn {
namespace {

std::vector<unsigned char> read_gz(const std::string& path) {
  if (!std::filesystem::is_regular_file(path)) throw IoError("cannot open '" + path + "': no such file");
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw IoError("cannot open '" + path + "'");
  std::vector<unsigned char> out;
  unsigned char buf[1 << 16];
  int n = 0;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.insert(out.end(), buf, buf + n);
  gzclose(f);
  if (n < 0) throw FormatError(path, "", out.size(), "gzip decompression failed");
  return out;
}

std::uint32_t be32(const std::vector<unsigned char>& b, std::size_t off) {
  return (std::uint32_t{b[off]} << 24) | (std::uint32_t{b[off + 1]} << 16) | (std::uint32_t{b[off + 2]} << 8) | b[off + 3];
}

}  // namespace

std::array<std::string, 2> fashion_mnist_files(const std::string& dir, const std::string& prefix) {
  return {dir + "/" + prefix + "-images-idx3-ubyte.gz", dir + "/" + prefix + "-labels-idx1-ubyte.gz"};
}

LabelledSet load_fashion_mnist(const std::string& dir, const std::string& prefix, std::int64_t neurons, std::int64_t limit) {
  const auto side = static_cast<std::int64_t>(std::llround(std::sqrt(static_cast<double>(neurons))));
  if (side * side != neurons) throw InputError("Fashion-MNIST input needs a square neuron count, got " + std::to_string(neurons));
  const auto files = fashion_mnist_files(dir, prefix);
  const std::string& ip = files[0];
  const std::string& lp = files[1];
  const auto img = read_gz(ip), lab = read_gz(lp);
  if (img.size() < 16 || be32(img, 0) != 0x803) throw FormatError(ip, "magic", 0, "not an IDX3 ubyte image file");
  if (lab.size() < 8 || be32(lab, 0) != 0x801) throw FormatError(lp, "magic", 0, "not an IDX1 ubyte label file");
  const std::int64_t count = be32(img, 4), rows = be32(img, 8), cols = be32(img, 12);
  if (rows < 1 || cols < 1) throw FormatError(ip, "size", 8, "images of " + std::to_string(rows) + " x " + std::to_string(cols) + " pixels");
  if (limit < 0) throw InputError("image limit must be >= 0 (0 = all images), got " + std::to_string(limit));
  if (static_cast<std::int64_t>(img.size()) != 16 + count * rows * cols) throw FormatError(ip, "size", 4, "image count and file size disagree");
  if (be32(lab, 4) != count || static_cast<std::int64_t>(lab.size()) != 8 + count) throw FormatError(lp, "size", 4, "label count differs from the image count");
  const std::int64_t n = limit > 0 ? std::min(limit, count) : count;
  LabelledSet s;
  std::vector<Triple> t;
  for (std::int64_t i = 0; i < n; ++i) {
    const unsigned char* px = img.data() + 16 + i * rows * cols;
    for (std::int64_t y = 0; y < side; ++y)
      for (std::int64_t x = 0; x < side; ++x) {
        // Bilinear sample at the pixel centre mapped into the source grid.
        const double sy = std::clamp((y + 0.5) * rows / side - 0.5, 0.0, rows - 1.0), sx = std::clamp((x + 0.5) * cols / side - 0.5, 0.0, cols - 1.0);
        const auto y0 = static_cast<std::int64_t>(sy), x0 = static_cast<std::int64_t>(sx);
        const auto y1 = std::min(y0 + 1, rows - 1), x1 = std::min(x0 + 1, cols - 1);
        const double fy = sy - y0, fx = sx - x0;
        const double v = (1 - fy) * ((1 - fx) * px[y0 * cols + x0] + fx * px[y0 * cols + x1]) + fy * ((1 - fx) * px[y1 * cols + x0] + fx * px[y1 * cols + x1]);
        if (v / 255.0 >= 0.5) t.push_back({i, y * side + x, 1.0f});
      }
    s.labels.push_back(lab[8 + i]);
  }
  s.features = csr_from_triples(n, neurons, std::move(t));
  return s;
}

}  // namespace spartan::sdnn
