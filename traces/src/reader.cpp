// TraceReader: maps a .sptrace (safetensors) file and validates the whole header before any use.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <set>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_map>

#include "spartan/common/error.h"
#include "spartan/trace/keys.h"
#include "spartan/trace/sptrace.h"

namespace spartan::trace {

namespace {
using json = nlohmann::json;

constexpr std::uint64_t kLenBytes = 8;

// Owns a read-only private mapping of a whole file.
struct Mapping {
  const std::uint8_t* base = nullptr;
  std::uint64_t size = 0;
  ~Mapping() {
    if (base) ::munmap(const_cast<std::uint8_t*>(base), size);
  }
};

void map_file(const std::string& path, Mapping* m) {
  // Refused before the open: opening a FIFO for reading blocks until a writer appears. (O_NONBLOCK on the
  // open would not block, but it also makes the open of a regular file under a write lease fail with EAGAIN
  // instead of waiting.) The fstat below checks the file actually opened.
  struct stat pre {};
  if (::stat(path.c_str(), &pre) == 0 && !S_ISREG(pre.st_mode)) throw FormatError(path, "", 0, "not a regular file");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw IoError(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw IoError(path + ": cannot stat: " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw FormatError(path, "", 0, "not a regular file");
  }
  m->size = static_cast<std::uint64_t>(st.st_size);
  if (m->size < kLenBytes) {
    ::close(fd);
    throw FormatError(path, "", m->size,
                      "file is " + std::to_string(m->size) + " bytes, shorter than the 8-byte header length");
  }
  void* p = ::mmap(nullptr, m->size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int err = errno;
  ::close(fd);
  if (p == MAP_FAILED) throw IoError(path + ": cannot mmap: " + std::strerror(err));
  m->base = static_cast<const std::uint8_t*>(p);
}

// Offset (in the file) of the first occurrence of the JSON-encoded name inside the header text, so
// that header errors point near the offending entry; the header start if not found verbatim.
std::uint64_t name_offset(const std::string& header, const std::string& name) {
  std::string quoted;
  try {
    quoted = json(name).dump();
  } catch (const json::exception&) {
    return kLenBytes;
  }
  const std::size_t pos = header.find(quoted);
  return kLenBytes + (pos == std::string::npos ? 0 : pos);
}

// SAX handler that records the first key repeated inside one JSON object; builds nothing else.
struct DuplicateKeyFinder : nlohmann::json_sax<json> {
  std::vector<std::set<std::string>> open;  // key sets of the objects being parsed (innermost last)
  std::string duplicate;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    open.emplace_back();
    return true;
  }
  bool key(string_t& k) override {
    if (!open.back().insert(k).second && duplicate.empty()) duplicate = k;
    return true;
  }
  bool end_object() override {
    open.pop_back();
    return true;
  }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) override {
    error_at = position;
    error = ex.what();
    return false;  // stop parsing
  }
  std::size_t error_at = 0;
  std::string error;
};

bool json_u64(const json& v, std::uint64_t* out) {
  if (v.is_number_unsigned()) {
    *out = v.get<std::uint64_t>();
    return true;
  }
  if (v.is_number_integer()) {
    const std::int64_t s = v.get<std::int64_t>();
    if (s < 0) return false;
    *out = static_cast<std::uint64_t>(s);
    return true;
  }
  return false;
}
}  // namespace

struct TraceReader::Impl {
  std::string path;
  Mapping map;
  std::uint64_t data_start = 0;  // file offset of the data section
  std::map<std::string, std::string> metadata;
  std::vector<TensorInfo> tensors;
  std::unordered_map<std::string, std::size_t> index;

