// Structured metadata (docs/trace-format.md, section 4): JSON text <-> C++ structs, with validation.
#include "spartan/trace/metadata.h"

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <nlohmann/json.hpp>

#include "spartan/common/error.h"
#include "spartan/trace/keys.h"
#include "spartan/trace/sptrace.h"

namespace spartan::trace {

namespace {
using json = nlohmann::json;

// Error context: file, metadata key and entry index.
struct Ctx {
  const std::string& file;
  std::string key;
  std::size_t entry = 0;
  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw FormatError(file, "__metadata__." + key + "[" + std::to_string(entry) + "]" +
                                (field.empty() ? "" : "." + field),
                      entry, what, "entry");
  }
};

json parse_array(const std::string& text, const Ctx& c) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw FormatError(c.file, "__metadata__." + c.key, e.byte, "value is not valid JSON", "character");
  } catch (const json::exception& e) {  // e.g. out_of_range: a number literal beyond double (fuzz finding)
    throw FormatError(c.file, "__metadata__." + c.key, 0, std::string("value is not valid JSON: ") + e.what(),
                      "character");
  }
  if (!j.is_array()) throw FormatError(c.file, "__metadata__." + c.key, 0, "value must be a JSON array", "character");
  return j;
}

const json& field(const json& o, const char* name, const Ctx& c, const std::string& prefix = "") {
  if (!o.is_object()) c.fail(prefix, "must be an object");
  const auto it = o.find(name);
  if (it == o.end()) c.fail(prefix + name, "missing");
  return *it;
}

std::int64_t get_int(const json& o, const char* name, const Ctx& c, std::int64_t min = 0,
                     const std::string& prefix = "") {
  const json& v = field(o, name, c, prefix);
  if (!v.is_number_integer()) c.fail(prefix + name, std::string("must be an integer, got ") +
                                                   (v.is_primitive() ? v.dump().substr(0, 40) : v.type_name()));
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX))
    c.fail(prefix + name, "too large");
  const std::int64_t x = v.get<std::int64_t>();
  if (x < min) c.fail(prefix + name, "must be >= " + std::to_string(min) + ", got " + std::to_string(x));
  return x;
}

std::string get_str(const json& o, const char* name, const Ctx& c) {
  const json& v = field(o, name, c);
  if (!v.is_string()) c.fail(name, "must be a string");
  return v.get<std::string>();
}

double to_ms(const json& v, const Ctx& c, const std::string& name) {
  if (!v.is_number()) c.fail(name, "must be a number (milliseconds)");
  const double x = v.get<double>();
  // 1e9 ms (11.6 days) for one GEMM is a unit mistake, and larger values overflow the replay's ratios.
  // 0 is allowed: a writer may record 0 for a pass it did not time.
  if (!std::isfinite(x) || x < 0 || x > 1e9) c.fail(name, "must be a finite non-negative number of milliseconds, at most 1e9");
  return x;
}

std::optional<double> opt_ms(const json& o, const char* name, const Ctx& c, const std::string& prefix) {
  const auto it = o.find(name);
  if (it == o.end() || it->is_null()) return std::nullopt;
  return to_ms(*it, c, prefix + name);
}

std::vector<std::int64_t> get_shape(const json& o, const char* name, const Ctx& c) {
  const json& v = field(o, name, c);
  if (!v.is_array() || v.empty()) c.fail(name, "must be a non-empty array of positive integers");
  std::vector<std::int64_t> s;
  for (const json& d : v) {
    if (!d.is_number_integer() || d.get<std::int64_t>() <= 0 ||
        (d.is_number_unsigned() && d.get<std::uint64_t>() > static_cast<std::uint64_t>(INT64_MAX)))
      c.fail(name, "must be a non-empty array of positive integers");
    s.push_back(d.get<std::int64_t>());
  }
  return s;
}

std::vector<double> get_fractions(const json& o, const char* name, const Ctx& c) {
  const json& v = field(o, name, c);
  if (!v.is_array()) c.fail(name, "must be an array of numbers in [0, 1]");
  std::vector<double> out;
  for (const json& d : v) {
    if (!d.is_number() || !(d.get<double>() >= 0.0 && d.get<double>() <= 1.0))
      c.fail(name, "must be an array of numbers in [0, 1]");
    out.push_back(d.get<double>());
  }
  return out;
}

json gemm_json(const GemmShape& g) { return {{"M", g.M}, {"N", g.N}, {"K", g.K}}; }

