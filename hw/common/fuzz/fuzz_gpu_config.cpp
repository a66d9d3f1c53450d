// libFuzzer target for the strict YAML GPU preset loader (hw/common, parse_gpu_config): any text must either
// give a configuration that passes validate_gpu_config, or throw spartan::Error (ConfigError naming the
// key). yaml-cpp exceptions must not escape. Run: build-fuzz/bin/fuzz_gpu_config hw/common/fuzz/corpus/fuzz_gpu_config
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "spartan/common/error.h"
#include "spartan/hw/gpu_config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  spartan::hw::GpuConfig cfg;
  try {
    cfg = spartan::hw::parse_gpu_config(text, "fuzz.yaml");
  } catch (const spartan::Error&) {
    return 0;
  }
  try {
    spartan::hw::validate_gpu_config(cfg);  // parse already validated: must not throw now
  } catch (const spartan::Error&) {
    std::abort();
  }
  return 0;
}