  void parse();
  [[noreturn]] void fail(const std::string& field, std::uint64_t offset, const std::string& what) const {
    throw FormatError(path, field, offset, what);
  }
};

void TraceReader::Impl::parse() {
  const std::uint8_t* b = map.base;
  std::uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<std::uint64_t>(b[i]) << (8 * i);
  if (n > map.size - kLenBytes)
    fail("header", 0,
         "header length " + std::to_string(n) + " exceeds the " + std::to_string(map.size - kLenBytes) +
             " bytes after the length field (truncated file?)");
  if (n == 0) fail("header", kLenBytes, "empty JSON header");
  // (Before parsing: the DOM built from a header costs ~27x its size, and a bad_alloc while nlohmann destroyed a
  // partial DOM terminated the process, review finding 106.)
  if (n > kMaxHeaderBytes)
    fail("header", 0,
         "header length " + std::to_string(n) + " exceeds the " + std::to_string(kMaxHeaderBytes) + "-byte limit");
  data_start = kLenBytes + n;
  const std::string header(reinterpret_cast<const char*>(b + kLenBytes), static_cast<std::size_t>(n));
  if (header[0] != '{') fail("header", kLenBytes, "JSON header does not start with '{'");
  // nlohmann's lexer takes a NUL byte for the end of input, so "{...}\0\0" would parse; JSON text never
  // contains a raw NUL and the format pads with spaces (docs/trace-format.md, section 1), as the Python
  // reader (json.loads) requires.
  if (const std::size_t nul = header.find('\0'); nul != std::string::npos)
    fail("header", kLenBytes + nul, "invalid JSON: NUL byte in the header (padding must be spaces, 0x20)");

  // Parse in two linear passes: a SAX pass that rejects duplicate keys in any object (nlohmann would
  // silently keep the last one; its callback-parser API is quadratic in the object size), then the DOM.
  DuplicateKeyFinder dup;
  json doc;
  try {
    if (!json::sax_parse(header.begin(), header.end(), &dup)) {
      std::string msg = dup.error;
      if (msg.size() > 160) msg = msg.substr(0, 160) + "...";
      fail("header", kLenBytes + (dup.error_at > 0 ? dup.error_at - 1 : 0), "invalid JSON: " + msg);
    }
    if (dup.duplicate.empty()) doc = json::parse(header.begin(), header.end());
  } catch (const json::parse_error& e) {
    const std::uint64_t at = kLenBytes + (e.byte > 0 ? e.byte - 1 : 0);
    std::string msg = e.what();
    if (msg.size() > 160) msg = msg.substr(0, 160) + "...";
    fail("header", at, "invalid JSON: " + msg);
  } catch (const json::exception& e) {
    fail("header", kLenBytes, std::string("invalid JSON: ") + e.what());
  }
  const std::string& duplicate = dup.duplicate;
  if (!duplicate.empty()) fail(duplicate, name_offset(header, duplicate), "duplicate JSON key");
  if (!doc.is_object()) fail("header", kLenBytes, "JSON header is not an object");

  const std::uint64_t data_size = map.size - data_start;
  for (const auto& item : doc.items()) {
    const std::string& name = item.key();  // not a structured binding: lambdas below capture it
    const json& entry = item.value();
    // Only computed on error: a find() per tensor would make big headers quadratic.
    const auto at = [&] { return name_offset(header, name); };
    if (name == "__metadata__") {
      if (!entry.is_object()) fail(name, at(), "__metadata__ must be an object of strings");
      for (const auto& [k, v] : entry.items()) {
        if (!v.is_string()) fail("__metadata__." + k, name_offset(header, k), "metadata value is not a string");
        metadata[k] = v.get<std::string>();
      }
      // Section 6: a reader refuses a format version it does not know, whoever opens the file (a plain
      // safetensors file without the key is a valid container).
      if (const auto fv = metadata.find(keys::kFormatVersion); fv != metadata.end() && fv->second != kFormatVersion)
        fail(std::string("__metadata__.") + keys::kFormatVersion, name_offset(header, keys::kFormatVersion),
             "unsupported format version '" + fv->second.substr(0, 16) + "' (this reader knows " + kFormatVersion + ")");
      continue;
    }
    if (name.empty()) fail("header", at(), "empty tensor name");
    if (!entry.is_object()) fail(name, at(), "tensor entry is not an object");
    for (const auto& [k, v] : entry.items()) {
      (void)v;
      if (k != "dtype" && k != "shape" && k != "data_offsets") fail(name, at(), "unknown field '" + k + "'");
    }
    TensorInfo t;
    t.name = name;
    const auto d = entry.find("dtype");
    if (d == entry.end() || !d->is_string()) fail(name, at(), "missing or non-string 'dtype'");
    const auto dt = parse_dtype(d->get<std::string>());
    if (!dt) fail(name, at(), "unknown dtype '" + d->get<std::string>().substr(0, 32) + "'");
    t.dtype = *dt;
    const auto s = entry.find("shape");
    if (s == entry.end() || !s->is_array()) fail(name, at(), "missing or non-array 'shape'");
    // Overflow is judged on the product of the non-zero dimensions, so that it does not depend on where a 0
    // stands ([2^62,2^62,0] and [0,2^62,2^62] alike), as in read_sptrace.py.
    std::uint64_t bytes = dtype_size(t.dtype);
    bool overflow = false, zero = false;
    for (const json& dim : *s) {
      std::uint64_t u = 0;
      if (!json_u64(dim, &u) || u > static_cast<std::uint64_t>(INT64_MAX))
        fail(name, at(), std::string("shape entries must be non-negative integers, got ") +
                             (dim.is_primitive() ? dim.dump().substr(0, 40) : dim.type_name()));
      t.shape.push_back(static_cast<std::int64_t>(u));
      if (u == 0) zero = true;
      else if (!overflow && __builtin_mul_overflow(bytes, u, &bytes)) overflow = true;
    }
    if (overflow) fail(name, at(), "shape product x dtype size overflows 64 bits");
    if (zero) bytes = 0;
    const auto o = entry.find("data_offsets");
    if (o == entry.end() || !o->is_array() || o->size() != 2) fail(name, at(), "'data_offsets' must be [begin, end]");
    if (!json_u64((*o)[0], &t.begin) || !json_u64((*o)[1], &t.end))
      fail(name, at(), "'data_offsets' must be non-negative integers");
    if (t.begin > t.end)
      fail(name, at(), "data_offsets begin " + std::to_string(t.begin) + " > end " + std::to_string(t.end));
    if (t.end > data_size)
      fail(name, data_start + std::min(t.begin, data_size),
           "data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) + ") outside the " +
               std::to_string(data_size) + "-byte data section");
    if (t.end - t.begin != bytes)
      fail(name, data_start + t.begin,
           "byte range of " + std::to_string(t.end - t.begin) + " does not match shape x " + dtype_name(t.dtype) +
               " = " + std::to_string(bytes) + " bytes");
    tensors.push_back(std::move(t));
  }

