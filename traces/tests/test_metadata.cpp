// Structured metadata: builders, JSON round trips, schema and consistency errors.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>

#include "spartan/trace/keys.h"
#include "spartan/trace/metadata.h"
#include "spartan/trace/sptrace.h"
#include "test_util.h"

namespace spartan::trace {
namespace {

TEST(TraceMetadata, ConvAndFcGemmShapes) {
  // 64 x 1 x 28 x 28 input, 32 filters 3x3, stride 1, pad 1 (docs/trace-format.md example).
  const LayerInfo c = make_conv_layer(0, "conv1", 64, 1, 28, 28, 32, 3, 3, 1, 1, true);
  EXPECT_EQ(c.im2col.OH, 28);
  EXPECT_EQ(c.output, (std::vector<std::int64_t>{64, 32, 28, 28}));
  EXPECT_EQ(c.fwd, (GemmShape{50176, 32, 9}));
  EXPECT_EQ(c.bwd_data, (GemmShape{50176, 9, 32}));
  EXPECT_EQ(c.bwd_weight, (GemmShape{9, 32, 50176}));
  const LayerInfo s = make_conv_layer(1, "conv2", 8, 16, 14, 14, 32, 5, 5, 2, 0, true);
  EXPECT_EQ(s.im2col.OH, 5);  // (14 - 5) / 2 + 1
  EXPECT_EQ(s.fwd, (GemmShape{8 * 25, 32, 16 * 25}));
  const LayerInfo f = make_fc_layer(7, "fc1", 64, 1024, 256, false);
  EXPECT_EQ(f.fwd, (GemmShape{64, 256, 1024}));
  EXPECT_EQ(f.bwd_data, (GemmShape{64, 1024, 256}));
  EXPECT_EQ(f.bwd_weight, (GemmShape{1024, 256, 64}));
  EXPECT_THROW(make_conv_layer(0, "x", 1, 1, 2, 2, 1, 5, 5, 1, 0, true), InputError);
}

TEST(TraceMetadata, JsonRoundTrip) {
  const std::vector<LayerInfo> layers = {make_conv_layer(0, "conv1", 4, 3, 8, 8, 6, 3, 3, 1, 1, true),
                                         make_fc_layer(1, "fc", 4, 384, 10, false)};
  const auto back = layers_from_json(layers_to_json(layers), "f");
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].name, "conv1");
  EXPECT_TRUE(back[0].relu_after);
  EXPECT_EQ(back[0].input, layers[0].input);
  EXPECT_EQ(back[0].bwd_weight, layers[0].bwd_weight);
  EXPECT_EQ(back[1].type, "fc");
  EXPECT_EQ(back[1].im2col.C, 384);

  GemmTimes t;
  t.iteration = 100, t.layer = 1, t.device = "cuda: NVIDIA H200 (sm_90)", t.timer = "cuda-events";
  t.fwd = {0.5, 0.25, 0.125};
  t.bwd_data = {0.75, std::nullopt, std::nullopt};
  t.bwd_weight = {1.0, 0.5, std::nullopt};
  t.fwd.operand_density = 0.3, t.fwd.path = "tiles";
  t.bwd_weight.operand_density = 0.6, t.bwd_weight.path = "one-sgemm";
  const auto tb = gemm_times_from_json(gemm_times_to_json({t}), "f");
  EXPECT_EQ(tb[0].fwd.operand_density, 0.3);
  EXPECT_EQ(tb[0].fwd.path, "tiles");
  EXPECT_EQ(tb[0].bwd_weight.path, "one-sgemm");
  EXPECT_FALSE(tb[0].bwd_data.operand_density);  // not recorded: absent, as in traces before 2026-12-05
  EXPECT_EQ(tb[0].bwd_data.path, "");
  ASSERT_EQ(tb.size(), 1u);
  EXPECT_EQ(tb[0].device, t.device);
  EXPECT_EQ(tb[0].fwd.tile_sparse_ms, 0.25);
  EXPECT_EQ(tb[0].fwd.compact_ms, 0.125);
  EXPECT_FALSE(tb[0].bwd_data.tile_sparse_ms);
  EXPECT_EQ(tb[0].bwd_weight.dense_ms, 1.0);

