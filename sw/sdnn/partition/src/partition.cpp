// Hypergraph volume model, partition files, and the block / random partitioners (see partition.h).
#include "spartan/sdnn/partition.h"

#include <zlib.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <sstream>

#include "spartan/common/atomic_file.h"
#include "spartan/common/error.h"

namespace spartan::sdnn {

std::unique_ptr<Partitioner> make_zoltan_partitioner(std::uint64_t seed, double imbalance_tol);
std::unique_ptr<Partitioner> make_metis_partitioner(std::uint64_t seed, double imbalance_tol);

namespace {

void check_parts(const std::vector<Csr>& w, int parts) {
  if (w.empty()) throw InputError("partition: network has no layers");
  if (parts < 1 || parts > w[0].cols) throw InputError("partition: parts must be in [1, " + std::to_string(w[0].cols) + "], got " + std::to_string(parts));
}

class BlockPartitioner : public Partitioner {
 public:
  Partition run(const std::vector<Csr>& w, int parts) override {
    check_parts(w, parts);
    Partition p;
    p.parts = parts;
    p.neurons = w[0].cols;
    p.method = "block";
    for (std::size_t k = 0; k < w.size(); ++k) {
      // Contiguous ranges with equal vertex weight (prefix-sum split).
      const auto vw = vertex_weights(w[k]);
      const double total = static_cast<double>(std::accumulate(vw.begin(), vw.end(), std::int64_t{0}));
      std::vector<std::int32_t> part(vw.size());
      std::int64_t prefix = 0;
      for (std::size_t c = 0; c < vw.size(); ++c) {
        const double mid = static_cast<double>(prefix) + 0.5 * static_cast<double>(vw[c]);
        part[c] = std::min(parts - 1, static_cast<int>(mid * parts / total));
        prefix += vw[c];
      }
      p.part.push_back(std::move(part));
    }
    return p;
  }
};

class RandomPartitioner : public Partitioner {
 public:
  explicit RandomPartitioner(std::uint64_t seed) : seed_(seed) {}
  Partition run(const std::vector<Csr>& w, int parts) override {
    check_parts(w, parts);
    Partition p;
    p.parts = parts;
    p.neurons = w[0].cols;
    p.method = "random";
    std::mt19937_64 rng(seed_);
    for (std::size_t k = 0; k < w.size(); ++k) {
      std::vector<std::int32_t> perm(static_cast<std::size_t>(p.neurons));
      std::iota(perm.begin(), perm.end(), 0);
      // Fisher-Yates with our own index draw (std::uniform_int_distribution is implementation-defined).
      for (std::size_t i = perm.size(); i > 1; --i) std::swap(perm[i - 1], perm[rng() % i]);
      std::vector<std::int32_t> part(perm.size());
      for (std::size_t i = 0; i < perm.size(); ++i) part[perm[i]] = static_cast<std::int32_t>(i % static_cast<std::size_t>(parts));
      p.part.push_back(std::move(part));
    }
    return p;
  }

 private:
  std::uint64_t seed_;
};

void check_shape(const std::vector<Csr>& w, const Partition& p) {
  if (static_cast<int>(w.size()) != p.layers()) throw InputError("partition has " + std::to_string(p.layers()) + " layers, the network " + std::to_string(w.size()));
  for (std::size_t k = 0; k < w.size(); ++k)
    if (static_cast<std::int64_t>(p.part[k].size()) != w[k].cols)
      throw InputError("partition layer " + std::to_string(k + 1) + " has " + std::to_string(p.part[k].size()) + " neurons, the network " + std::to_string(w[k].cols));
}

}  // namespace

std::vector<std::int64_t> vertex_weights(const Csr& wk) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(wk.cols), kVectorWork);
  for (auto c : wk.col_idx) ++v[c];
  return v;
}

std::vector<std::int64_t> expand_volume(const std::vector<Csr>& w, const Partition& p) {
  check_shape(w, p);
  std::vector<std::int64_t> vol(w.size(), 0);
  std::vector<std::int64_t> stamp(static_cast<std::size_t>(p.parts), -1);
  for (std::size_t k = 1; k < w.size(); ++k) {
    const Csr& wk = w[k];
    std::int64_t v = 0;
    for (std::int64_t j = 0; j < wk.rows; ++j) {
      const std::int64_t tag = static_cast<std::int64_t>(k) * wk.rows + j;
      stamp[p.part[k - 1][j]] = tag;
      for (auto q = wk.row_ptr[j]; q < wk.row_ptr[j + 1]; ++q) {
        const auto part = p.part[k][wk.col_idx[q]];
        if (stamp[part] != tag) {
          stamp[part] = tag;
          ++v;
        }
      }
    }
    vol[k] = v;
  }
  return vol;
}

std::vector<double> layer_imbalance(const std::vector<Csr>& w, const Partition& p) {
  check_shape(w, p);
  std::vector<double> imb;
  for (std::size_t k = 0; k < w.size(); ++k) {
    const auto vw = vertex_weights(w[k]);
    std::vector<std::int64_t> load(static_cast<std::size_t>(p.parts), 0);
    std::int64_t total = 0;
    for (std::size_t c = 0; c < vw.size(); ++c) {
      load[p.part[k][c]] += vw[c];
      total += vw[c];
    }
    const double avg = static_cast<double>(total) / p.parts;
    imb.push_back(static_cast<double>(*std::max_element(load.begin(), load.end())) / avg - 1.0);
  }
  return imb;
}

