// `spartan-sdnn infer --partition FILE` under mpirun (see dist.h).
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>

#include "spartan/common/atomic_file.h"
#include "spartan/common/error.h"
#include "spartan/sdnn/dist.h"
#include "spartan/sdnn/infer.h"
#include "spartan/sdnn/mpi_session.h"

namespace spartan::sdnn {

int dist_infer_main(const std::string& weights, int layers, const std::string& features, float bias, const std::string& partition,
                    const std::string& cats_out, int images_per_pass, bool verify) {
  if (images_per_pass < 1) throw InputError("--batch must be >= 1 (images per forward pass)");
  MpiSession mpi;
  const int rank = mpi.rank(), size = mpi.size();
  std::vector<Csr> w;
  Csr y0;
  Partition part;
  std::unique_ptr<DistEngine> engine;
  // Every rank reads the same inputs: an error in them is found by all and printed once (by rank 0).
  mpi.agree([&] {
    w = load_weights(weights, layers);
    y0 = load_features(features, w.front().rows);
    part = read_partition(partition);
    engine = std::make_unique<DistEngine>(w, part, rank, size, true);
  });
  DistEngine& eng = *engine;
  eng.set_keep_activations(false);
  std::vector<std::vector<float>> b(w.size());
  for (std::size_t k = 0; k < w.size(); ++k) b[k].assign(eng.plan()[k].out.size(), bias);
  const std::int64_t images = y0.rows;
  double secs = 0;  // forward passes only (as before batching); the gathers to rank 0 are not timed
  std::vector<Triple> out;
  for (std::int64_t row0 = 0; row0 < images; row0 += images_per_pass) {
    const int nb = static_cast<int>(std::min<std::int64_t>(images_per_pass, images - row0));
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    eng.forward(y0, row0, nb, b, 32.0f);
    MPI_Barrier(MPI_COMM_WORLD);
    secs += MPI_Wtime() - t0;
    const Csr yb = eng.gather_output(nb);
    if (rank == 0)
      for (std::int64_t r = 0; r < yb.rows; ++r)
        for (auto q = yb.row_ptr[r]; q < yb.row_ptr[r + 1]; ++q) out.push_back({row0 + r, yb.col_idx[q], yb.values[q]});
  }
  const Csr y = rank == 0 ? csr_from_triples(images, w.front().rows, std::move(out)) : Csr{};
  unsigned long long mine = eng.counters().expand_bytes, measured = 0;
  MPI_Reduce(&mine, &measured, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  int rc = 0;
  if (rank == 0) {
    const auto vol = expand_volume(w, part);
    unsigned long long entries = 0;
    for (auto v : vol) entries += static_cast<unsigned long long>(v);
    const unsigned long long predicted = entries * static_cast<unsigned long long>(images) * sizeof(float);
    const auto cats = categories(y);
    // The checks first, the categories file after them: a run whose volume or --verify check fails exits 1 and
    // leaves no categories file (before, the file was written first; fresh-eyes review of the thirty-seventh
    // session), and a file that cannot be written (exit 2) prints no results.
    if (predicted != measured) rc = 1;
    std::string verify_line;
    if (verify) {
      const Csr ref = infer(y0, w, bias);
      const auto rcats = categories(ref);
      const bool same_structure = ref.row_ptr == y.row_ptr && ref.col_idx == y.col_idx;
      const double maxdiff = max_abs_difference(ref, y);
      const bool ok = rcats == cats && same_structure && maxdiff <= 1e-4;
      char buf[256];
      std::snprintf(buf, sizeof buf, "verify vs shared-memory inference: categories %s, activation structure %s, max |diff| %.3g: %s\n",
                    rcats == cats ? "identical" : "DIFFER", same_structure ? "identical" : "DIFFERS", maxdiff, ok ? "OK" : "FAILED");
      verify_line = buf;
      if (!ok) rc = 1;
    }
    if (!cats_out.empty() && rc == 0) {
      std::string list;
      for (auto c : cats) list += std::to_string(c + 1) + "\n";
      write_file_atomic(cats_out, list);
    }
    std::printf("ranks %d partition %s (%s)\n", size, partition.c_str(), part.method.c_str());
    std::printf("categories: %zu of %lld images\n", cats.size(), static_cast<long long>(y0.rows));
    std::printf("category rows (1-based):");
    for (auto c : cats) std::printf(" %lld", static_cast<long long>(c + 1));
    std::printf("\n");
    std::printf("time_s %.6f throughput %.4g images*edges/s\n", secs, throughput_image_edges_per_s(images, total_edges(w), secs));
    std::printf("expand volume: predicted %llu bytes (connectivity-1 %llu entries x %lld images x 4 bytes), measured %llu bytes: %s\n", predicted,
                entries, static_cast<long long>(images), measured, predicted == measured ? "EQUAL" : "MISMATCH");
    std::fputs(verify_line.c_str(), stdout);
    if (rc != 0 && !cats_out.empty())
      std::fprintf(stderr, "spartan-sdnn: the run failed its checks: %s not written\n", cats_out.c_str());
  }
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return rc;
}

}  // namespace spartan::sdnn