  LayerSparsity sp{2, "conv3", {0, 100}, {1.0, 0.4}, {0.5, 0.45}};
  const auto sb = sparsity_from_json(sparsity_to_json({sp, LayerSparsity{3, "fc", {0}, {0.9}, {}}}), "f");
  ASSERT_EQ(sb.size(), 2u);
  EXPECT_EQ(sb[0].act_density, sp.act_density);
  EXPECT_EQ(sb[0].dz_mask_density, sp.dz_mask_density);
  EXPECT_TRUE(sb[1].dz_mask_density.empty());
}

void expect_format_error(const std::function<void()>& f, const std::string& field, const std::string& phrase) {
  try {
    f();
    ADD_FAILURE() << "accepted";
  } catch (const FormatError& e) {
    EXPECT_EQ(e.field(), field) << e.what();
    EXPECT_NE(std::string(e.what()).find(phrase), std::string::npos) << e.what();
  }
}

TEST(TraceMetadata, SchemaErrorsNameTheField) {
  const std::string good = layers_to_json({make_conv_layer(0, "conv1", 4, 3, 8, 8, 6, 3, 3, 1, 1, true)});
  auto edit = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    const auto p = s.find(from);
    EXPECT_NE(p, std::string::npos) << from;
    return s.replace(p, from.size(), to);
  };
  expect_format_error([&] { layers_from_json("[{", "f"); }, "__metadata__.layers", "not valid JSON");
  expect_format_error([&] { layers_from_json("{}", "f"); }, "__metadata__.layers", "JSON array");
  expect_format_error([&] { layers_from_json(edit("\"M\":256", "\"M\":255"), "f"); }, "__metadata__.layers[0].gemm",
                      "do not match");
  expect_format_error([&] { layers_from_json(edit("\"OH\":8", "\"OH\":7"), "f"); }, "__metadata__.layers[0].im2col",
                      "OH/OW");
  expect_format_error([&] { layers_from_json(edit("\"KH\":3", "\"KH\":\"3\""), "f"); },
                      "__metadata__.layers[0].im2col.KH", "integer");
  expect_format_error([&] { layers_from_json(edit("\"name\":\"conv1\",", ""), "f"); }, "__metadata__.layers[0].name",
                      "missing");
  expect_format_error([&] { layers_from_json(edit("\"input\":[4,3,8,8]", "\"input\":[4,3,8,9]"), "f"); },
                      "__metadata__.layers[0].input", "geometry");
  expect_format_error([&] { gemm_times_from_json(R"([{"iteration":0,"layer":0,"device":"cpu","timer":"steady_clock",
      "fwd":{"dense_ms":-1},"bwd_data":{"dense_ms":1},"bwd_weight":{"dense_ms":1}}])", "f"); },
                      "__metadata__.gemm_times[0].fwd.dense_ms", "non-negative");
  expect_format_error([&] { gemm_times_from_json(R"([{"iteration":0,"layer":0,"device":"cpu","timer":"steady_clock",
      "fwd":{"dense_ms":1,"operand_density":1.5},"bwd_data":{"dense_ms":1},"bwd_weight":{"dense_ms":1}}])", "f"); },
                      "__metadata__.gemm_times[0].fwd.operand_density", "[0, 1]");
  expect_format_error([&] { gemm_times_from_json(R"([{"iteration":0,"layer":0,"device":"cpu","timer":"steady_clock",
      "fwd":{"dense_ms":1},"bwd_data":{"dense_ms":1,"path":"sparse"},"bwd_weight":{"dense_ms":1}}])", "f"); },
                      "__metadata__.gemm_times[0].bwd_data.path", "one-sgemm");
  // fuzz finding: a number literal beyond double range is json::out_of_range, not a parse_error
  expect_format_error([&] { gemm_times_from_json(R"([{"iteration":0,"layer":0,"device":"cpu","timer":"steady_clock",
      "fwd":{"dense_ms":6.4e408},"bwd_data":{"dense_ms":1},"bwd_weight":{"dense_ms":1}}])", "f"); },
                      "__metadata__.gemm_times", "not valid JSON");
  expect_format_error([&] { sparsity_from_json(R"([{"layer":0,"name":"c","iterations":[0,1],"act_density":[0.5]}])", "f"); },
                      "__metadata__.sparsity[0].act_density", "length");
  expect_format_error([&] { sparsity_from_json(R"([{"layer":0,"name":"c","iterations":[0],"act_density":[1.5]}])", "f"); },
                      "__metadata__.sparsity[0].act_density", "[0, 1]");
}