json time_json(const GemmTime& t) {
  json j = {{"dense_ms", t.dense_ms}};
  j["tile_sparse_ms"] = t.tile_sparse_ms ? json(*t.tile_sparse_ms) : json(nullptr);
  if (t.compact_ms) j["compact_ms"] = *t.compact_ms;
  if (t.operand_density) j["operand_density"] = *t.operand_density;
  if (!t.path.empty()) j["path"] = t.path;
  return j;
}

bool mul_ok(std::int64_t a, std::int64_t b, std::int64_t* out) { return !__builtin_mul_overflow(a, b, out); }
}  // namespace

Im2colGeometry Im2colGeometry::conv(std::int64_t C, std::int64_t H, std::int64_t W, std::int64_t KH,
                                    std::int64_t KW, std::int64_t stride, std::int64_t pad) {
  if (C <= 0 || H <= 0 || W <= 0 || KH <= 0 || KW <= 0 || stride <= 0 || pad < 0)
    throw InputError("im2col: C, H, W, KH, KW and stride must be positive, pad non-negative");
  if (H + 2 * pad < KH || W + 2 * pad < KW) throw InputError("im2col: kernel larger than the padded input");
  Im2colGeometry g;
  g.C = C, g.H = H, g.W = W, g.KH = KH, g.KW = KW, g.stride = stride, g.pad = pad;
  g.OH = (H + 2 * pad - KH) / stride + 1;
  g.OW = (W + 2 * pad - KW) / stride + 1;
  return g;
}

Im2colGeometry Im2colGeometry::fc(std::int64_t in_features) { return conv(in_features, 1, 1, 1, 1, 1, 0); }

void fill_gemm_shapes(LayerInfo& l, std::int64_t batch, std::int64_t out_channels) {
  const Im2colGeometry& g = l.im2col;
  const std::int64_t pixels = batch * g.OH * g.OW, patch = g.C * g.KH * g.KW;
  l.fwd = {pixels, out_channels, patch};
  l.bwd_data = {pixels, patch, out_channels};
  l.bwd_weight = {patch, out_channels, pixels};
}

LayerInfo make_conv_layer(std::int64_t index, const std::string& name, std::int64_t batch, std::int64_t C,
                          std::int64_t H, std::int64_t W, std::int64_t Cout, std::int64_t KH, std::int64_t KW,
                          std::int64_t stride, std::int64_t pad, bool relu_after) {
  if (batch <= 0 || Cout <= 0) throw InputError("conv layer " + name + ": batch and Cout must be positive");
  LayerInfo l;
  l.index = index, l.name = name, l.type = "conv", l.relu_after = relu_after;
  l.im2col = Im2colGeometry::conv(C, H, W, KH, KW, stride, pad);
  l.input = {batch, C, H, W};
  l.output = {batch, Cout, l.im2col.OH, l.im2col.OW};
  fill_gemm_shapes(l, batch, Cout);
  return l;
}

LayerInfo make_fc_layer(std::int64_t index, const std::string& name, std::int64_t batch, std::int64_t in,
                        std::int64_t out, bool relu_after) {
  if (batch <= 0 || out <= 0) throw InputError("fc layer " + name + ": batch and out must be positive");
  LayerInfo l;
  l.index = index, l.name = name, l.type = "fc", l.relu_after = relu_after;
  l.im2col = Im2colGeometry::fc(in);
  l.input = {batch, in};
  l.output = {batch, out};
  fill_gemm_shapes(l, batch, out);
  return l;
}

std::string layers_to_json(const std::vector<LayerInfo>& layers) {
  json a = json::array();
  for (const LayerInfo& l : layers) {
    const Im2colGeometry& g = l.im2col;
    a.push_back({{"index", l.index},
                 {"name", l.name},
                 {"type", l.type},
                 {"relu_after", l.relu_after},
                 {"input", l.input},
                 {"output", l.output},
                 {"im2col",
                  {{"C", g.C}, {"H", g.H}, {"W", g.W}, {"KH", g.KH}, {"KW", g.KW}, {"stride", g.stride},
                   {"pad", g.pad}, {"OH", g.OH}, {"OW", g.OW}}},
                 {"gemm", {{"fwd", gemm_json(l.fwd)}, {"bwd_data", gemm_json(l.bwd_data)},
                           {"bwd_weight", gemm_json(l.bwd_weight)}}}});
  }
  return a.dump();
}

