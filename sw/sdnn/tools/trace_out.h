// Per-layer activation trace for the hardware simulator (spartan-sdnn train --trace).
#pragma once
#include <string>

#include "spartan/sdnn/train.h"

namespace spartan::sdnn::cli {
/// Forwards the first `batch` rows of `data` and writes them as training step `iteration` in the project's
/// .sptrace container (docs/trace-format.md): for body layer k = 0..L-1 `it{i}/L{k}/act` (its input, F32
/// [batch, N]; layer 0 = the features) and `it{i}/L{k}/dz_mask` (bit-packed 0 < y < ymax of its output); the
/// softmax head is layer L (`act` = last body output). Required metadata (format_version, model, dataset,
/// device, seed, batch, layers) are written. Collective; only `write` (rank 0) writes the file.
/// Throws InputError if this build has no trace library.
void write_activation_trace(const std::string& path, Trainer& tr, const LabelledSet& data, int batch, bool write, std::int64_t iteration,
                            std::uint64_t seed, const std::string& model);
}  // namespace spartan::sdnn::cli