TEST(TraceMetadata, CheckRejectsBadStructuredMetadata) {
  const std::string path = testutil::temp_path("meta.sptrace");
  for (auto [key, value] : std::vector<std::pair<std::string, std::string>>{
           {keys::kLayers, "[{\"index\": 0}]"},
           {keys::kGemmTimes, "[1]"},
           {keys::kSparsity, "nope"}}) {
    SCOPED_TRACE(key);
    {
      TraceWriter w(path);
      w.set_metadata(key, value);
      w.finish();
    }
    TraceReader r(path);
    EXPECT_THROW(check_metadata(r), FormatError);
    const auto c = testutil::run_cli("check '" + path + "'");
    EXPECT_EQ(c.rc, 2);
    EXPECT_EQ(testutil::count_lines(c.err), 1) << c.err;
    EXPECT_NE(c.err.find("__metadata__." + key), std::string::npos) << c.err;
  }
  std::remove(path.c_str());
}

// Required keys, scalar types and consistency (issue 12 reliability findings): each trace below differs
// from a complete, valid metadata set by one key; `spartan-trace check` must refuse it with one line naming
// the key and exit 2.
TEST(TraceMetadata, CheckRequiresKeysTypesAndConsistency) {
  const std::string path = testutil::temp_path("meta_required.sptrace");
  const std::string layers = layers_to_json({make_conv_layer(0, "conv1", 2, 1, 8, 8, 4, 3, 3, 1, 1, true),
                                             make_fc_layer(1, "fc1", 2, 256, 10, false)});
  const std::map<std::string, std::string> good = {
      {keys::kFormatVersion, kFormatVersion}, {keys::kModel, "m"}, {keys::kDataset, "d"},
      {keys::kDevice, "cpu: t (1 threads)"}, {keys::kSeed, "7"}, {keys::kBatch, "2"},
      {keys::kCaptureEvery, "10"}, {keys::kLayers, layers}};
  auto write = [&](const std::map<std::string, std::string>& meta) {
    TraceWriter w(path);
    for (const auto& [k, v] : meta) w.set_metadata(k, v);
    w.finish();
  };
  write(good);
  {
    TraceReader r(path);
    EXPECT_NO_THROW(check_metadata(r));
  }
  auto with = [&](const std::string& key, const std::string* value) {
    auto m = good;
    if (value) m[key] = *value; else m.erase(key);
    return m;
  };
  std::string dup_index = layers;
  dup_index.replace(dup_index.find("\"index\":1"), 9, "\"index\":0");
  std::string backwards = layers;
  backwards.replace(backwards.find("\"index\":0"), 9, "\"index\":5");
  const std::string abc = "abc", quoted4 = "4", empty, neg = "-3", zero = "0", spaced = " 7", big = "99999999999999999999";
  struct Case {
    std::map<std::string, std::string> meta;
    std::string field, phrase;
  };
  const std::vector<Case> cases = {
      {with(keys::kLayers, nullptr), "__metadata__.layers", "required key missing"},
      {with(keys::kModel, nullptr), "__metadata__.model", "required key missing"},
      {with(keys::kSeed, nullptr), "__metadata__.seed", "required key missing"},
      {with(keys::kBatch, nullptr), "__metadata__.batch", "required key missing"},
      {with(keys::kFormatVersion, nullptr), "__metadata__.format_version", "required key missing"},
      {with(keys::kSeed, &abc), "__metadata__.seed", "decimal integer"},
      {with(keys::kSeed, &spaced), "__metadata__.seed", "decimal integer"},
      {with(keys::kSeed, &big), "__metadata__.seed", "decimal integer"},
      {with(keys::kBatch, &quoted4), "__metadata__.layers[0].input", "differs from __metadata__.batch = 4"},
      {with(keys::kBatch, &zero), "__metadata__.batch", "positive"},
      {with(keys::kCaptureEvery, &neg), "__metadata__.capture_every", "positive"},
      {with(keys::kDataset, &empty), "__metadata__.dataset", "empty"},
      {with(keys::kLayers, &dup_index), "__metadata__.layers[1].index", "duplicate layer index 0"},
      {with(keys::kLayers, &backwards), "__metadata__.layers[1].index", "increase"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.field + " / " + c.phrase);
    write(c.meta);
    {
      TraceReader r(path);
      expect_format_error([&] { check_metadata(r); }, c.field, c.phrase);
    }
    const auto cli = testutil::run_cli("check '" + path + "'");
    EXPECT_EQ(cli.rc, 2);
    EXPECT_EQ(testutil::count_lines(cli.err), 1) << cli.err;
    EXPECT_EQ(cli.out, "");
  }
  // A negative seed is a decimal integer; a plain safetensors file (no .sptrace key) is not an .sptrace.
  const std::string minus = "-5";
  write(with(keys::kSeed, &minus));
  {
    TraceReader r(path);
    EXPECT_NO_THROW(check_metadata(r));
  }
  // The seed is an unsigned 64-bit integer (spartan-train --seed): 10^18 and 2^64-1 were refused (18 digits at
  // most); 2^64, and below -2^63, are not 64-bit seeds.
  for (const std::string seed : {"1000000000000000000", "18446744073709551615", "-9223372036854775808"}) {
    SCOPED_TRACE(seed);
    write(with(keys::kSeed, &seed));
    TraceReader r(path);
    EXPECT_NO_THROW(check_metadata(r));
    EXPECT_EQ(testutil::run_cli("check '" + path + "'").rc, 0);
  }
  for (const std::string seed : {"18446744073709551616", "-9223372036854775809", "184467440737095516150"}) {
    SCOPED_TRACE(seed);
    write(with(keys::kSeed, &seed));
    TraceReader r(path);
    expect_format_error([&] { check_metadata(r); }, "__metadata__.seed", "decimal integer");
  }
  const std::string batch_big = "9223372036854775808";  // INT64_MAX + 1: overflow-checked, not wrapped
  write(with(keys::kBatch, &batch_big));
  {
    TraceReader r(path);
    expect_format_error([&] { check_metadata(r); }, "__metadata__.batch", "positive");
  }
  write({{"format", "pt"}});
  {
    TraceReader r(path);
    EXPECT_NO_THROW(check_metadata(r));
  }
  std::remove(path.c_str());
}

