// Per-layer activation trace for the hardware simulator (spartan-sdnn train --trace).
#pragma once
#include <string>

#include "spartan/sdnn/train.h"

namespace spartan::sdnn::cli {
/// Forwards the first `batch` rows of `data` and writes, in the project's .sptrace container
/// (traces/include/spartan/trace/sptrace.h): `it0/L0/act` (the input features) and `it0/L{k}/act` for layers
/// k = 1..L, each F32 [batch, neurons], row-major. Collective; only `write` (rank 0) writes the file.
/// Throws InputError if this build has no trace library.
void write_activation_trace(const std::string& path, Trainer& tr, const LabelledSet& data, int batch, bool write);
}  // namespace spartan::sdnn::cli
