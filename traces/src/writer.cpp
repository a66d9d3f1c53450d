// TraceWriter: tensor bytes stream into an unlinked scratch file beside the target; finish() writes
// [u64 header length][JSON header][data] through AtomicFile (temp + rename).
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <unistd.h>

#include "spartan/common/atomic_file.h"
#include "spartan/common/error.h"
#include "spartan/trace/sptrace.h"

namespace spartan::trace {

struct TraceWriter::Impl {
  std::string path;
  std::FILE* data = nullptr;  // scratch file, already unlinked: vanishes with the process
  std::uint64_t data_bytes = 0;
  std::vector<TensorInfo> tensors;
  std::set<std::string> names;
  std::map<std::string, std::string> metadata;
  bool finished = false;
};

TraceWriter::TraceWriter(const std::string& path) : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  // A name nobody can predict, created exclusively (mkostemp: O_CREAT | O_EXCL, so a file or symbolic link already
  // there is never followed or truncated; review finding 106: a link planted at the old name
  // <path>.data.tmp.<pid> had the tensor bytes written over its target).
  std::string scratch = path + ".data.tmp.XXXXXX";
  const int fd = ::mkostemp(scratch.data(), O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    throw IoError(path + ": cannot create scratch file " + scratch + ": " + std::strerror(err));
  }
  impl_->data = ::fdopen(fd, "w+b");
  if (!impl_->data) {
    const int err = errno;
    ::close(fd);
    std::remove(scratch.c_str());
    throw IoError(path + ": cannot open scratch file " + scratch + ": " + std::strerror(err));
  }
  std::remove(scratch.c_str());  // unlinked now; the open handle keeps the storage until fclose
}

TraceWriter::~TraceWriter() {
  if (impl_ && impl_->data) std::fclose(impl_->data);
}

void TraceWriter::set_metadata(const std::string& key, const std::string& value) {
  if (impl_->finished) throw InputError(impl_->path + ": set_metadata after finish()");
  impl_->metadata[key] = value;
}

void TraceWriter::add_tensor(const std::string& name, DType dtype, const std::vector<std::int64_t>& shape,
                             const void* data, std::size_t bytes) {
  Impl& w = *impl_;
  if (w.finished) throw InputError(w.path + ": add_tensor after finish()");
  if (name.empty() || name == "__metadata__")
    throw InputError(w.path + ": invalid tensor name '" + name + "'");
  if (w.names.count(name)) throw InputError(w.path + ": duplicate tensor name '" + name + "'");
  if (dtype_size(dtype) == 0) throw InputError(w.path + ": " + name + ": invalid dtype");
  std::uint64_t expect = dtype_size(dtype);
  bool zero = false;
  for (std::int64_t d : shape) {
    if (d < 0) throw InputError(w.path + ": " + name + ": negative dimension " + std::to_string(d));
    if (d == 0) zero = true;  // the reader judges overflow on the non-zero dimensions
    else if (__builtin_mul_overflow(expect, static_cast<std::uint64_t>(d), &expect))
      throw InputError(w.path + ": " + name + ": shape too large");
  }
  if (zero) expect = 0;
  if (expect != bytes)
    throw InputError(w.path + ": " + name + ": " + std::to_string(bytes) + " bytes given, shape x " +
                     dtype_name(dtype) + " needs " + std::to_string(expect));
  if (bytes > 0 && !data) throw InputError(w.path + ": " + name + ": null data");
  if (bytes > 0 && std::fwrite(data, 1, bytes, w.data) != bytes)
    throw IoError(w.path + ": writing tensor " + name + " failed: " + std::strerror(errno));
  TensorInfo t;
  t.name = name;
  t.dtype = dtype;
  t.shape = shape;
  t.begin = w.data_bytes;
  t.end = w.data_bytes + bytes;
  w.data_bytes = t.end;
  w.tensors.push_back(std::move(t));
  w.names.insert(name);
}

void TraceWriter::finish() {
  Impl& w = *impl_;
  if (w.finished) throw InputError(w.path + ": finish() called twice");
  nlohmann::json header = nlohmann::json::object();
  if (!w.metadata.empty()) {
    nlohmann::json md = nlohmann::json::object();
    for (const auto& [k, v] : w.metadata) md[k] = v;
    header["__metadata__"] = std::move(md);
  }
  for (const TensorInfo& t : w.tensors) {
    header[t.name] = {{"dtype", dtype_name(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {t.begin, t.end}}};
  }
  // Invalid UTF-8 in a name or metadata value would make dump() throw: report it as bad input.
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception& e) {
    throw InputError(w.path + ": tensor name or metadata is not valid UTF-8: " + e.what());
  }
  // Pad with spaces so the data section starts 8-byte aligned (as the safetensors writer does).
  text.append((8 - text.size() % 8) % 8, ' ');
  if (text.size() > kMaxHeaderBytes)
    throw InputError(w.path + ": the header would take " + std::to_string(text.size()) + " bytes, more than the " +
                     std::to_string(kMaxHeaderBytes) +
                     " readers accept (docs/trace-format.md): write fewer tensors or less metadata");
  unsigned char len[8];
  std::uint64_t n = text.size();
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(n >> (8 * i));

  if (std::fflush(w.data) != 0) throw IoError(w.path + ": flushing scratch data failed: " + std::strerror(errno));
  AtomicFile out(w.path);
  out.write(len, sizeof len);
  out.write(text);
  std::rewind(w.data);
  std::vector<char> buf(1 << 20);
  std::uint64_t left = w.data_bytes;
  while (left > 0) {
    const std::size_t chunk = static_cast<std::size_t>(std::min<std::uint64_t>(left, buf.size()));
    if (std::fread(buf.data(), 1, chunk, w.data) != chunk)
      throw IoError(w.path + ": reading scratch data back failed");
    out.write(buf.data(), chunk);
    left -= chunk;
  }
  out.commit();
  std::fclose(w.data);
  w.data = nullptr;
  w.finished = true;
}

}  // namespace spartan::trace