// Section 6: a reader refuses a format_version it does not know. TraceReader itself refuses it (spartan-sim
// rtl-check and the benchmarks open traces without check_metadata); a file without the key still opens.
TEST(TraceMetadata, ReaderRefusesUnknownFormatVersion) {
  const std::string path = testutil::temp_path("meta_version.sptrace");
  for (const std::string v : {"2", "", "1.0"}) {
    SCOPED_TRACE(v);
    {
      TraceWriter w(path);
      w.set_metadata(keys::kFormatVersion, v);
      w.finish();
    }
    expect_format_error([&] { TraceReader r(path); }, "__metadata__.format_version", "unsupported format version");
    const auto c = testutil::run_cli("info '" + path + "'");
    EXPECT_EQ(c.rc, 2);
    EXPECT_EQ(testutil::count_lines(c.err), 1) << c.err;
    EXPECT_NE(c.err.find("__metadata__.format_version"), std::string::npos) << c.err;
  }
  {
    TraceWriter w(path);
    w.set_metadata(keys::kFormatVersion, kFormatVersion);
    w.finish();
  }
  EXPECT_NO_THROW(TraceReader{path});
  {
    TraceWriter w(path);
    w.set_metadata("format", "pt");
    w.finish();
  }
  EXPECT_NO_THROW(TraceReader{path});
  std::remove(path.c_str());
}

