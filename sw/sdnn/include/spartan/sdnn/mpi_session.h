// RAII MPI_Init / MPI_Finalize for the distributed sub-commands.
#pragma once
#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "spartan/common/cli.h"
#include "spartan/common/error.h"

namespace spartan::sdnn {

/// The launcher's world size and this process's rank from its environment (Open MPI's OMPI_COMM_WORLD_SIZE /
/// _RANK, or PMI_* / PMIX_* of other launchers); 1 and 0 outside mpirun.
inline std::pair<long, long> launcher_ranks() {
  long ranks = 1, rank = 0;
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    if (const char* e = std::getenv(v)) ranks = std::max(ranks, std::strtol(e, nullptr, 10));
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"})
    if (const char* e = std::getenv(v)) rank = std::max(rank, std::strtol(e, nullptr, 10));
  return {ranks, rank};
}

/// Throws when this process is one of several ranks started by mpirun although `command` runs single-process (no
/// --partition): each rank would run the whole job and print it again (fresh-eyes review, thirty-seventh session).
/// Rank 0 throws the one InputError line; the other ranks a ReportedError with exit code 2 (nothing printed).
inline void refuse_ranks_without_partition(const char* command) {
  const auto [ranks, rank] = launcher_ranks();
  if (ranks <= 1) return;
  if (rank != 0) throw ReportedError(2);
  throw InputError(std::string(command) + " runs under mpirun with " + std::to_string(ranks) +
                   " ranks but without --partition, so every rank would run the whole job: give --partition FILE (from spartan-sdnn "
                   "partition --parts " + std::to_string(ranks) + ") or run it without mpirun");
}

/// The same for a command that always runs on one process (`partition`: every rank computed the same partition
/// and wrote the same --out; new-user review, fortieth session).
inline void refuse_ranks_for_serial_command(const char* command) {
  const auto [ranks, rank] = launcher_ranks();
  if (ranks <= 1) return;
  if (rank != 0) throw ReportedError(2);
  throw InputError(std::string(command) + " runs on one process, not under mpirun (here " + std::to_string(ranks) +
                   " ranks would each compute and write the same result): run it without mpirun");
}

/// Initialises MPI (if not yet) and finalises it on normal exit. Left by an exception with more than one
/// rank (an error on this rank, e.g. an unwritable output on rank 0 only), it does not finalise: the other
/// ranks may be blocked in a collective, so it arms run_cli's error hook, which aborts the whole job with
/// the error's exit code (MPI_Abort) after the error line is printed. An error that every rank has learnt
/// through agree() is not such a case: the ranks finalise and exit with its code (no MPI_Abort).
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
    if (size_ > 1 && std::uncaught_exceptions() > unwinding_at_start_ && !agreed_failure()) {
      spartan::set_cli_error_hook(&abort_job);
      return;
    }
    if (owner_) MPI_Finalize();
  }
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }

  /// Runs `setup` (the reading and checking that every rank does alike: input files, partition, plan) on
  /// every rank, then agrees on the outcome (collective over MPI_COMM_WORLD; every rank must call it). If it
  /// threw on no rank, returns. Otherwise every rank throws and the job ends cleanly (the ranks finalise):
  /// rank 0 throws the one error line to print, with exit code the largest of the errors' codes (2 for bad
  /// input), which is the job's; the others a ReportedError with code 0 (nothing printed, and no early
  /// non-zero exit that would make mpirun kill rank 0 before it prints). The line is rank 0's own error when every failing rank
  /// had the same one (e.g. a partition that does not match the network: printed once, not once per rank);
  /// an error found on another rank only is prefixed "rank R: "; different errors are joined with "; ".
  template <class F>
  void agree(F&& setup) {
    std::exception_ptr ep;
    try {
      setup();
    } catch (...) {
      ep = std::current_exception();
    }
    const auto [code, msg] = describe(ep);
    if (size_ == 1) {
      if (ep) std::rethrow_exception(ep);
      return;
    }
    int worst = code;
    MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (worst == 0) return;
    // Every rank's (code, message) to rank 0.
    int mine[2] = {code, static_cast<int>(msg.size())};
    std::vector<int> all(rank_ == 0 ? 2 * static_cast<std::size_t>(size_) : 0);
    MPI_Gather(mine, 2, MPI_INT, all.data(), 2, MPI_INT, 0, MPI_COMM_WORLD);
    std::vector<int> len(static_cast<std::size_t>(size_)), off(static_cast<std::size_t>(size_));
    int total = 0;
    if (rank_ == 0)
      for (int r = 0; r < size_; ++r) {
        len[static_cast<std::size_t>(r)] = all[2 * static_cast<std::size_t>(r) + 1];
        off[static_cast<std::size_t>(r)] = total;
        total += len[static_cast<std::size_t>(r)];
      }
    std::string text(static_cast<std::size_t>(total), '\0');
    MPI_Gatherv(msg.data(), mine[1], MPI_CHAR, text.data(), len.data(), off.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
    agreed_failure() = true;  // this session and any enclosing one finalise instead of aborting
    // The other ranks exit 0 (nothing printed): mpirun ends the whole job as soon as one rank exits non-zero,
    // which killed rank 0 before it printed the line when another rank was faster (seen under load). The
    // job's exit status is rank 0's.
    if (rank_ != 0) throw ReportedError(0);
    std::vector<std::string> seen;
    std::string line;
    bool only_own = code != 0;
    for (int r = 0; r < size_; ++r) {
      if (all[2 * static_cast<std::size_t>(r)] == 0) continue;
      const std::string m = text.substr(static_cast<std::size_t>(off[static_cast<std::size_t>(r)]), static_cast<std::size_t>(len[static_cast<std::size_t>(r)]));
      bool dup = false;
      for (const auto& s : seen) dup = dup || s == m;
      if (dup) continue;
      seen.push_back(m);
      if (r != 0) only_own = false;
      line += (line.empty() ? "" : "; ") + (r == 0 ? m : "rank " + std::to_string(r) + ": " + m);
    }
    if (only_own && worst == code) std::rethrow_exception(ep);  // printed exactly as in a single-process run
    throw Error(line, worst);
  }

 private:
  /// Exit code (0: no error) and the message an exception would print after "<tool>: error: ", from run_cli's
  /// own mapping (cli.h, describe_failure); an internal error's message starts with "internal error: ".
  static std::pair<int, std::string> describe(const std::exception_ptr& ep) {
    if (!ep) return {0, std::string()};
    const CliFailure f = describe_failure(ep);
    return {f.exit_code == 0 ? 1 : f.exit_code, f.internal ? "internal error: " + f.message : f.message};
  }
  /// Set once every rank knows of an error (agree()): the sessions then finalise instead of aborting.
  static bool& agreed_failure() {
    static bool agreed = false;
    return agreed;
  }
  static void abort_job(int exit_code) { MPI_Abort(MPI_COMM_WORLD, exit_code); }
  int unwinding_at_start_ = 0;
  bool owner_ = false;
  int rank_ = 0, size_ = 1;
};

}  // namespace spartan::sdnn
