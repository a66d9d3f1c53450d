#include "spartan/hw/stats.h"

#include <stdexcept>

#include "spartan/common/atomic_file.h"

namespace spartan::hw {

std::uint64_t LatencyHistogram::bucket_low(unsigned i) noexcept {
  if (i < (1u << kSubBits)) return i;
  unsigned e = (i >> kSubBits) + kSubBits - 1;
  std::uint64_t sub = i & ((1u << kSubBits) - 1);
  return (std::uint64_t(1) << e) + (sub << (e - kSubBits));
}

std::uint64_t LatencyHistogram::bucket_width(unsigned i) noexcept {
  if (i < (1u << kSubBits)) return 1;
  unsigned e = (i >> kSubBits) + kSubBits - 1;
  return std::uint64_t(1) << (e - kSubBits);
}

std::uint64_t LatencyHistogram::percentile(double p) const noexcept {
  if (count_ == 0) return 0;
  if (p <= 0) return min_;
  if (p >= 1) return max_;
  std::uint64_t rank = std::uint64_t(p * double(count_));
  if (rank >= count_) rank = count_ - 1;
  std::uint64_t seen = 0;
  for (unsigned i = 0; i < kBuckets; ++i) {
    seen += buckets_[i];
    if (seen > rank) {
      std::uint64_t mid = bucket_low(i) + bucket_width(i) / 2;
      if (mid > max_) mid = max_;
      if (mid < min_) mid = min_;
      return mid;
    }
  }
  return max_;
}

void LatencyHistogram::merge(const LatencyHistogram& o) noexcept {
  for (unsigned i = 0; i < kBuckets; ++i) buckets_[i] += o.buckets_[i];
  count_ += o.count_;
  sum_ += o.sum_;
  if (o.count_) {
    if (o.max_ > max_) max_ = o.max_;
    if (o.min_ < min_) min_ = o.min_;
  }
}

nlohmann::json histogram_json(const LatencyHistogram& h, const std::string& unit) {
  return {{"unit", unit},          {"count", h.count()},           {"mean", h.mean()},
          {"min", h.min()},        {"p50", h.percentile(0.50)},    {"p95", h.percentile(0.95)},
          {"p99", h.percentile(0.99)}, {"max", h.max()}};
}

StatsGroup& StatsGroup::counter(const std::string& name, const std::uint64_t& ref, const std::string& desc) {
  counters_.emplace_back(name, &ref);
  if (!desc.empty()) desc_[name] = desc;
  return *this;
}
StatsGroup& StatsGroup::average(const std::string& name, const Average& ref, const std::string& desc) {
  averages_.emplace_back(name, &ref);
  if (!desc.empty()) desc_[name] = desc;
  return *this;
}
StatsGroup& StatsGroup::histogram(const std::string& name, const LatencyHistogram& ref, const std::string& unit,
                                  const std::string& desc) {
  hists_.push_back({name, Hist{&ref, unit}});
  if (!desc.empty()) desc_[name] = desc;
  return *this;
}
StatsGroup& StatsGroup::derived(const std::string& name, std::function<double()> fn, const std::string& desc) {
  derived_.emplace_back(name, std::move(fn));
  if (!desc.empty()) desc_[name] = desc;
  return *this;
}

nlohmann::json StatsGroup::to_json() const {
  nlohmann::json j;
  j["kind"] = kind_;
  for (auto& [n, c] : counters_) j[n] = *c;
  for (auto& [n, a] : averages_) j[n] = {{"mean", a->mean()}, {"count", a->count}};
  for (auto& [n, h] : hists_) j[n] = histogram_json(*h.h, h.unit);
  for (auto& [n, f] : derived_) j[n] = f();
  return j;
}

StatsGroup& StatsRegistry::add_group(const std::string& path, const std::string& kind) {
  if (by_path_.count(path)) throw std::logic_error("stats: duplicate component path '" + path + "'");
  groups_.push_back(std::make_unique<StatsGroup>(path, kind));
  by_path_[path] = groups_.back().get();
  return *groups_.back();
}

const StatsGroup* StatsRegistry::find(const std::string& path) const {
  auto it = by_path_.find(path);
  return it == by_path_.end() ? nullptr : it->second;
}

std::uint64_t StatsRegistry::total(const std::string& kind, const std::string& counter) const {
  std::uint64_t s = 0;
  for (auto& g : groups_)
    if (g->kind_ == kind)
      for (auto& [n, c] : g->counters_)
        if (n == counter) s += *c;
  return s;
}

nlohmann::json StatsRegistry::to_json() const {
  nlohmann::json comps = nlohmann::json::object(), totals = nlohmann::json::object();
  struct Acc {
    std::uint64_t instances = 0;
    std::map<std::string, std::uint64_t> counters;
    std::map<std::string, Average> averages;
    std::map<std::string, std::pair<LatencyHistogram, std::string>> hists;
  };
  std::map<std::string, Acc> acc;
  for (auto& g : groups_) {
    comps[g->path_] = g->to_json();
    Acc& a = acc[g->kind_];
    ++a.instances;
    for (auto& [n, c] : g->counters_) a.counters[n] += *c;
    for (auto& [n, av] : g->averages_) a.averages[n].merge(*av);
    for (auto& [n, h] : g->hists_) {
      auto& slot = a.hists[n];
      slot.first.merge(*h.h);
      slot.second = h.unit;
    }
  }
  for (auto& [kind, a] : acc) {
    nlohmann::json t;
    t["instances"] = a.instances;
    for (auto& [n, v] : a.counters) t[n] = v;
    for (auto& [n, v] : a.averages) t[n] = {{"mean", v.mean()}, {"count", v.count}};
    for (auto& [n, v] : a.hists) t[n] = histogram_json(v.first, v.second);
    totals[kind] = t;
  }
  return {{"components", comps}, {"totals", totals}};
}

void StatsRegistry::write_json(const std::string& file) const {
  spartan::write_file_atomic(file, to_json().dump(2) + "\n");
}

}  // namespace spartan::hw