// fc layers carry the 1x1 geometry of section 4.1; a padding that overflows H + 2*pad is an error, not UB.
TEST(TraceMetadata, FcGeometryIsOneByOneAndPaddingCannotOverflow) {
  const std::string fc = layers_to_json({make_fc_layer(0, "fc1", 2, 6, 10, false)});
  EXPECT_NO_THROW(layers_from_json(fc, "f"));
  auto edit = [](std::string s, const std::string& from, const std::string& to) {
    const auto p = s.find(from);
    EXPECT_NE(p, std::string::npos) << from;
    return s.replace(p, from.size(), to);
  };
  // H = W = 3 with KH = KW = 3 keeps OH = OW = 1 and the GEMM shapes: it passed before.
  const std::string fc3 =
      edit(edit(edit(edit(fc, "\"H\":1", "\"H\":3"), "\"W\":1", "\"W\":3"), "\"KH\":1", "\"KH\":3"), "\"KW\":1", "\"KW\":3");
  expect_format_error([&] { layers_from_json(fc3, "f"); }, "__metadata__.layers[0].im2col", "fc layer");
  expect_format_error([&] { layers_from_json(edit(fc, "\"pad\":0", "\"pad\":1"), "f"); }, "__metadata__.layers[0].im2col",
                      "fc layer");
  expect_format_error([&] { layers_from_json(edit(fc, "\"stride\":1", "\"stride\":2"), "f"); },
                      "__metadata__.layers[0].im2col", "fc layer");
  // pad = INT64_MAX: H + 2*pad wrapped (signed overflow) and the layer passed.
  const std::string conv = layers_to_json({make_conv_layer(0, "conv1", 2, 1, 8, 8, 4, 3, 3, 1, 1, true)});
  for (const std::string pad : {"9223372036854775807", "4611686018427387904"}) {
    SCOPED_TRACE(pad);
    expect_format_error([&] { layers_from_json(edit(conv, "\"pad\":1", "\"pad\":" + pad), "f"); },
                        "__metadata__.layers[0].im2col", "overflows");
  }
}