std::string gemm_times_to_json(const std::vector<GemmTimes>& times) {
  json a = json::array();
  for (const GemmTimes& t : times)
    a.push_back({{"iteration", t.iteration},
                 {"layer", t.layer},
                 {"device", t.device},
                 {"timer", t.timer},
                 {"fwd", time_json(t.fwd)},
                 {"bwd_data", time_json(t.bwd_data)},
                 {"bwd_weight", time_json(t.bwd_weight)}});
  return a.dump();
}

std::string sparsity_to_json(const std::vector<LayerSparsity>& sparsity) {
  json a = json::array();
  for (const LayerSparsity& s : sparsity) {
    json o = {{"layer", s.layer}, {"name", s.name}, {"iterations", s.iterations}, {"act_density", s.act_density}};
    if (!s.dz_mask_density.empty()) o["dz_mask_density"] = s.dz_mask_density;
    a.push_back(std::move(o));
  }
  return a.dump();
}

std::vector<LayerInfo> layers_from_json(const std::string& text, const std::string& file) {
  Ctx c{file, keys::kLayers};
  const json a = parse_array(text, c);
  std::vector<LayerInfo> out;
  for (const json& o : a) {
    LayerInfo l;
    l.index = get_int(o, "index", c);
    l.name = get_str(o, "name", c);
    l.type = get_str(o, "type", c);
    const json& r = field(o, "relu_after", c);
    if (!r.is_boolean()) c.fail("relu_after", "must be true or false");
    l.relu_after = r.get<bool>();
    l.input = get_shape(o, "input", c);
    l.output = get_shape(o, "output", c);
    const json& g = field(o, "im2col", c);
    Im2colGeometry& m = l.im2col;
    m.C = get_int(g, "C", c, 1, "im2col."), m.H = get_int(g, "H", c, 1, "im2col."), m.W = get_int(g, "W", c, 1, "im2col.");
    m.KH = get_int(g, "KH", c, 1, "im2col."), m.KW = get_int(g, "KW", c, 1, "im2col.");
    m.stride = get_int(g, "stride", c, 1, "im2col."), m.pad = get_int(g, "pad", c, 0, "im2col.");
    m.OH = get_int(g, "OH", c, 1, "im2col."), m.OW = get_int(g, "OW", c, 1, "im2col.");
    const json& gm = field(o, "gemm", c);
    for (auto [name, dst] : {std::pair<const char*, GemmShape*>{"fwd", &l.fwd}, {"bwd_data", &l.bwd_data},
                             {"bwd_weight", &l.bwd_weight}}) {
      const json& s = field(gm, name, c, "gemm.");
      const std::string p = std::string("gemm.") + name + ".";
      *dst = {get_int(s, "M", c, 1, p), get_int(s, "N", c, 1, p), get_int(s, "K", c, 1, p)};
    }
    // Consistency with the geometry (known types only; other writers' types are passed through).
    if (l.type == "conv" || l.type == "fc") {
      // fc: the equivalent 1x1 geometry of section 4.1 (C = input features, everything else 1, pad 0).
      if (l.type == "fc" && (m.H != 1 || m.W != 1 || m.KH != 1 || m.KW != 1 || m.stride != 1 || m.pad != 0 ||
                             m.OH != 1 || m.OW != 1))
        c.fail("im2col", "an fc layer must have H, W, KH, KW, stride, OH, OW = 1 and pad = 0");
      // H + 2*pad and W + 2*pad overflow-checked (pad up to INT64_MAX would wrap).
      std::int64_t hp = 0, wp = 0;
      if (!mul_ok(m.pad, 2, &hp) || __builtin_add_overflow(m.H, hp, &hp) || !mul_ok(m.pad, 2, &wp) ||
          __builtin_add_overflow(m.W, wp, &wp))
        c.fail("im2col", "H + 2*pad or W + 2*pad overflows");
      if (hp < m.KH || wp < m.KW || m.OH != (hp - m.KH) / m.stride + 1 || m.OW != (wp - m.KW) / m.stride + 1)
        c.fail("im2col", "OH/OW do not follow from H, W, KH, KW, stride and pad");
      const std::int64_t batch = l.input[0];
      std::int64_t pixels = 0, patch = 0;
      if (!mul_ok(batch, m.OH, &pixels) || !mul_ok(pixels, m.OW, &pixels) || !mul_ok(m.C, m.KH, &patch) ||
          !mul_ok(patch, m.KW, &patch))
        c.fail("im2col", "GEMM dimensions overflow");
      const std::int64_t cout = l.output.size() >= 2 ? l.output[1] : 0;
      LayerInfo expect = l;
      fill_gemm_shapes(expect, batch, cout);
      if (!(expect.fwd == l.fwd) || !(expect.bwd_data == l.bwd_data) || !(expect.bwd_weight == l.bwd_weight))
        c.fail("gemm", "M/N/K do not match im2col geometry, batch " + std::to_string(batch) + " and " +
                           std::to_string(cout) + " output channels");
      const bool conv = l.type == "conv";
      const std::vector<std::int64_t> in = conv ? std::vector<std::int64_t>{batch, m.C, m.H, m.W}
                                                : std::vector<std::int64_t>{batch, m.C};
      const std::vector<std::int64_t> outs = conv ? std::vector<std::int64_t>{batch, cout, m.OH, m.OW}
                                                  : std::vector<std::int64_t>{batch, cout};
      if (l.input != in) c.fail("input", "does not match the im2col geometry");
      if (l.output != outs) c.fail("output", "does not match the im2col geometry");
    }
    out.push_back(std::move(l));
    ++c.entry;
  }
  return out;
}

