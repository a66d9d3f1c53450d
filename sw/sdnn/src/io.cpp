// Readers and writers for MatrixMarket coordinate and Graph Challenge TSV files (see sparse.h).
#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <sstream>
#include <tuple>

#include "spartan/common/atomic_file.h"
#include "spartan/common/error.h"
#include "spartan/sdnn/sparse.h"

namespace spartan::sdnn {
namespace {

/// Line-by-line reader over gzip or plain files.
class LineReader {
 public:
  explicit LineReader(const std::string& path) : path_(path) {
    if (!std::filesystem::is_regular_file(path)) throw IoError("cannot open '" + path + "': no such file");
    gz_ = gzopen(path.c_str(), "rb");
    if (!gz_) throw IoError("cannot open '" + path + "': " + std::strerror(errno));
    gzbuffer(gz_, 1 << 17);
  }
  ~LineReader() {
    if (gz_) gzclose(gz_);
  }
  /// Next line without the newline; false at end of file. A NUL byte in a line is a format error (a C-string
  /// reader would silently cut the line there and join the rest to the next line).
  bool next(std::string& line) {
    line.clear();
    for (;;) {
      if (pos_ == len_) {
        const int n = gzread(gz_, buf_, sizeof buf_);
        if (n < 0) {
          int err = 0;
          const char* msg = gzerror(gz_, &err);
          throw FormatError(path_, "", line_no_ + 1, std::string("decompression failed: ") + msg, "line");
        }
        pos_ = 0;
        len_ = static_cast<std::size_t>(n);
        if (len_ == 0) {
          int err = 0;
          const char* msg = gzerror(gz_, &err);
          if (err != Z_OK && err != Z_STREAM_END)
            throw FormatError(path_, "", line_no_ + 1, std::string("decompression failed: ") + msg, "line");
          if (line.empty()) return false;
          return finish(line);
        }
      }
      const char* start = buf_ + pos_;
      const char* nl = static_cast<const char*>(std::memchr(start, '\n', len_ - pos_));
      const std::size_t take = nl ? static_cast<std::size_t>(nl - start) : len_ - pos_;
      line.append(start, take);
      pos_ += take + (nl ? 1 : 0);
      if (nl) return finish(line);
    }
  }
  std::uint64_t line_no() const { return line_no_; }

