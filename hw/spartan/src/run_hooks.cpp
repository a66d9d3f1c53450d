#include "spartan/hw/run_hooks.h"

namespace spartan::hw {

std::vector<RunExtensionFactory>& run_extensions() {
  static std::vector<RunExtensionFactory> v;
  return v;
}

}  // namespace spartan::hw