// Captured tensors must match their layer (docs/trace-format.md section 3; an eleventh-session new-user review
// reshaped it0/L0/act and shrank a dz_mask, and both passed `spartan-trace check` and were replayed).
TEST(TraceMetadata, CheckTensorsAgainstTheirLayer) {
  const std::string path = testutil::temp_path("meta_tensors.sptrace");
  // conv1: input [2,1,8,8], output [2,4,8,8] = 512 elements -> dz_mask [64]; fc1: input [2,256], no ReLU after.
  const std::string layers = layers_to_json({make_conv_layer(0, "conv1", 2, 1, 8, 8, 4, 3, 3, 1, 1, true),
                                             make_fc_layer(1, "fc1", 2, 256, 10, false)});
  struct T {
    std::string name;
    DType dt;
    std::vector<std::int64_t> shape;
  };
  auto write = [&](const std::vector<T>& tensors, const std::string& times, const std::string& sparsity = "") {
    TraceWriter w(path);
    for (const auto& [k, v] : std::map<std::string, std::string>{
             {keys::kFormatVersion, kFormatVersion}, {keys::kModel, "m"}, {keys::kDataset, "d"},
             {keys::kDevice, "cpu: t"}, {keys::kSeed, "7"}, {keys::kBatch, "2"}, {keys::kLayers, layers}})
      w.set_metadata(k, v);
    if (!times.empty()) w.set_metadata(keys::kGemmTimes, times);
    if (!sparsity.empty()) w.set_metadata(keys::kSparsity, sparsity);
    for (const T& t : tensors) {
      std::int64_t n = 1;
      for (auto d : t.shape) n *= d;
      std::vector<std::uint8_t> bytes(std::size_t(n) * dtype_size(t.dt));
      w.add_tensor(t.name, t.dt, t.shape, bytes.data(), bytes.size());
    }
    w.finish();
  };
  const T act0{"it0/L0/act", DType::F32, {2, 1, 8, 8}}, mask0{"it0/L0/dz_mask", DType::U8, {64}},
      act1{"it0/L1/act", DType::BF16, {2, 256}};
  const std::string time0 = R"([{"iteration":0,"layer":0,"device":"cpu: t","timer":"steady_clock",)"
                            R"("fwd":{"dense_ms":1,"tile_sparse_ms":0.5},"bwd_data":{"dense_ms":0},"bwd_weight":{"dense_ms":1}}])";
  write({act0, mask0, act1, {"it0/L7/act", DType::F32, {3}}}, time0);  // L7: not described, not checked
  {
    TraceReader r(path);
    EXPECT_NO_THROW(check_metadata(r));
  }
  // GEMM times of an undescribed layer that has an act are fine too (rule 5 needs only the act).
  const std::string time7 = R"([{"iteration":0,"layer":7,"device":"cpu: t","timer":"steady_clock",)"
                            R"("fwd":{"dense_ms":1},"bwd_data":{"dense_ms":0},"bwd_weight":{"dense_ms":1}}])";
  write({act0, mask0, {"it0/L7/act", DType::F32, {3}}}, time7);
  {
    TraceReader r(path);
    EXPECT_NO_THROW(check_metadata(r));
  }
  struct Case {
    std::vector<T> tensors;
    std::string times, field, phrase;
  };
  const std::vector<Case> cases = {
      {{{"it0/L0/act", DType::F32, {4, 1, 8, 4}}, mask0}, "", "tensor it0/L0/act", "differs from the layer's input [2,1,8,8]"},
      {{act0, {"it0/L1/act", DType::F32, {2, 128}}}, "", "tensor it0/L1/act", "differs from the layer's input [2,256]"},
      {{{"it0/L0/act", DType::I32, {2, 1, 8, 8}}}, "", "tensor it0/L0/act", "expected F32, F16 or BF16"},
      {{act0, {"it0/L0/dz_mask", DType::U8, {10}}}, "", "tensor it0/L0/dz_mask", "expected [64]"},
      {{act0, {"it0/L0/dz_mask", DType::F32, {64}}}, "", "tensor it0/L0/dz_mask", "expected U8"},
      {{act0, act1, {"it0/L1/dz_mask", DType::U8, {3}}}, "", "tensor it0/L1/dz_mask", "no ReLU after it"},
      {{act1}, time0, "__metadata__.gemm_times[0]", "no captured act tensor"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.field + " / " + c.phrase);
    write(c.tensors, c.times);
    {
      TraceReader r(path);
      expect_format_error([&] { check_metadata(r); }, c.field, c.phrase);
    }
    const auto cli = testutil::run_cli("check '" + path + "'");
    EXPECT_EQ(cli.rc, 2);
    EXPECT_EQ(testutil::count_lines(cli.err), 1) << cli.err;
  }
  // One gemm_times entry per (iteration, layer), one sparsity series per described layer: a second entry was
  // accepted and silently replaced the first in the simulator (a new-user review, thirty-second session).
  std::string time00 = time0;
  time00.pop_back();
  time00 += "," + time0.substr(1);
  const std::string spars0 = R"({"layer":0,"name":"conv1","iterations":[0],"act_density":[0.5],"dz_mask_density":[0.4]})";
  const std::string spars9 = R"({"layer":9,"name":"conv9","iterations":[0],"act_density":[0.5]})";
  struct MetaCase {
    std::string times, sparsity, field, phrase;
  };
  write({act0, mask0, act1}, time0, "[" + spars0 + "]");
  {
    TraceReader r(path);
    EXPECT_NO_THROW(check_metadata(r));
  }
  for (const MetaCase& c : {MetaCase{time00, "", "__metadata__.gemm_times[1]", "iteration 0, layer 0 is timed twice"},
                            MetaCase{time0, "[" + spars0 + "," + spars0 + "]", "__metadata__.sparsity[1].layer",
                                     "layer 0 has two sparsity entries"},
                            MetaCase{time0, "[" + spars9 + "]", "__metadata__.sparsity[0].layer",
                                     "layer 9 is not in __metadata__.layers"},
                            // thirty-eighth session's review: these passed `check`
                            MetaCase{time0, R"([{"layer":0,"name":"convX","iterations":[0],"act_density":[0.5],"dz_mask_density":[0.4]}])",
                                     "__metadata__.sparsity[0].name", "differs from layer 0's name \"conv1\""},
                            MetaCase{time0, R"([{"layer":0,"name":"conv1","iterations":[0],"act_density":[0.5]}])",
                                     "__metadata__.sparsity[0].dz_mask_density", "missing for a layer with relu_after true"},
                            MetaCase{time0, R"([{"layer":1,"name":"fc1","iterations":[0],"act_density":[0.5],"dz_mask_density":[0.4]}])",
                                     "__metadata__.sparsity[0].dz_mask_density", "given for a layer without a ReLU"},
                            MetaCase{time0, R"([{"layer":0,"name":"conv1","iterations":[5,5],"act_density":[0.5,0.5],"dz_mask_density":[0.4,0.4]}])",
                                     "__metadata__.sparsity[0].iterations", "must increase strictly (5 then 5)"},
                            MetaCase{R"([{"iteration":0,"layer":0,"device":"cpu: t","timer":"sundial",)"
                                     R"("fwd":{"dense_ms":1},"bwd_data":{"dense_ms":0},"bwd_weight":{"dense_ms":1}}])",
                                     "", "__metadata__.gemm_times[0].timer", "got \"sundial\""},
                            MetaCase{R"([{"iteration":0,"layer":0,"device":"","timer":"steady_clock",)"
                                     R"("fwd":{"dense_ms":1},"bwd_data":{"dense_ms":0},"bwd_weight":{"dense_ms":1}}])",
                                     "", "__metadata__.gemm_times[0].device", "must not be empty"}}) {
    SCOPED_TRACE(c.field + " / " + c.phrase);
    write({act0, mask0, act1}, c.times, c.sparsity);
    {
      TraceReader r(path);
      expect_format_error([&] { check_metadata(r); }, c.field, c.phrase);
    }
    const auto cli = testutil::run_cli("check '" + path + "'");
    EXPECT_EQ(cli.rc, 2);
    EXPECT_EQ(testutil::count_lines(cli.err), 1) << cli.err;
  }
  // Huge fc outputs with an empty dz_mask, each one batch of 8 inputs per sample:
  //  - 4 x 2^62 elements overflows int64: refused, not wrapped to an expected mask of [0] bytes (undefined
  //    behaviour, and a 0-byte mask accepted);
  //  - 1 x INT64_MAX elements (no overflow in the product) must not overflow in ceil(n / 8): the expected mask
  //    is 2^60 bytes (signed overflow of n + 7 before; UBSan saw it in the eighteenth-session review).
  struct Huge {
    std::int64_t batch, out;
    std::string phrase;
  };
  for (const Huge& h : {Huge{4, std::int64_t(1) << 62, "too many elements"},
                        Huge{1, INT64_MAX, "expected [1152921504606846976]"}}) {
    SCOPED_TRACE(h.phrase);
    TraceWriter w(path);
    for (const auto& [k, v] : std::map<std::string, std::string>{
             {keys::kFormatVersion, kFormatVersion}, {keys::kModel, "m"}, {keys::kDataset, "d"}, {keys::kDevice, "cpu: t"},
             {keys::kSeed, "7"}, {keys::kBatch, std::to_string(h.batch)},
             {keys::kLayers, layers_to_json({make_fc_layer(0, "fc0", h.batch, 8, h.out, true)})}})
      w.set_metadata(k, v);
    std::vector<float> a(std::size_t(h.batch) * 8);
    w.add_tensor("it0/L0/act", DType::F32, {h.batch, 8}, a.data(), a.size() * 4);
    w.add_tensor("it0/L0/dz_mask", DType::U8, {0}, nullptr, 0);
    w.finish();
    TraceReader r(path);
    expect_format_error([&] { check_metadata(r); }, "tensor it0/L0/dz_mask", h.phrase);
  }
  // GEMM times beyond 1e9 ms (the review's 1e308 gave an infinite ratio) are rejected.
  EXPECT_THROW(gemm_times_from_json(R"([{"iteration":0,"layer":0,"device":"d","timer":"t",)"
                                    R"("fwd":{"dense_ms":1e308},"bwd_data":{"dense_ms":1},"bwd_weight":{"dense_ms":1}}])", "f"),
               FormatError);
  std::remove(path.c_str());
}