 private:
  bool finish(std::string& line) {
    ++line_no_;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find('\0') != std::string::npos) throw FormatError(path_, "", line_no_, "NUL byte in the line", "line");
    return true;
  }
  std::string path_;
  gzFile gz_ = nullptr;
  char buf_[1 << 16];
  std::size_t pos_ = 0, len_ = 0;
  std::uint64_t line_no_ = 0;
};

bool blank(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\t'; });
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// Parses an integer token at p; advances p. False if no integer or trailing garbage attached.
bool parse_int(const char*& p, std::int64_t& v) {
  while (*p == ' ' || *p == '\t') ++p;
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(p, &end, 10);
  if (end == p || errno == ERANGE || (*end != 0 && *end != ' ' && *end != '\t')) return false;
  v = x;
  p = end;
  return true;
}

// The outcome of reading one real value: why it is refused, if it is.
enum class RealParse { Ok, Malformed, NanOrInf, OutOfRange };
const char* real_parse_message(RealParse r) {
  switch (r) {
    case RealParse::NanOrInf: return "real value is NaN or Inf";
    case RealParse::OutOfRange: return "real value outside the float range (magnitude 2^128 - 2^103 or more)";
    default: return "malformed real value";
  }
}

// Reads one real value into v and returns Ok, or returns why it is refused (the text is not a decimal number, is
// NaN or Inf, or is outside float's range) and leaves p and v alone.
RealParse parse_float(const char*& p, float& v) {
  while (*p == ' ' || *p == '\t') ++p;
  char* end = nullptr;
  const double x = std::strtod(p, &end);
  if (end == p || (*end != 0 && *end != ' ' && *end != '\t')) return RealParse::Malformed;
  // Decimal only (MatrixMarket's and the Graph Challenge TSV's real numbers): strtod also reads hexadecimal
  // floats ("0x10" = 16), which no such file holds (thirty-seventh session's review), and "inf" / "nan".
  for (const char* c = p; c < end; ++c)
    if (!std::isdigit(static_cast<unsigned char>(*c)) && *c != '+' && *c != '-' && *c != '.' && *c != 'e' && *c != 'E')
      return std::isnan(x) || std::isinf(x) ? RealParse::NanOrInf : RealParse::Malformed;
  // Finite in float too: 1e300 would narrow to inf. The bound is where float rounding reaches inf, FLT_MAX + half an
  // ulp (2^128 - 2^103): a decimal between FLT_MAX and it rounds to FLT_MAX, e.g. "3.4028235e+38", which is how numpy
  // and %.8g print FLT_MAX (finding 110). A decimal beyond double's range reads as inf.
  constexpr double kFloatRoundsToInf = 0x1.ffffffp+127;
  if (!(std::fabs(x) < kFloatRoundsToInf)) return RealParse::OutOfRange;
  v = static_cast<float>(x);
  p = end;
  return RealParse::Ok;
}

bool at_end(const char* p) {
  while (*p == ' ' || *p == '\t') ++p;
  return *p == 0;
}

bool ends_with(const std::string& s, const std::string& suf) {
  return s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
}

}  // namespace

Csr csr_from_triples(std::int64_t rows, std::int64_t cols, std::vector<Triple> t) {
  std::sort(t.begin(), t.end(), [](const Triple& a, const Triple& b) { return a.row != b.row ? a.row < b.row : a.col < b.col; });
  Csr m;
  m.rows = rows;
  m.cols = cols;
  m.row_ptr.assign(static_cast<std::size_t>(rows) + 1, 0);
  m.col_idx.reserve(t.size());
  m.values.reserve(t.size());
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (i > 0 && t[i].row == t[i - 1].row && t[i].col == t[i - 1].col) {
      m.values.back() += t[i].value;
      continue;
    }
    m.col_idx.push_back(static_cast<std::int32_t>(t[i].col));
    m.values.push_back(t[i].value);
    ++m.row_ptr[static_cast<std::size_t>(t[i].row) + 1];
  }
  for (std::int64_t r = 0; r < rows; ++r) m.row_ptr[r + 1] += m.row_ptr[r];
  return m;
}

Csr transpose(const Csr& a) {
  Csr t;
  t.rows = a.cols;
  t.cols = a.rows;
  t.row_ptr.assign(static_cast<std::size_t>(a.cols) + 1, 0);
  for (auto c : a.col_idx) ++t.row_ptr[static_cast<std::size_t>(c) + 1];
  for (std::int64_t c = 0; c < a.cols; ++c) t.row_ptr[c + 1] += t.row_ptr[c];
  t.col_idx.resize(a.col_idx.size());
  t.values.resize(a.values.size());
  std::vector<std::int64_t> pos(t.row_ptr.begin(), t.row_ptr.end() - 1);
  for (std::int64_t r = 0; r < a.rows; ++r)
    for (auto k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) {
      const auto c = a.col_idx[k];
      t.col_idx[pos[c]] = static_cast<std::int32_t>(r);
      t.values[pos[c]++] = a.values[k];
    }
  return t;
}

Csc to_csc(const Csr& a) {
  Csr t = transpose(a);
  Csc c;
  c.rows = a.rows;
  c.cols = a.cols;
  c.col_ptr = std::move(t.row_ptr);
  c.row_idx = std::move(t.col_idx);
  c.values = std::move(t.values);
  return c;
}

Csr to_csr(const Csc& a) {
  Csr t;
  t.rows = a.cols;
  t.cols = a.rows;
  t.row_ptr = a.col_ptr;
  t.col_idx = a.row_idx;
  t.values = a.values;
  return transpose(t);
}

