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

// An empty value is refused for every option type (an unset shell variable), in both spellings; an option
// without a value (a switch) is not affected.
TEST(CliChecks, RejectsEmptyValues) {
  std::string out;
  int i = 0;
  bool q = false;
  po::options_description desc;
  desc.add_options()("out", po::value(&out))("i", po::value(&i))("quiet", po::bool_switch(&q));
  EXPECT_NO_THROW(check_parsed_options(parse({"--out", "x.json", "--quiet"}, desc)));
  // (`--out=` Boost.Program_options refuses itself.)
  for (const auto& args : std::vector<std::vector<std::string>>{{"--out", ""}, {"--i", ""}, {"--quiet", "--out", ""}}) {
    try {
      check_parsed_options(parse(args, desc));
      FAIL() << "no throw for " << args[0];
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("empty value"), std::string::npos) << e.what();
    }
  }
}

TEST(CliChecks, ParseOptionsOrHelp) {
  // Both overloads: --help short-circuits before the required check (prints, returns false); otherwise
  // notify runs (required options enforced, values stored) and the checks of check_parsed_options apply.
  int n = 0;
  unsigned u = 0;
  po::options_description desc;
  desc.add_options()("help,h", "help")("n", po::value(&n)->required())("u", po::value(&u));
  {
    po::variables_map vm;
    testing::internal::CaptureStdout();
    EXPECT_FALSE(parse_options_or_help(std::vector<std::string>{"--help"}, desc, vm));
    EXPECT_NE(testing::internal::GetCapturedStdout().find("--help"), std::string::npos);
    EXPECT_EQ(n, 0);
  }
  {
    po::variables_map vm;
    EXPECT_TRUE(parse_options_or_help(std::vector<std::string>{"--n", "7", "--u", "3"}, desc, vm));
    EXPECT_EQ(n, 7);
    EXPECT_EQ(u, 3u);
  }
  {
    po::variables_map vm;
    EXPECT_THROW(parse_options_or_help(std::vector<std::string>{"--u", "3"}, desc, vm), po::required_option);
  }
  {
    po::variables_map vm;
    EXPECT_THROW(parse_options_or_help(std::vector<std::string>{"--n", "1", "--u", "-2"}, desc, vm), InputError);
  }
  {
    po::variables_map vm;
    const char* argv[] = {"tool", "-h"};
    testing::internal::CaptureStdout();
    EXPECT_FALSE(parse_options_or_help(2, argv, desc, vm));
    testing::internal::GetCapturedStdout();
    po::variables_map vm2;
    const char* argv2[] = {"tool", "--n", "5", "stray"};
    EXPECT_THROW(parse_options_or_help(4, argv2, desc, vm2), InputError);
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
  // a device would be replaced by the atomic rename: refused up front, naming the option
  try {
    check_output_file("--out-json", "/dev/null");
    ADD_FAILURE() << "/dev/null accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--out-json: /dev/null: is a device", 0), 0u) << e.what();
  }
  EXPECT_NO_THROW(check_distinct_outputs({{"--a", (dir / "a").string()}, {"--b", (dir / "b").string()}, {"--c", ""}, {"--d", ""}}));
  EXPECT_THROW(check_distinct_outputs({{"--a", (dir / "x").string()}, {"--b", (dir / "adir" / ".." / "x").string()}}), InputError);
  fs::remove_all(dir);
}