  // Ranges must tile [0, data_size) exactly: sorted by begin, each starts where the previous ended.
  std::sort(tensors.begin(), tensors.end(), [](const TensorInfo& a, const TensorInfo& c) {
    if (a.begin != c.begin) return a.begin < c.begin;
    if (a.end != c.end) return a.end < c.end;
    return a.name < c.name;
  });
  std::uint64_t cursor = 0;
  const TensorInfo* prev = nullptr;
  for (const TensorInfo& t : tensors) {
    if (t.begin < cursor)
      fail(t.name, data_start + t.begin,
           "byte range [" + std::to_string(t.begin) + ", " + std::to_string(t.end) + ") overlaps tensor '" +
               (prev ? prev->name : std::string()) + "'");
    if (t.begin > cursor)
      fail(t.name, data_start + cursor,
           "hole of " + std::to_string(t.begin - cursor) + " bytes in the data section before this tensor");
    cursor = t.end;
    prev = &t;
  }
  if (cursor != data_size)
    fail(prev ? prev->name : "data", data_start + cursor,
         std::to_string(data_size - cursor) + " trailing bytes after the last tensor");
  for (std::size_t i = 0; i < tensors.size(); ++i) index.emplace(tensors[i].name, i);
}

TraceReader::TraceReader(const std::string& path) : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  map_file(path, &impl_->map);
  impl_->parse();
}

TraceReader::~TraceReader() = default;

const std::string& TraceReader::path() const { return impl_->path; }
const std::map<std::string, std::string>& TraceReader::metadata() const { return impl_->metadata; }
const std::vector<TensorInfo>& TraceReader::tensors() const { return impl_->tensors; }

const TensorInfo* TraceReader::find(const std::string& name) const {
  const auto it = impl_->index.find(name);
  return it == impl_->index.end() ? nullptr : &impl_->tensors[it->second];
}

TensorView TraceReader::view(const std::string& name) const {
  const TensorInfo* t = find(name);
  if (!t) throw InputError(impl_->path + ": no tensor named '" + name + "'");
  TensorView v;
  v.info = t;
  v.data = impl_->map.base + impl_->data_start + t->begin;
  v.bytes = static_cast<std::size_t>(t->end - t->begin);
  return v;
}

namespace {
template <class T>
T load(const std::uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);  // unaligned-safe; host is little-endian (checked at build time)
  return v;
}
}  // namespace

std::vector<float> TraceReader::to_f32(const std::string& name) const {
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the trace reader assumes a little-endian host");
  const TensorView v = view(name);
  const std::size_t n = v.bytes / dtype_size(v.info->dtype);
  std::vector<float> out(n);
  const std::uint8_t* p = v.data;
  switch (v.info->dtype) {
    case DType::F32:
      if (n) std::memcpy(out.data(), p, v.bytes);
      break;
    case DType::F16:
      for (std::size_t i = 0; i < n; ++i) out[i] = f16_to_f32(load<std::uint16_t>(p + 2 * i));
      break;
    case DType::BF16:
      for (std::size_t i = 0; i < n; ++i) out[i] = bf16_to_f32(load<std::uint16_t>(p + 2 * i));
      break;
    case DType::F64:
      for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(load<double>(p + 8 * i));
      break;
    case DType::U8:
      for (std::size_t i = 0; i < n; ++i) out[i] = p[i];
      break;
    case DType::BOOL:
      for (std::size_t i = 0; i < n; ++i) out[i] = p[i] ? 1.0f : 0.0f;
      break;
    case DType::I8:
      for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<std::int8_t>(p[i]);
      break;
    case DType::I32:
      for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(load<std::int32_t>(p + 4 * i));
      break;
    case DType::U32:
      for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(load<std::uint32_t>(p + 4 * i));
      break;
    case DType::I64:
      for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(load<std::int64_t>(p + 8 * i));
      break;
    case DType::U64:
      for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<float>(load<std::uint64_t>(p + 8 * i));
      break;
  }
  return out;
}

std::vector<TraceKey> TraceReader::keys() const {
  std::vector<TraceKey> out;
  for (const TensorInfo& t : impl_->tensors)
    if (auto k = parse_key(t.name)) out.push_back(std::move(*k));
  std::sort(out.begin(), out.end(), [](const TraceKey& a, const TraceKey& b) {
    if (a.iteration != b.iteration) return a.iteration < b.iteration;
    if (a.layer != b.layer) return a.layer < b.layer;
    return a.kind < b.kind;
  });
  return out;
}

}  // namespace spartan::trace