Csr read_matrix_market(const std::string& path) {
  LineReader in(path);
  std::string line;
  if (!in.next(line)) throw FormatError(path, "header", 1, "empty file, expected '%%MatrixMarket' header", "line");
  std::istringstream hs(line);
  std::string banner, object, format, field, symmetry, extra;
  hs >> banner >> object >> format >> field >> symmetry;
  if (banner != "%%MatrixMarket" || lower(object) != "matrix" || symmetry.empty() || (hs >> extra))
    throw FormatError(path, "header", 1, "expected '%%MatrixMarket matrix coordinate <field> <symmetry>'", "line");
  format = lower(format);
  field = lower(field);
  symmetry = lower(symmetry);
  if (format != "coordinate") throw FormatError(path, "header", 1, "only 'coordinate' format is supported, got '" + format + "'", "line");
  if (field != "real" && field != "integer" && field != "pattern" && field != "double")
    throw FormatError(path, "header", 1, "unsupported field '" + field + "' (expected real, integer or pattern)", "line");
  if (symmetry != "general" && symmetry != "symmetric" && symmetry != "skew-symmetric")
    throw FormatError(path, "header", 1, "unsupported symmetry '" + symmetry + "' (expected general, symmetric or skew-symmetric)", "line");
  const bool pattern = field == "pattern";
  const bool integer = field == "integer";
  const int sym = symmetry == "general" ? 0 : (symmetry == "symmetric" ? 1 : 2);

  // Size line (after comments and blank lines).
  bool have_size = false;
  std::int64_t rows = 0, cols = 0, nnz = 0;
  while (in.next(line)) {
    if (line.empty() || line[0] == '%' || blank(line)) continue;
    const char* p = line.c_str();
    if (!parse_int(p, rows) || !parse_int(p, cols) || !parse_int(p, nnz) || !at_end(p) || rows < 0 || cols < 0 || nnz < 0)
      throw FormatError(path, "size", in.line_no(), "expected 'rows cols nnz' (three non-negative integers)", "line");
    if (rows > INT32_MAX || cols > INT32_MAX) throw FormatError(path, "size", in.line_no(), "dimensions exceed 2^31-1", "line");
    if (sym != 0 && rows != cols) throw FormatError(path, "size", in.line_no(), symmetry + " matrix must be square", "line");
    // row_ptr / col_ptr cost 8 bytes per row / column whatever nnz is: a 70-byte file declaring 4e8 rows and
    // one entry would allocate 3.2 GB (fuzz_sdnn_matrix_market finding). Same bound as inferred TSV sizes.
    // nnz is clamped before the product: 64 x nnz overflowed int64 for nnz > 2^57 (UBSan, fuzz campaign); rows and
    // cols are <= 2^31-1 here, so a clamped bound of 64 x (2^31-1) refuses nothing the exact one would accept.
    const std::int64_t bound = std::max<std::int64_t>(kMaxInferredDim, 64 * std::min<std::int64_t>(nnz, INT32_MAX));
    if (rows > bound || cols > bound)
      throw FormatError(path, "size", in.line_no(),
                        "declared " + std::to_string(rows) + " x " + std::to_string(cols) + " with " + std::to_string(nnz) +
                            " entries exceeds the bound " + std::to_string(bound) +
                            " per dimension (max(2^24, 64 x nnz): hyper-sparse matrices are not supported)",
                        "line");
    have_size = true;
    break;
  }
  if (!have_size) throw FormatError(path, "size", in.line_no() + 1, "missing size line", "line");
  std::vector<Triple> t;
  // The size line is untrusted: reserve at most 1 Mi entries up front (a tiny file declaring 4e11 entries
  // must not allocate terabytes; found by fuzz_sdnn_matrix_market), the vector grows past that as read.
  // (min before doubling: 2 x nnz overflowed int64 for a symmetric file declaring nnz > 2^62.)
  t.reserve(static_cast<std::size_t>(std::min<std::int64_t>((sym ? 2 : 1) * std::min<std::int64_t>(nnz, std::int64_t{1} << 20),
                                                             std::int64_t{1} << 20)));
  std::int64_t seen = 0;
  while (in.next(line)) {
    if (line.empty() || line[0] == '%' || blank(line)) continue;
    const auto ln = in.line_no();
    if (seen == nnz) throw FormatError(path, "entry", ln, "more entries than the " + std::to_string(nnz) + " declared", "line");
    const char* p = line.c_str();
    std::int64_t i = 0, j = 0;
    float v = 1.0f;
    if (!parse_int(p, i) || !parse_int(p, j)) throw FormatError(path, "entry", ln, "malformed entry, expected 'row col" + std::string(pattern ? "'" : " value'"), "line");
    if (!pattern) {
      if (integer) {
        std::int64_t iv = 0;
        if (!parse_int(p, iv)) throw FormatError(path, "entry", ln, "malformed integer value", "line");
        v = static_cast<float>(iv);
      } else if (const RealParse r = parse_float(p, v); r != RealParse::Ok) {
        throw FormatError(path, "entry", ln, real_parse_message(r), "line");
      }
    }
    if (!at_end(p)) throw FormatError(path, "entry", ln, "trailing characters after entry", "line");
    if (i < 1 || i > rows || j < 1 || j > cols)
      throw FormatError(path, "entry", ln, "index (" + std::to_string(i) + ", " + std::to_string(j) + ") out of range for " + std::to_string(rows) + " x " + std::to_string(cols), "line");
    if (sym == 1 && i < j) throw FormatError(path, "entry", ln, "symmetric file stores the lower triangle only, got an entry above the diagonal", "line");
    if (sym == 2 && i <= j) throw FormatError(path, "entry", ln, "skew-symmetric file stores the strict lower triangle only", "line");
    t.push_back({i - 1, j - 1, v});
    if (sym != 0 && i != j) t.push_back({j - 1, i - 1, sym == 2 ? -v : v});
    ++seen;
  }
  if (seen != nnz)
    throw FormatError(path, "entry", in.line_no() + 1, "file ends after " + std::to_string(seen) + " of " + std::to_string(nnz) + " declared entries", "line");
  return csr_from_triples(rows, cols, std::move(t));
}

