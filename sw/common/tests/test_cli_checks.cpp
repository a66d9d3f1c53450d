#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "spartan/common/cli_checks.h"
#include "spartan/common/error.h"

namespace fs = std::filesystem;
namespace po = boost::program_options;
using namespace spartan;

namespace {
po::parsed_options parse(const std::vector<std::string>& args, po::options_description& desc) {
  return po::command_line_parser(args).options(desc).run();
}
}  // namespace

TEST(CliChecks, RejectsNegativeValueForUnsignedOption) {
  unsigned u = 0;
  std::uint64_t seed = 0;
  int i = 0;
  po::options_description desc;
  desc.add_options()("u", po::value(&u))("seed", po::value(&seed))("i", po::value(&i));
  EXPECT_NO_THROW(check_parsed_options(parse({"--u", "3", "--seed", "18", "--i", "-4"}, desc)));
  EXPECT_THROW(check_parsed_options(parse({"--u", "-1"}, desc)), InputError);
  EXPECT_THROW(check_parsed_options(parse({"--seed=-1"}, desc)), InputError);
  try {
    check_parsed_options(parse({"--seed", " -7"}, desc));
    FAIL() << "no throw";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--seed"), std::string::npos) << e.what();
  }
}

TEST(CliChecks, RejectsPositionalArguments) {
  int i = 0;
  po::options_description desc;
  desc.add_options()("i", po::value(&i));
  EXPECT_NO_THROW(check_parsed_options(parse({"--i", "2"}, desc)));
  try {
    check_parsed_options(parse({"--i", "2", "extra_positional"}, desc));
    FAIL() << "no throw";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("extra_positional"), std::string::npos) << e.what();
  }
}

TEST(CliChecks, ThreadsRange) {
  EXPECT_NO_THROW(check_threads("--threads", 1));
  EXPECT_NO_THROW(check_threads("--threads", kMaxThreads));
  EXPECT_THROW(check_threads("--threads", 0), InputError);
  EXPECT_THROW(check_threads("--threads", -1), InputError);
  EXPECT_THROW(check_threads("--threads", 100000), InputError);
}

TEST(CliChecks, OutputFileAndDistinctOutputs) {
  const fs::path dir = fs::temp_directory_path() / ("spartan_cli_checks_" + std::to_string(::getpid()));
  fs::create_directories(dir / "adir");
  std::ofstream((dir / "blocker").string()) << "x";
  EXPECT_NO_THROW(check_output_file("--out", (dir / "new.json").string()));
  EXPECT_THROW(check_output_file("--out", ""), InputError);
  EXPECT_THROW(check_output_file("--out", (dir / "adir").string()), InputError);
  EXPECT_THROW(check_output_file("--out", (dir / "blocker" / "x.json").string()), IoError);
  EXPECT_THROW(check_output_file("--out", (dir / "missing" / "x.json").string()), IoError);
  EXPECT_NO_THROW(check_distinct_outputs({{"--a", (dir / "a").string()}, {"--b", (dir / "b").string()}, {"--c", ""}, {"--d", ""}}));
  EXPECT_THROW(check_distinct_outputs({{"--a", (dir / "x").string()}, {"--b", (dir / "adir" / ".." / "x").string()}}), InputError);
  fs::remove_all(dir);
}