std::vector<GemmTimes> gemm_times_from_json(const std::string& text, const std::string& file) {
  Ctx c{file, keys::kGemmTimes};
  const json a = parse_array(text, c);
  std::vector<GemmTimes> out;
  for (const json& o : a) {
    GemmTimes t;
    t.iteration = get_int(o, "iteration", c);
    t.layer = get_int(o, "layer", c);
    t.device = get_str(o, "device", c);
    if (t.device.empty()) c.fail("device", "must not be empty");
    t.timer = get_str(o, "timer", c);
    if (t.timer != "cuda-events" && t.timer != "steady_clock" && t.timer != "none")
      c.fail("timer", "must be \"cuda-events\", \"steady_clock\" or \"none\" (not measured), got \"" +
                          t.timer.substr(0, 32) + "\"");
    for (auto [name, dst] : {std::pair<const char*, GemmTime*>{"fwd", &t.fwd}, {"bwd_data", &t.bwd_data},
                             {"bwd_weight", &t.bwd_weight}}) {
      const json& g = field(o, name, c);
      const std::string p = std::string(name) + ".";
      dst->dense_ms = to_ms(field(g, "dense_ms", c, p), c, p + "dense_ms");
      dst->tile_sparse_ms = opt_ms(g, "tile_sparse_ms", c, p);
      dst->compact_ms = opt_ms(g, "compact_ms", c, p);
      if (const auto d = g.find("operand_density"); d != g.end() && !d->is_null()) {
        if (!d->is_number() || !(d->get<double>() >= 0.0 && d->get<double>() <= 1.0))
          c.fail(p + "operand_density", "must be a number in [0, 1]");
        dst->operand_density = d->get<double>();
      }
      if (const auto q = g.find("path"); q != g.end() && !q->is_null()) {
        if (!q->is_string() || (q->get<std::string>() != "tiles" && q->get<std::string>() != "one-sgemm"))
          c.fail(p + "path", "must be \"tiles\" or \"one-sgemm\"");
        dst->path = q->get<std::string>();
      }
    }
    out.push_back(std::move(t));
    ++c.entry;
  }
  return out;
}

std::vector<LayerSparsity> sparsity_from_json(const std::string& text, const std::string& file) {
  Ctx c{file, keys::kSparsity};
  const json a = parse_array(text, c);
  std::vector<LayerSparsity> out;
  for (const json& o : a) {
    LayerSparsity s;
    s.layer = get_int(o, "layer", c);
    s.name = get_str(o, "name", c);
    const json& its = field(o, "iterations", c);
    if (!its.is_array()) c.fail("iterations", "must be an array of non-negative integers");
    for (const json& i : its) {
      if (!i.is_number_integer() || i.get<std::int64_t>() < 0)
        c.fail("iterations", "must be an array of non-negative integers");
      if (!s.iterations.empty() && i.get<std::int64_t>() <= s.iterations.back())
        c.fail("iterations", "must increase strictly (" + std::to_string(s.iterations.back()) + " then " +
                                 std::to_string(i.get<std::int64_t>()) + ")");
      s.iterations.push_back(i.get<std::int64_t>());
    }
    s.act_density = get_fractions(o, "act_density", c);
    if (s.act_density.size() != s.iterations.size()) c.fail("act_density", "length differs from iterations");
    if (o.contains("dz_mask_density")) {
      s.dz_mask_density = get_fractions(o, "dz_mask_density", c);
      if (s.dz_mask_density.size() != s.iterations.size())
        c.fail("dz_mask_density", "length differs from iterations");
    }
    out.push_back(std::move(s));
    ++c.entry;
  }
  return out;
}

