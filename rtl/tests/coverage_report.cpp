// Coverage build of the RTL monitor tests: after all tests, merges the per-model coverage files written in
// $SPARTAN_RTL_COVERAGE_DIR (Verilator --coverage: line = every block/branch of the RTL, incl. each FSM
// case item; toggle = every signal bit 0->1 and 1->0) and prints the coverage per kind and per module.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

namespace {

// One coverage record line: C '<key/value pairs separated by \001 and \002>' <count>
bool parse(const std::string& line, std::string& key, std::string& type, std::string& module, std::uint64_t& count) {
  if (line.size() < 4 || line[0] != 'C') return false;
  const auto q1 = line.find('\'');
  const auto q2 = line.rfind('\'');
  if (q1 == std::string::npos || q2 <= q1) return false;
  key = line.substr(q1 + 1, q2 - q1 - 1);
  count = std::strtoull(line.c_str() + q2 + 1, nullptr, 10);
  std::map<std::string, std::string> kv;
  std::size_t i = 0;
  while (i < key.size()) {
    const auto a = key.find('\001', i);
    if (a == std::string::npos) break;
    const auto b = key.find('\002', a);
    if (b == std::string::npos) break;
    const auto c = key.find('\001', b);
    kv[key.substr(a + 1, b - a - 1)] = key.substr(b + 1, c == std::string::npos ? std::string::npos : c - b - 1);
    i = b;
  }
  const std::string page = kv["page"];  // e.g. v_line/sparsity_monitor
  const auto slash = page.find('/');
  type = page.substr(0, slash);
  module = slash == std::string::npos ? "?" : page.substr(slash + 1);
  return true;
}

class CoverageReport : public ::testing::Environment {
 public:
  void TearDown() override {
    const char* dir = std::getenv("SPARTAN_RTL_COVERAGE_DIR");
    if (dir == nullptr) return;
    std::map<std::string, std::uint64_t> hits;            // key -> merged count
    std::map<std::string, std::pair<std::string, std::string>> where;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      std::ifstream in(e.path());
      std::string line, key, type, module;
      std::uint64_t c = 0;
      while (std::getline(in, line))
        if (parse(line, key, type, module, c)) {
          hits[key] += c;
          where[key] = {type, module};
        }
    }
    std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> by_type, by_mod;
    for (const auto& [k, c] : hits) {
      const auto& [type, module] = where[k];
      auto& t = by_type[type];
      auto& m = by_mod[type + " " + module];
      ++t.second;
      ++m.second;
      if (c > 0) {
        ++t.first;
        ++m.first;
      }
    }
    std::printf("RTL coverage (Verilator --coverage, all tests merged):\n");
    for (const auto& [t, v] : by_type)
      std::printf("  %-10s %6llu / %6llu = %5.1f%%\n", t.c_str(), (unsigned long long)v.first,
                  (unsigned long long)v.second, v.second ? 100.0 * v.first / v.second : 0.0);
    for (const auto& [m, v] : by_mod)
      std::printf("    %-40s %6llu / %6llu = %5.1f%%\n", m.c_str(), (unsigned long long)v.first,
                  (unsigned long long)v.second, v.second ? 100.0 * v.first / v.second : 0.0);
    EXPECT_FALSE(hits.empty()) << "no coverage data in " << dir;
  }
};

const auto* const kReport = ::testing::AddGlobalTestEnvironment(new CoverageReport);

}  // namespace