Csr read_tsv(const std::string& path, std::int64_t rows, std::int64_t cols) {
  LineReader in(path);
  std::string line;
  std::vector<Triple> t;
  std::int64_t max_r = 0, max_c = 0;
  while (in.next(line)) {
    if (line.empty() || blank(line)) continue;
    const auto ln = in.line_no();
    const char* p = line.c_str();
    std::int64_t i = 0, j = 0;
    float v = 0;
    RealParse r = RealParse::Ok;
    if (!parse_int(p, i) || !parse_int(p, j) || (r = parse_float(p, v)) != RealParse::Ok || !at_end(p))
      throw FormatError(path, "entry", ln,
                        r == RealParse::NanOrInf || r == RealParse::OutOfRange
                            ? real_parse_message(r)
                            : "malformed line, expected 'row<TAB>col<TAB>value'",
                        "line");
    if (i < 1 || j < 1 || (rows > 0 && i > rows) || (cols > 0 && j > cols) || i > INT32_MAX || j > INT32_MAX)
      throw FormatError(path, "entry", ln, "index (" + std::to_string(i) + ", " + std::to_string(j) + ") out of range" +
                                               (rows > 0 ? " for " + std::to_string(rows) + " x " + std::to_string(cols) : std::string()), "line");
    max_r = std::max(max_r, i);
    max_c = std::max(max_c, j);
    t.push_back({i - 1, j - 1, v});
  }
  // An inferred dimension sizes row_ptr (8 bytes a row): a short file naming index 1e9 would allocate
  // gigabytes (fuzz_sdnn_tsv finding). Inferred sizes are bounded by kMaxInferredDim or 64 x nnz, whichever
  // is larger (Graph Challenge files: <= 65536 neurons, 60000 images); larger ones need explicit dimensions.
  const std::int64_t bound = std::max<std::int64_t>(kMaxInferredDim, 64 * static_cast<std::int64_t>(t.size()));
  for (auto [inferred, dim, what] : {std::tuple{rows <= 0, max_r, "rows"}, std::tuple{cols <= 0, max_c, "columns"}})
    if (inferred && dim > bound)
      throw FormatError(path, "entry", 0,
                        std::string("inferred ") + what + " " + std::to_string(dim) + " from " + std::to_string(t.size()) +
                            " entries exceeds the bound " + std::to_string(bound) + " (give the dimensions explicitly)",
                        "line");
  return csr_from_triples(rows > 0 ? rows : max_r, cols > 0 ? cols : max_c, std::move(t));
}

