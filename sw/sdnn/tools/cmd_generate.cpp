// spartan-sdnn generate: write a RadiX-Net-style network as MatrixMarket files.
#include <boost/program_options.hpp>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <new>
#include <regex>
#include <sstream>

#include "commands.h"
#include "spartan/common/atomic_file.h"
#include "spartan/common/cli_checks.h"
#include "spartan/common/error.h"
#include "spartan/sdnn/generate.h"
#include "spartan/sdnn/sparse.h"

namespace po = boost::program_options;

namespace spartan::sdnn::cli {

int cmd_generate(const std::vector<std::string>& args) {
  RadixNetSpec spec;
  std::string radices, out;
  po::options_description desc("spartan-sdnn generate options");
  desc.add_options()("help,h", "show this help")("neurons", po::value(&spec.neurons)->default_value(1024), "neurons per layer (1024..65536 in the challenge)")(
      "layers", po::value(&spec.layers)->default_value(120), "layers (120..1920 in the challenge)")(
      "radices", po::value(&radices), "mixed radix list, e.g. 8,8,4 (product divides N; D = N / product); default: uniform radix with r x D = nnz-per-row")(
      "nnz-per-row", po::value(&spec.nnz_per_row)->default_value(32), "non-zeros per row and column when --radices is not given")(
      "permute-every", po::value(&spec.permute_every)->default_value(4), "fresh seeded column permutation every this many layers (>= 0; 0 = never)")(
      "seed", po::value(&spec.seed)->default_value(1), "seed")("init", po::value(&spec.init)->default_value("challenge"), "challenge (1/16) | he (N(0, 2/fan_in)) | identity (I + 0.1 x He)")(
      "out", po::value(&out)->required(), "output directory (created); files n{N}-l{k}.mtx.gz");
  po::variables_map vm;
  if (!spartan::parse_options_or_help(args, desc, vm)) return 0;
  if (spec.permute_every < 0) throw InputError("--permute-every must be >= 0 (0 = never), got " + std::to_string(spec.permute_every));

  if (!radices.empty()) {
    std::stringstream ss(radices);
    std::string tok;
    while (std::getline(ss, tok, ',')) {
      std::size_t used = 0;
      int r = 0;
      try {
        r = std::stoi(tok, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != tok.size()) throw InputError("--radices: '" + tok + "' is not an integer");
      spec.radices.push_back(r);
    }
  }
  // --out: a clear message naming the option (not a raw filesystem error); the directory is created only
  // once the spec has been validated, so that bad input leaves nothing behind.
  std::error_code ec;
  if (std::filesystem::exists(out, ec) && !std::filesystem::is_directory(out, ec))
    throw InputError("--out: '" + out + "' exists and is not a directory");
  // Layer files of another network that this run would not overwrite (higher layers, another N, .tsv) would
  // be read with the new ones as one network: refuse. The same command run again overwrites its own files.
  if (std::filesystem::is_directory(out, ec)) {
    const auto ours = [&](const std::string& name) {
      for (int k = 1; k <= spec.layers; ++k)
        if (name == "n" + std::to_string(spec.neurons) + "-l" + std::to_string(k) + ".mtx.gz") return true;
      return false;
    };
    for (const auto& e : std::filesystem::directory_iterator(out, ec)) {
      const std::string name = e.path().filename().string();
      static const std::regex layer_file(R"(.*-l[0-9]+\.(mtx|tsv)(\.gz)?)");  // find_layer_file's names
      if (std::regex_match(name, layer_file) && !ours(name))
        throw InputError("--out: '" + out + "' holds " + name + ", which this run would not overwrite (another network's layer): " +
                         "use an empty or new directory");
    }
  }
  // Streamed (new-user review: the whole network was built in memory before anything was written, ~32 MB a
  // layer at 65536 neurons, ~60 GB for the 65536 x 1920 challenge size): one layer at a time is generated,
  // serialised into its AtomicFile temporary (`<file>.tmp.<pid>`, synced and closed) and freed. The files are
  // renamed to their names only after the last layer, so a failed run leaves no layer file, and no new
  // directory (the output is byte-identical to the in-memory version for the same spec).
  RadixNetGenerator gen(spec);  // validates the spec before anything is created
  const bool created = !std::filesystem::exists(out, ec);
  std::filesystem::create_directories(out, ec);
  if (ec) throw IoError("--out: cannot create directory '" + out + "': " + ec.message());
  struct RemoveIfCreated {  // a failed run removes the directory it created (empty: the temporaries are gone)
    const std::string& dir;
    bool armed;
    ~RemoveIfCreated() {
      std::error_code e;
      if (armed) std::filesystem::remove(dir, e);
    }
  };
  std::int64_t edges = 0;
  {
    RemoveIfCreated guard{out, created};
    std::vector<std::unique_ptr<AtomicFile>> files;  // destroyed (temporaries removed) before the guard runs
    files.reserve(static_cast<std::size_t>(spec.layers));
    while (!gen.done()) {
      const int k = gen.layer();
      const std::string path = out + "/n" + std::to_string(spec.neurons) + "-l" + std::to_string(k + 1) + ".mtx.gz";
      try {
        const Csr layer = gen.next();
        edges += layer.nnz();
        auto f = std::make_unique<AtomicFile>(path);
        f->write(matrix_market_bytes(layer, true));
        f->sync();
        files.push_back(std::move(f));
      } catch (const std::bad_alloc&) {
        // A lower bound: CSR (8 bytes a non-zero) + the triples it is built from (16) + the text (~26); the text's
        // copies and the deflate buffer come on top.
        const std::int64_t nnz = gen.layer_nnz(k);
        throw Error("out of memory generating layer " + std::to_string(k + 1) + " (" + std::to_string(spec.neurons) + " x " +
                        std::to_string(spec.neurons) + ", " + std::to_string(nnz) + " non-zeros: at least about " +
                        std::to_string((nnz * 50 + (1 << 20) - 1) >> 20) + " MiB for the layer and its file)",
                    2);
      }
    }
    for (auto& f : files) f->commit();
    guard.armed = false;
  }
  std::printf("wrote %d layers of %lld neurons (%lld edges, %.1f nnz per row) to %s\n", spec.layers, static_cast<long long>(spec.neurons),
              static_cast<long long>(edges), static_cast<double>(edges) / static_cast<double>(spec.neurons * spec.layers), out.c_str());
  return 0;
}

}  // namespace spartan::sdnn::cli