namespace {
const std::string* find_meta(const TraceReader& r, const char* key) {
  const auto it = r.metadata().find(key);
  return it == r.metadata().end() ? nullptr : &it->second;
}
}  // namespace

std::vector<LayerInfo> read_layers(const TraceReader& r) {
  const std::string* v = find_meta(r, keys::kLayers);
  return v ? layers_from_json(*v, r.path()) : std::vector<LayerInfo>{};
}
std::vector<GemmTimes> read_gemm_times(const TraceReader& r) {
  const std::string* v = find_meta(r, keys::kGemmTimes);
  return v ? gemm_times_from_json(*v, r.path()) : std::vector<GemmTimes>{};
}
std::vector<LayerSparsity> read_sparsity(const TraceReader& r) {
  const std::string* v = find_meta(r, keys::kSparsity);
  return v ? sparsity_from_json(*v, r.path()) : std::vector<LayerSparsity>{};
}

namespace {
[[noreturn]] void meta_fail(const TraceReader& r, const std::string& key, const std::string& what) {
  throw FormatError(r.path(), "__metadata__." + key, 0, what, "character");
}

// Digits only (at least one), value <= `max`, accumulated with overflow checks.
bool parse_digits(const std::string& digits, std::uint64_t max, std::uint64_t* out) {
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) return false;
  std::uint64_t x = 0;
  for (char ch : digits)
    if (__builtin_mul_overflow(x, std::uint64_t{10}, &x) || __builtin_add_overflow(x, std::uint64_t(ch - '0'), &x))
      return false;
  *out = x;
  return x <= max;
}

// A decimal integer as text (docs/trace-format.md, section 4): optional '-' when `allow_sign`, then digits,
// no spaces or other characters, in [INT64_MIN, INT64_MAX] (overflow-checked). Returns the value.
std::int64_t meta_int(const TraceReader& r, const char* key, const std::string& v, bool allow_sign,
                      std::int64_t min) {
  const bool neg = allow_sign && !v.empty() && v[0] == '-';
  std::uint64_t mag = 0;
  const std::uint64_t max = neg ? std::uint64_t{1} << 63 : static_cast<std::uint64_t>(INT64_MAX);
  const bool ok = parse_digits(v.substr(neg ? 1 : 0), max, &mag);
  // -2^63 is representable: negate in unsigned arithmetic, then convert (two's complement, C++20-defined and
  // what every C++17 compiler does).
  const std::int64_t x = !ok ? 0 : neg ? static_cast<std::int64_t>(~mag + 1) : static_cast<std::int64_t>(mag);
  if (!ok || x < min)
    meta_fail(r, key,
              std::string(min >= 1 ? "must be a positive" : allow_sign ? "must be a" : "must be a non-negative") +
                  " 64-bit decimal integer, got '" + v.substr(0, 24) + "'");
  return x;
}

// `seed`: a decimal integer in [-2^63, 2^64 - 1] (writers store an unsigned 64-bit seed; a leading '-' is
// accepted for other writers' signed seeds).
void meta_seed(const TraceReader& r, const std::string& v) {
  std::uint64_t mag = 0;
  if (!v.empty() && v[0] == '-') {
    (void)meta_int(r, keys::kSeed, v, true, INT64_MIN);
    return;
  }
  if (!parse_digits(v, UINT64_MAX, &mag))
    meta_fail(r, keys::kSeed,
              "must be a decimal integer in [-2^63, 2^64-1], got '" + v.substr(0, 24) + (v.size() > 24 ? "...'" : "'"));
}

// The keys that mark a file as an .sptrace (section 4; `writer` is generic and does not count).
constexpr const char* kSptraceKeys[] = {keys::kFormatVersion, keys::kModel,        keys::kDataset,
                                        keys::kDevice,        keys::kSeed,         keys::kBatch,
                                        keys::kCaptureEvery,  keys::kLayers,       keys::kGemmTimes,
                                        keys::kSparsity};
