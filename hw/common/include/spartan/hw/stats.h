// Statistics of the hardware models: counters, averages and latency histograms that each component owns
// in a stats struct and registers BY REFERENCE with one StatsRegistry per run. The registry reads them
// only when dumping (no per-event cost beyond the component's own increment), and writes one JSON
// document with every component and per-kind totals. Pattern after Ramulator 2 / gem5 stats groups.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace spartan::hw {

/// Running mean of a quantity (sum and count kept exactly; the mean is computed when read).
struct Average {
  double sum = 0.0;
  std::uint64_t count = 0;
  void add(double v) noexcept { sum += v; ++count; }
  double mean() const noexcept { return count ? sum / double(count) : 0.0; }
  void merge(const Average& o) noexcept { sum += o.sum; count += o.count; }
};

/// Log-linear histogram of non-negative integers (latencies in ps, say): exact below 16, above that
/// 16 sub-buckets per power of two, so a percentile is within 1/16 (6.25%) of the true value (the
/// HdrHistogram idea with 4 significant bits). Fixed 1 KiB-entry layout, so histograms merge by addition.
class LatencyHistogram {
 public:
  static constexpr unsigned kSubBits = 4;
  static constexpr unsigned kBuckets = (64 - kSubBits + 1) << kSubBits;

  void add(std::uint64_t v) noexcept {
    ++buckets_[index(v)];
    ++count_;
    sum_ += double(v);
    if (v > max_) max_ = v;
    if (v < min_) min_ = v;
  }
  std::uint64_t count() const noexcept { return count_; }
  double mean() const noexcept { return count_ ? sum_ / double(count_) : 0.0; }
  std::uint64_t max() const noexcept { return count_ ? max_ : 0; }
  std::uint64_t min() const noexcept { return count_ ? min_ : 0; }
  /// Value below which a fraction `p` (0..1) of the samples lie (bucket midpoint; 0 when empty).
  std::uint64_t percentile(double p) const noexcept;
  void merge(const LatencyHistogram& o) noexcept;
  static unsigned index(std::uint64_t v) noexcept {  // inline: every modelled request adds samples
    if (v < (1u << kSubBits)) return unsigned(v);
    unsigned e = 63u - unsigned(__builtin_clzll(v));  // floor(log2 v) >= kSubBits
    unsigned sub = unsigned(v >> (e - kSubBits)) & ((1u << kSubBits) - 1);
    return ((e - kSubBits + 1) << kSubBits) + sub;
  }
  /// Smallest value that maps to bucket `i`, and the bucket's width.
  static std::uint64_t bucket_low(unsigned i) noexcept;
  static std::uint64_t bucket_width(unsigned i) noexcept;

 private:
  std::vector<std::uint64_t> buckets_ = std::vector<std::uint64_t>(kBuckets, 0);
  std::uint64_t count_ = 0, max_ = 0, min_ = UINT64_MAX;
  double sum_ = 0.0;
};

/// The stats of one component instance (e.g. "l2[3]"), as references into its stats struct.
class StatsGroup {
 public:
  StatsGroup(std::string path, std::string kind) : path_(std::move(path)), kind_(std::move(kind)) {}
  StatsGroup& counter(const std::string& name, const std::uint64_t& ref, const std::string& desc = "");
  StatsGroup& average(const std::string& name, const Average& ref, const std::string& desc = "");
  /// `unit` names the histogram's unit (e.g. "ps"); dumped as mean/p50/p95/p99/max.
  StatsGroup& histogram(const std::string& name, const LatencyHistogram& ref, const std::string& unit,
                        const std::string& desc = "");
  /// A value derived when dumping (e.g. hit rate); not summed into totals.
  StatsGroup& derived(const std::string& name, std::function<double()> fn, const std::string& desc = "");

  const std::string& path() const { return path_; }
  const std::string& kind() const { return kind_; }
  nlohmann::json to_json() const;

 private:
  friend class StatsRegistry;
  struct Hist { const LatencyHistogram* h; std::string unit; };
  std::string path_, kind_;
  std::vector<std::pair<std::string, const std::uint64_t*>> counters_;
  std::vector<std::pair<std::string, const Average*>> averages_;
  std::vector<std::pair<std::string, Hist>> hists_;
  std::vector<std::pair<std::string, std::function<double()>>> derived_;
  std::map<std::string, std::string> desc_;
};

/// All stats of one run. Components call add_group() in their constructor; the referenced structs must
/// outlive the registry's last dump. Throws std::logic_error on a duplicate path (a wiring bug).
class StatsRegistry {
 public:
  StatsGroup& add_group(const std::string& path, const std::string& kind);
  const StatsGroup* find(const std::string& path) const;
  /// {"components": {path: {kind, counters..., averages..., histograms...}},
  ///  "totals": {kind: {instances, summed counters, merged averages and histograms}}}
  nlohmann::json to_json() const;
  /// Writes to_json() (indented) atomically; throws spartan::IoError.
  void write_json(const std::string& file) const;
  /// Sum of one counter over all groups of `kind` (0 if none has it).
  std::uint64_t total(const std::string& kind, const std::string& counter) const;

 private:
  std::vector<std::unique_ptr<StatsGroup>> groups_;
  std::map<std::string, StatsGroup*> by_path_;
};

/// JSON summary of a histogram: count, mean, min, p50, p95, p99, max (in `unit`).
nlohmann::json histogram_json(const LatencyHistogram& h, const std::string& unit);

}  // namespace spartan::hw