void write_partition(const std::string& path, const Partition& p) {
  std::ostringstream os;
  os << "# spartan-sdnn partition v1\n"
     << "parts " << p.parts << " neurons " << p.neurons << " layers " << p.layers() << " method " << p.method << "\n";
  for (const auto& layer : p.part) {
    for (std::size_t c = 0; c < layer.size(); ++c) os << (c ? " " : "") << layer[c];
    os << "\n";
  }
  write_file_atomic(path, os.str());
}

Partition read_partition(const std::string& path) {
  std::istringstream in(read_file(path));
  std::string line;
  std::uint64_t ln = 0;
  // The magic line first: any other file (a comment, a layer file given by mistake) is refused at line 1.
  static const std::string kMagic = "# spartan-sdnn partition v1";
  if (!std::getline(in, line)) throw FormatError(path, "header", 1, "empty file, expected '" + kMagic + "'", "line");
  ++ln;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (line != kMagic)
    throw FormatError(path, "header", 1, "expected '" + kMagic + "', got '" + (line.size() > 60 ? line.substr(0, 60) + "..." : line) + "'", "line");
  auto next = [&](const char* what) {
    do {
      if (!std::getline(in, line)) throw FormatError(path, what, ln + 1, "unexpected end of file", "line");
      ++ln;
    } while (line.empty() || line[0] == '#');
  };
  next("header");
  std::istringstream hs(line);
  std::string kp, kn, kl, km;
  Partition p;
  int layers = 0;
  if (!(hs >> kp >> p.parts >> kn >> p.neurons >> kl >> layers >> km >> p.method) || kp != "parts" || kn != "neurons" || kl != "layers" || km != "method" ||
      p.parts < 1 || p.neurons < 1 || layers < 1)
    throw FormatError(path, "header", ln, "expected 'parts P neurons N layers L method M'", "line");
  if (std::string extra; hs >> extra) throw FormatError(path, "header", ln, "unexpected '" + extra + "' after the method", "line");
  {
    const auto names = partitioner_names();
    if (std::find(names.begin(), names.end(), p.method) == names.end())
      throw FormatError(path, "header", ln, "unknown method '" + p.method + "' (expected block, random, hypergraph or graph)", "line");
  }
  // Every layer line holds N part ids of >= 2 characters each: a header claiming more than the file can hold
  // is caught here, before any allocation of N entries.
  const std::size_t bytes = in.str().size();
  if (static_cast<std::uint64_t>(p.neurons) > bytes / 2 + 1)
    throw FormatError(path, "header", ln, "neurons " + std::to_string(p.neurons) + " cannot fit in a file of " + std::to_string(bytes) + " bytes", "line");
  for (int k = 0; k < layers; ++k) {
    next("layer");
    std::istringstream ls(line);
    std::vector<std::int32_t> part;
    part.reserve(static_cast<std::size_t>(p.neurons));
    // Part ids as write_partition writes them: decimal digits only ("+0", "-0" or "1e0" are malformed).
    std::string tok;
    while (ls >> tok) {
      if (tok.size() > 10 || tok.find_first_not_of("0123456789") != std::string::npos)
        throw FormatError(path, "layer " + std::to_string(k + 1), ln, "malformed part id '" + (tok.size() > 20 ? tok.substr(0, 20) + "..." : tok) + "'", "line");
      const long long x = std::stoll(tok);
      if (x >= p.parts) throw FormatError(path, "layer " + std::to_string(k + 1), ln, "part id " + std::to_string(x) + " out of range [0, " + std::to_string(p.parts) + ")", "line");
      part.push_back(static_cast<std::int32_t>(x));
    }
    if (static_cast<std::int64_t>(part.size()) != p.neurons)
      throw FormatError(path, "layer " + std::to_string(k + 1), ln, "expected " + std::to_string(p.neurons) + " part ids, got " + std::to_string(part.size()), "line");
    p.part.push_back(std::move(part));
  }
  while (std::getline(in, line)) {
    ++ln;
    if (!line.empty() && line[0] != '#')
      throw FormatError(path, "end", ln, "content after the " + std::to_string(layers) + " declared layers", "line");
  }
  return p;
}

std::unique_ptr<Partitioner> make_partitioner(const std::string& method, std::uint64_t seed, double imbalance_tol) {
  if (method == "block") return std::make_unique<BlockPartitioner>();
  if (method == "random") return std::make_unique<RandomPartitioner>(seed);
  if (method == "hypergraph") return make_zoltan_partitioner(seed, imbalance_tol);
  if (method == "graph") return make_metis_partitioner(seed, imbalance_tol);
  throw InputError("unknown partition method '" + method + "' (expected block, random, hypergraph or graph)");
}

std::vector<std::string> partitioner_names() { return {"block", "random", "hypergraph", "graph"}; }

}  // namespace spartan::sdnn