constexpr const char* kRequiredKeys[] = {keys::kFormatVersion, keys::kModel, keys::kDataset, keys::kDevice,
                                         keys::kSeed,          keys::kBatch, keys::kLayers};
}  // namespace

void check_metadata(const TraceReader& r) {
  // 1. Each key that is present: its own type and schema.
  if (const std::string* v = find_meta(r, keys::kFormatVersion); v && *v != kFormatVersion)
    throw FormatError(r.path(), std::string("__metadata__.") + keys::kFormatVersion, 0,
                      "unsupported format version '" + v->substr(0, 16) + "' (this reader knows " + kFormatVersion +
                          ")",
                      "character");
  for (const char* key : {keys::kModel, keys::kDataset, keys::kDevice})
    if (const std::string* v = find_meta(r, key); v && v->empty()) meta_fail(r, key, "must not be empty");
  if (const std::string* v = find_meta(r, keys::kSeed)) meta_seed(r, *v);
  std::int64_t batch = 0;  // `batch`: found by the reliability tests (issue 12)
  if (const std::string* v = find_meta(r, keys::kBatch)) batch = meta_int(r, keys::kBatch, *v, false, 1);
  std::int64_t capture_every = 0;
  if (const std::string* v = find_meta(r, keys::kCaptureEvery))
    capture_every = meta_int(r, keys::kCaptureEvery, *v, false, 1);
  const std::vector<LayerInfo> layers = read_layers(r);
  (void)read_gemm_times(r);
  (void)read_sparsity(r);

  // 2. Required keys: a plain safetensors file (no .sptrace key) is accepted as a container; a file that
  //    carries any .sptrace key must carry all the required ones (section 4).
  bool sptrace = false;
  for (const char* key : kSptraceKeys) sptrace = sptrace || find_meta(r, key) != nullptr;
  if (!sptrace) return;
  for (const char* key : kRequiredKeys)
    if (!find_meta(r, key)) meta_fail(r, key, "required key missing (docs/trace-format.md, section 4)");

  // 3. Consistency: layer indices unique and in forward order; every layer's batch dimension is `batch`.
  std::map<std::int64_t, const LayerInfo*> by_index;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const LayerInfo& l = layers[i];
    const std::string at = std::string(keys::kLayers) + "[" + std::to_string(i) + "].index";
    if (!by_index.emplace(l.index, &l).second)
      meta_fail(r, at, "duplicate layer index " + std::to_string(l.index));
    if (i > 0 && l.index < layers[i - 1].index)
      meta_fail(r, at, "layer indices must increase in forward order (" + std::to_string(layers[i - 1].index) +
                           " then " + std::to_string(l.index) + ")");
    if ((l.type == "conv" || l.type == "fc") && l.input[0] != batch)
      meta_fail(r, std::string(keys::kLayers) + "[" + std::to_string(i) + "].input",
                "batch dimension " + std::to_string(l.input[0]) + " differs from __metadata__.batch = " +
                    std::to_string(batch));
  }

  // 4. Captured tensors against their layer (section 3): `act` is F32/F16/BF16 with the layer's `input` shape;
  //    `dz_mask` is U8 of shape [ceil(n / 8)], n = product(output), and only for a layer with relu_after. A
  //    tensor of another shape would be replayed as another matrix without a word.
  auto tensor_fail = [&](const std::string& name, const std::string& what) {
    throw FormatError(r.path(), "tensor " + name, 0, what, "byte offset");
  };
  std::set<std::pair<std::int64_t, std::int64_t>> captured;  // (iteration, layer) with an act
  std::set<std::int64_t> captured_iterations;                 // iterations with any act or dz_mask
  for (const TensorInfo& t : r.tensors()) {
    const std::optional<TraceKey> k = parse_key(t.name);
    if (!k || (k->kind != kinds::kAct && k->kind != kinds::kDzMask)) continue;
    captured_iterations.insert(k->iteration);
    if (k->kind == kinds::kAct) captured.emplace(k->iteration, k->layer);
    const auto it = by_index.find(k->layer);
    // A layer the metadata does not describe, or of a type other writers may add (section 4.1: readers skip
    // unknown types): nothing to check it against.
    if (it == by_index.end() || (it->second->type != "conv" && it->second->type != "fc")) continue;
    const LayerInfo& l = *it->second;
    if (k->kind == kinds::kAct) {
      if (t.dtype != DType::F32 && t.dtype != DType::F16 && t.dtype != DType::BF16)
        tensor_fail(t.name, std::string("dtype ") + dtype_name(t.dtype) + ", expected F32, F16 or BF16");
      if (t.shape != l.input)
        tensor_fail(t.name, "shape " + shape_text(t.shape) + " differs from the layer's input " + shape_text(l.input));
    } else {
      if (!l.relu_after) tensor_fail(t.name, "layer " + std::to_string(k->layer) + " has no ReLU after it (relu_after false)");
      std::int64_t n = 1;
      for (std::int64_t d : l.output)
        if (!mul_ok(n, d, &n)) tensor_fail(t.name, "the layer's output " + shape_text(l.output) + " has too many elements");
      const std::vector<std::int64_t> want = {n / 8 + (n % 8 != 0)};  // ceil(n / 8); n + 7 overflows near INT64_MAX
      if (t.dtype != DType::U8) tensor_fail(t.name, std::string("dtype ") + dtype_name(t.dtype) + ", expected U8 (bit-packed)");
      if (t.shape != want)
        tensor_fail(t.name, "shape " + shape_text(t.shape) + ", expected " + shape_text(want) + " (ceil(" +
                                std::to_string(n) + " output elements / 8))");
      // section 3: the bits past the n-th of the last byte are 0 (a reader counting ones would count them)
      if (n % 8 != 0) {
        const TensorView v = r.view(t.name);
        const std::uint8_t last = v.data[v.bytes - 1];
        if (last >> (n % 8))
          tensor_fail(t.name, "bits past the " + std::to_string(n) + " mask elements are set in its last byte");
      }
    }
  }
  // Every captured iteration on the capture_every grid (section 4). (A dz_mask is optional: a writer may capture
  // activations only, so a ReLU layer's act without its dz_mask is not an error.)
  for (const std::int64_t it : captured_iterations) {
    if (capture_every > 0 && it % capture_every != 0)
      meta_fail(r, keys::kCaptureEvery, "iteration " + std::to_string(it) + " is captured but is not a multiple of " +
                                            std::to_string(capture_every));
  }
  // 5. Measured GEMM times belong to a captured (iteration, layer), at most one entry each (a second entry
  //    would silently replace the first in a reader).
  const std::vector<GemmTimes> times = read_gemm_times(r);
  std::set<std::pair<std::int64_t, std::int64_t>> timed;
  for (std::size_t i = 0; i < times.size(); ++i) {
    const std::string at = std::string(keys::kGemmTimes) + "[" + std::to_string(i) + "]";
    const std::string what = "iteration " + std::to_string(times[i].iteration) + ", layer " + std::to_string(times[i].layer);
    if (!captured.count({times[i].iteration, times[i].layer})) meta_fail(r, at, what + " has no captured act tensor");
    if (!timed.emplace(times[i].iteration, times[i].layer).second) meta_fail(r, at, what + " is timed twice");
  }
  // 6. Sparsity series: one per layer, and of a layer the metadata describes.
  const std::vector<LayerSparsity> sparsity = read_sparsity(r);
  std::set<std::int64_t> series;
  for (std::size_t i = 0; i < sparsity.size(); ++i) {
    const std::string at = std::string(keys::kSparsity) + "[" + std::to_string(i) + "].layer";
    const std::int64_t l = sparsity[i].layer;
    if (!by_index.count(l)) meta_fail(r, at, "layer " + std::to_string(l) + " is not in __metadata__.layers");
    if (!series.insert(l).second) meta_fail(r, at, "layer " + std::to_string(l) + " has two sparsity entries");
    const LayerInfo& li = *by_index.at(l);
    const std::string base = std::string(keys::kSparsity) + "[" + std::to_string(i) + "].";
    if (sparsity[i].name != li.name)
      meta_fail(r, base + "name", "\"" + sparsity[i].name.substr(0, 32) + "\" differs from layer " + std::to_string(l) +
                                      "'s name \"" + li.name.substr(0, 32) + "\"");
    // dz_mask_density exactly for the layers with a ReLU after them (section 4.3)
    if ((li.type == "conv" || li.type == "fc") && li.relu_after != !sparsity[i].dz_mask_density.empty())
      meta_fail(r, base + "dz_mask_density", li.relu_after ? "missing for a layer with relu_after true"
                                                           : "given for a layer without a ReLU after it");
  }
}

}  // namespace spartan::trace