// Thirty-eighth session's review: a dz_mask with bits set past its n elements, and captured iterations that
// are not multiples of capture_every, passed `spartan-trace check`.
TEST(TraceMetadata, CheckMaskTailBitsAndCaptureEvery) {
  const std::string path = testutil::temp_path("meta_tail.sptrace");
  // fc1: input [2,6], output [2,5] = 10 elements -> dz_mask [2]: bits 2..7 of the second byte must be 0
  const std::string layers = layers_to_json({make_fc_layer(0, "fc1", 2, 6, 5, true)});
  // mask_it >= 0: the dz_mask at that iteration instead (an iteration with a dz_mask and no act).
  auto write = [&](std::uint8_t last, const std::string& every, std::int64_t it, std::int64_t mask_it = -1) {
    TraceWriter w(path);
    for (const auto& [k, v] : std::map<std::string, std::string>{
             {keys::kFormatVersion, kFormatVersion}, {keys::kModel, "m"}, {keys::kDataset, "d"},
             {keys::kDevice, "cpu: t"}, {keys::kSeed, "7"}, {keys::kBatch, "2"}, {keys::kLayers, layers},
             {keys::kCaptureEvery, every}})
      w.set_metadata(k, v);
    const std::vector<float> act(12, 1.0f);
    const std::string base = "it" + std::to_string(it) + "/L0/";
    w.add_tensor(base + "act", DType::F32, {2, 6}, act.data(), act.size() * sizeof(float));
    const std::uint8_t mask[2] = {0xff, last};
    w.add_tensor((mask_it < 0 ? base : "it" + std::to_string(mask_it) + "/L0/") + "dz_mask", DType::U8, {2}, mask, 2);
    w.finish();
  };
  write(0x03, "10", 20);  // the 2 valid bits set, the rest 0; iteration 20 of every 10
  {
    TraceReader r(path);
    EXPECT_NO_THROW(check_metadata(r));
  }
  write(0x07, "10", 20);  // bit 2 set: the 11th element of 10
  {
    TraceReader r(path);
    expect_format_error([&] { check_metadata(r); }, "tensor it20/L0/dz_mask", "bits past the 10 mask elements");
  }
  write(0x03, "10", 25);
  {
    TraceReader r(path);
    expect_format_error([&] { check_metadata(r); }, "__metadata__.capture_every",
                        "iteration 25 is captured but is not a multiple of 10");
  }
  // A dz_mask alone at an iteration off the grid (review finding 106: only iterations with an act were checked).
  write(0x03, "10", 20, 7);
  {
    TraceReader r(path);
    expect_format_error([&] { check_metadata(r); }, "__metadata__.capture_every",
                        "iteration 7 is captured but is not a multiple of 10");
  }
  write(0x03, "10", 20, 30);  // a dz_mask alone on the grid stays accepted
  {
    TraceReader r(path);
    EXPECT_NO_THROW(check_metadata(r));
  }
}

}  // namespace
}  // namespace spartan::trace