TEST(CliChecks, OutputsNotInputs) {
  const fs::path dir = fs::temp_directory_path() / ("spartan_cli_inout_" + std::to_string(::getpid()));
  fs::create_directories(dir / "sub");
  const std::string in = (dir / "in.sptrace").string();
  std::ofstream(in) << "x";
  fs::create_symlink(in, dir / "link.sptrace");
  fs::create_hard_link(in, dir / "hard.sptrace");
  const std::vector<std::pair<std::string, std::string>> inputs = {{"--trace", in}, {"--units", ""},
                                                                   {"--gpu", (dir / "missing.yaml").string()}};
  EXPECT_NO_THROW(check_outputs_not_inputs({{"--out", (dir / "out.json").string()}, {"--wave", ""}}, inputs));
  EXPECT_THROW(check_outputs_not_inputs({{"--out", in}}, inputs), InputError);
  EXPECT_THROW(check_outputs_not_inputs({{"--out", (dir / "sub" / ".." / "in.sptrace").string()}}, inputs), InputError);
  EXPECT_THROW(check_outputs_not_inputs({{"--wave", (dir / "link.sptrace").string()}}, inputs), InputError);
  EXPECT_THROW(check_outputs_not_inputs({{"--wave", (dir / "hard.sptrace").string()}}, inputs), InputError);
  try {
    check_outputs_not_inputs({{"--out-json", in}}, inputs);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--out-json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--trace"), std::string::npos) << e.what();
  }
  // A missing output file that would be a missing input is no conflict (nothing is read from it).
  EXPECT_NO_THROW(check_outputs_not_inputs({{"--out", (dir / "missing.yaml").string()}}, inputs));
  // Unless missing input names count (a dataset read raw or gzipped: the next run would read that output).
  try {
    check_outputs_not_inputs({{"--out", (dir / "sub" / ".." / "missing.yaml").string()}}, inputs, true);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("is an input name of --gpu"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(check_outputs_not_inputs({{"--out", (dir / "out.json").string()}}, inputs, true));
  EXPECT_THROW(check_outputs_not_inputs({{"--out", in}}, inputs, true), InputError);
  fs::remove_all(dir);
}

// The strict decimal parsers of the list and window options (spartan-sim run, rtl-check): digits only.
TEST(CliChecks, DecimalListsAndRanges) {
  EXPECT_EQ(parse_decimal_u64("0", "--x", "n"), 0u);
  EXPECT_EQ(parse_decimal_u64("18446744073709551615", "--x", "n"), ~std::uint64_t(0));
  for (const char* bad : {"", " 1", "+1", "-0", "1e3", "0x10", "1 ", "1.0", "18446744073709551616", "99999999999999999999"})
    EXPECT_THROW(parse_decimal_u64(bad, "--x", "n"), InputError) << bad;
  EXPECT_EQ(parse_decimal_list("3,0,12", "--layers"), (std::vector<std::uint64_t>{3, 0, 12}));
  for (const char* bad : {"", ",", "1,", ",1", "1,,2", "1,1", "1, 2", "+1", "a,b"})
    EXPECT_THROW(parse_decimal_list(bad, "--layers"), InputError) << bad;
  EXPECT_EQ(parse_decimal_range("100:200", "--w"), (std::pair<std::uint64_t, std::uint64_t>{100, 200}));
  EXPECT_EQ(parse_decimal_range("0:18446744073709551615", "--w").second, ~std::uint64_t(0));
  for (const char* bad : {"", "5:5", "9:3", "1:", ":2", "0x0:10", "0:1e3", "-1:5", "0:99999999999999999999", "1:2:3"})
    EXPECT_THROW(parse_decimal_range(bad, "--w"), InputError) << bad;
  try {
    parse_decimal_list("1,1", "--layers");
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("1 is listed twice"), std::string::npos) << e.what();
  }
}

// One comparable form for every spelling of a path (the output checks and spartan-area's --keep-work check).
TEST(CliChecks, ComparablePath) {
  const fs::path dir = fs::temp_directory_path() / ("spartan_cmp_" + std::to_string(::getpid()));
  fs::create_directories(dir / "sub");
  const fs::path want = comparable_path((dir / "new").string());
  for (const std::string& p : {(dir / "new").string() + "/", (dir / "new").string() + "/.", (dir / "sub" / ".." / "new").string()})
    EXPECT_EQ(comparable_path(p), want) << p;
  EXPECT_EQ(comparable_path((dir / "sub").string() + "/"), comparable_path((dir / "sub").string()));
  EXPECT_TRUE(comparable_path("x").is_absolute());
  EXPECT_EQ(comparable_path("/"), fs::path("/"));
  fs::remove_all(dir);
}
