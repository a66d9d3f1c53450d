// RAII MPI_Init / MPI_Finalize for the distributed sub-commands.
#pragma once
#include <mpi.h>

#include <exception>

#include "spartan/common/cli.h"

namespace spartan::sdnn {

/// Initialises MPI (if not yet) and finalises it on normal exit. Left by an exception with more than one
/// rank (an error on this rank, e.g. an unwritable output on rank 0 only), it does not finalise: the other
/// ranks may be blocked in a collective, so it arms run_cli's error hook, which aborts the whole job with
/// the error's exit code (MPI_Abort) after the error line is printed.
class MpiSession {
 public:
  MpiSession() : unwinding_at_start_(std::uncaught_exceptions()) {
    int init = 0;
    MPI_Initialized(&init);
    if (!init) {
      MPI_Init(nullptr, nullptr);
      owner_ = true;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiSession() {
    int fin = 0;
    MPI_Finalized(&fin);
    if (fin) return;
    if (size_ > 1 && std::uncaught_exceptions() > unwinding_at_start_) {
      spartan::set_cli_error_hook(&abort_job);
      return;
    }
    if (owner_) MPI_Finalize();
  }
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }

 private:
  static void abort_job(int exit_code) { MPI_Abort(MPI_COMM_WORLD, exit_code); }
  int unwinding_at_start_ = 0;
  bool owner_ = false;
  int rank_ = 0, size_ = 1;
};

}  // namespace spartan::sdnn