Csr read_matrix(const std::string& path, std::int64_t rows, std::int64_t cols) {
  // Existence before the name: a missing file is "no such file" whatever its extension (it said "unknown matrix
  // format" for a name without one).
  if (!std::filesystem::exists(path)) throw IoError("cannot open '" + path + "': no such file");
  if (std::filesystem::is_directory(path)) throw IoError("cannot open '" + path + "': is a directory, expected a file");
  if (ends_with(path, ".mtx") || ends_with(path, ".mtx.gz") || ends_with(path, ".mm") || ends_with(path, ".mm.gz"))
    return read_matrix_market(path);
  if (ends_with(path, ".tsv") || ends_with(path, ".tsv.gz")) return read_tsv(path, rows, cols);
  throw InputError("'" + path + "': unknown matrix format (expected .mtx, .mtx.gz, .tsv or .tsv.gz)");
}

std::vector<std::vector<std::string>> layer_file_candidates(const std::string& dir, int layers) {
  namespace fs = std::filesystem;
  std::vector<std::vector<std::string>> out(static_cast<std::size_t>(std::max(layers, 0)));
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    for (const char* ext : {".mtx", ".mtx.gz", ".tsv", ".tsv.gz"}) {
      if (!ends_with(name, ext)) continue;
      // `*-l{k}{ext}` with k written without leading zeros (the name find_layer_file matches)
      const std::string stem = name.substr(0, name.size() - std::strlen(ext));
      const std::size_t dash = stem.rfind("-l");
      if (dash == std::string::npos || dash + 2 >= stem.size() || stem.size() - dash - 2 > 9 || stem[dash + 2] == '0' ||
          stem.find_first_not_of("0123456789", dash + 2) != std::string::npos)
        continue;
      const long k = std::stol(stem.substr(dash + 2));
      if (k >= 1 && k <= layers) out[static_cast<std::size_t>(k - 1)].push_back(e.path().string());
    }
  }
  return out;
}

std::string find_layer_file(const std::string& dir, int layer) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir))
    throw IoError("weights directory '" + dir + "' " + (fs::exists(dir) ? "is a file, expected a directory" : "does not exist"));
  const std::string suffix = "-l" + std::to_string(layer);
  std::vector<std::string> found = layer < 1 ? std::vector<std::string>{} : layer_file_candidates(dir, layer)[layer - 1];
  if (found.empty()) throw IoError("no weight file for layer " + std::to_string(layer) + " (*" + suffix + ".mtx[.gz] or .tsv[.gz]) in '" + dir + "'");
  if (found.size() > 1) {
    std::sort(found.begin(), found.end());
    std::string names;
    for (const auto& f : found) names += (names.empty() ? "'" : ", '") + f + "'";
    throw InputError("layer " + std::to_string(layer) + " has " + std::to_string(found.size()) +
                     " weight files in '" + dir + "' (" + names + "); keep one");
  }
  return found.front();
}

std::string matrix_market_bytes(const Csr& a, bool gzip) {
  std::ostringstream os;
  os << "%%MatrixMarket matrix coordinate real general\n" << a.rows << ' ' << a.cols << ' ' << a.nnz() << '\n';
  char buf[64];
  for (std::int64_t r = 0; r < a.rows; ++r)
    for (auto k = a.row_ptr[r]; k < a.row_ptr[r + 1]; ++k) {
      std::snprintf(buf, sizeof buf, "%lld %d %.9g\n", static_cast<long long>(r + 1), a.col_idx[k] + 1, static_cast<double>(a.values[k]));
      os << buf;
    }
  std::string s = os.str();
  if (!gzip) return s;
  std::string out;
  // One deflate call in gzip mode (windowBits 15 + 16) into a buffer of deflateBound's size.
  z_stream zs{};
  if (deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) throw IoError("zlib init failed");
  out.resize(deflateBound(&zs, static_cast<uLong>(s.size())) + 64);
  zs.next_in = reinterpret_cast<Bytef*>(s.data());
  zs.avail_in = static_cast<uInt>(s.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&zs, Z_FINISH);
  const auto produced = zs.total_out;
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) throw IoError("zlib compression failed");
  out.resize(produced);
  return out;
}

void write_matrix_market(const std::string& path, const Csr& a) {
  std::string bytes;
  try {
    bytes = matrix_market_bytes(a, ends_with(path, ".gz"));
  } catch (const IoError& e) {
    throw IoError(std::string(e.what()) + " for '" + path + "'");
  }
  write_file_atomic(path, bytes);
}

}  // namespace spartan::sdnn
