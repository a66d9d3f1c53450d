#include "spartan/train/threads.h"

#include <cblas.h>
#include <omp.h>

#include <string>

#include "spartan/common/error.h"

namespace spartan::train {

void set_num_threads(int n) {
  if (n < 1) throw InputError("threads must be >= 1 (got " + std::to_string(n) + ")");
  omp_set_num_threads(n);
  openblas_set_num_threads(n);
}

int num_threads() { return omp_get_max_threads(); }

}  // namespace spartan::train
