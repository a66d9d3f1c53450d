// Throughput of the trace container: writing, opening (mmap + full header validation) and typed
// conversion to float. Not a test: prints Google Benchmark tables (see docs/bench/trace.md).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "spartan/trace/keys.h"
#include "spartan/trace/sptrace.h"

namespace {
using namespace spartan::trace;

std::string bench_path(const char* stem) {
  return "/tmp/spartan_bench_" + std::to_string(::getpid()) + "_" + stem + ".sptrace";
}

// A trace shaped like a small training capture: `iters` iterations x 16 layers of act + dz_mask.
void write_trace(const std::string& path, int iters, std::int64_t elems_per_act, DType dt) {
  std::vector<std::uint8_t> act(static_cast<std::size_t>(elems_per_act) * dtype_size(dt));
  for (std::size_t i = 0; i < act.size(); ++i) act[i] = static_cast<std::uint8_t>((i * 2654435761u) >> 24);
  std::vector<std::uint8_t> mask(static_cast<std::size_t>((elems_per_act + 7) / 8), 0x5a);
  TraceWriter w(path);
  w.set_metadata(keys::kFormatVersion, kFormatVersion);
  for (int it = 0; it < iters; ++it)
    for (int l = 0; l < 16; ++l) {
      w.add_tensor(TraceKey{it, l, kinds::kAct}.name(), dt, {elems_per_act}, act.data(), act.size());
      w.add_tensor(TraceKey{it, l, kinds::kDzMask}.name(), DType::U8, {static_cast<std::int64_t>(mask.size())},
                   mask.data(), mask.size());
    }
  w.finish();
}

// Writer: 8 iterations x 16 layers x 256 Ki F32 elements = 128 MiB of activations.
void BM_Write(benchmark::State& st) {
  const std::string path = bench_path("write");
  const std::int64_t elems = 256 * 1024;
  for (auto _ : st) write_trace(path, 8, elems, DType::F32);
  st.SetBytesProcessed(st.iterations() * 8 * 16 * (elems * 4 + elems / 8));
  std::remove(path.c_str());
}
BENCHMARK(BM_Write)->Unit(benchmark::kMillisecond)->UseRealTime();

// Open + validate a trace with many tensors (header size grows with the tensor count).
void BM_OpenValidate(benchmark::State& st) {
  const std::string path = bench_path("open");
  const int iters = static_cast<int>(st.range(0));
  write_trace(path, iters, 64, DType::F32);
  for (auto _ : st) {
    TraceReader r(path);
    benchmark::DoNotOptimize(r.tensors().data());
  }
  st.counters["tensors"] = iters * 32;
  st.SetItemsProcessed(st.iterations() * iters * 32);
  std::remove(path.c_str());
}
BENCHMARK(BM_OpenValidate)->Arg(10)->Arg(100)->Arg(1000)->Unit(benchmark::kMillisecond);

// to_f32 of one 1 Mi-element act tensor, per stored dtype.
void BM_ToF32(benchmark::State& st) {
  const DType dt = static_cast<DType>(st.range(0));
  const std::string path = bench_path(dtype_name(dt));
  write_trace(path, 1, 1 << 20, dt);
  TraceReader r(path);
  for (auto _ : st) {
    auto v = r.to_f32("it0/L0/act");
    benchmark::DoNotOptimize(v.data());
  }
  st.SetLabel(dtype_name(dt));
  st.SetBytesProcessed(st.iterations() * (1 << 20) * static_cast<std::int64_t>(dtype_size(dt)));
  std::remove(path.c_str());
}
BENCHMARK(BM_ToF32)
    ->Arg(static_cast<int>(DType::F32))
    ->Arg(static_cast<int>(DType::F16))
    ->Arg(static_cast<int>(DType::BF16))
    ->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
