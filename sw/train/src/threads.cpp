#include "spartan/train/threads.h"

#include <cblas.h>
#include <omp.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "spartan/common/cli_checks.h"
#include "spartan/common/error.h"

namespace spartan::train {

void set_num_threads(int n) {
  // Beyond kMaxThreads (1024) OpenBLAS/OpenMP exhaust their buffers and crash (issue 12: --threads 100000).
  if (n < 1 || n > kMaxThreads)
    throw InputError("threads must be 1.." + std::to_string(kMaxThreads) + " (got " + std::to_string(n) + ")");
  omp_set_num_threads(n);
  openblas_set_num_threads(n);
}

int num_threads() { return omp_get_max_threads(); }

void use_passive_openmp_wait(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT")) return;
  if (setenv("OMP_WAIT_POLICY", "passive", 1) != 0) return;
  execv("/proc/self/exe", argv);  // returns only on failure: then this process keeps libgomp's default
}

}  // namespace spartan::train
