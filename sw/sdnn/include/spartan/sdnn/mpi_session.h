// RAII MPI_Init / MPI_Finalize for the distributed sub-commands.
#pragma once
#include <mpi.h>

namespace spartan::sdnn {

class MpiSession {
 public:
  MpiSession() {
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
    if (owner_ && !fin) MPI_Finalize();
  }
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }

 private:
  bool owner_ = false;
  int rank_ = 0, size_ = 1;
};

}  // namespace spartan::sdnn
