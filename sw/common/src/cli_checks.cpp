#include "spartan/common/cli_checks.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <unistd.h>
#include <typeinfo>

#include <boost/program_options/value_semantic.hpp>

#include "spartan/common/atomic_file.h"
#include "spartan/common/error.h"

namespace spartan {
namespace po = boost::program_options;

namespace {
bool is_unsigned_type(const std::type_info& t) {
  return t == typeid(unsigned char) || t == typeid(unsigned short) || t == typeid(unsigned int) ||
         t == typeid(unsigned long) || t == typeid(unsigned long long);
}
}  // namespace

namespace {
bool store_or_help(const po::parsed_options& parsed, const po::options_description& opts, po::variables_map& vm) {
  check_parsed_options(parsed);
  po::store(parsed, vm);
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return false;
  }
  po::notify(vm);
  return true;
}
}  // namespace

bool parse_options_or_help(int argc, const char* const* argv, const po::options_description& opts, po::variables_map& vm) {
  return store_or_help(po::command_line_parser(argc, argv).options(opts).run(), opts, vm);
}

bool parse_options_or_help(const std::vector<std::string>& args, const po::options_description& opts, po::variables_map& vm) {
  return store_or_help(po::command_line_parser(args).options(opts).run(), opts, vm);
}

void check_parsed_options(const po::parsed_options& parsed) {
  for (const auto& opt : parsed.options) {
    if (opt.position_key != -1 || opt.string_key.empty()) {
      const std::string tok = opt.original_tokens.empty() ? (opt.value.empty() ? "" : opt.value[0]) : opt.original_tokens[0];
      throw InputError("unexpected argument '" + tok + "' (this command takes no positional arguments; see --help)");
    }
    for (const auto& v : opt.value) check_value_not_empty("--" + opt.string_key, v);  // every option
    if (!parsed.description) continue;
    const po::option_description* d = parsed.description->find_nothrow(opt.string_key, false);
    if (!d) continue;
    const auto* typed = dynamic_cast<const po::typed_value_base*>(d->semantic().get());
    if (!typed || !is_unsigned_type(typed->value_type())) continue;
    for (const auto& v : opt.value) {
      const auto first = v.find_first_not_of(" \t");
      if (first != std::string::npos && v[first] == '-')
        throw InputError("--" + opt.string_key + ": expected a non-negative integer, got '" + v + "'");
    }
  }
}

void check_threads(const std::string& option, std::int64_t n) {
  if (n < 1 || n > kMaxThreads)
    throw InputError(option + ": expected 1.." + std::to_string(kMaxThreads) + " threads, got " + std::to_string(n));
}

void check_output_not_directory(const std::string& option, const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(std::filesystem::status(path, ec)))
    throw InputError(option + ": '" + path + "' is an existing directory, expected a file path");
}

void check_output_file(const std::string& option, const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty()) throw InputError(option + ": empty output path");
  check_output_not_directory(option, path);
  // A device, FIFO or socket would be replaced by the rename (AtomicFile); a link is followed to its target.
  std::string target;
  try {
    target = resolve_output_file(path);
  } catch (const IoError& e) {
    throw InputError(option + ": " + e.what());
  }
  std::error_code ec;
  // The writers (AtomicFile, VCD) create no directories: the file's directory must exist and be writable.
  const fs::path parent = fs::path(target).parent_path();
  const std::string dir = parent.empty() ? std::string(".") : parent.string();
  const fs::file_status st = fs::status(dir, ec);
  if (!fs::exists(st)) throw IoError(option + ": " + path + ": directory '" + dir + "' does not exist");
  if (!fs::is_directory(st)) throw IoError(option + ": " + path + ": '" + dir + "' is not a directory");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw IoError(option + ": " + path + ": cannot write in directory '" + dir + "': " + std::strerror(errno));
}

std::filesystem::path comparable_path(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path a = fs::absolute(path, ec);
  fs::path c = ec ? fs::path(path) : fs::weakly_canonical(a, ec);
  if (ec) c = a;
  c = c.lexically_normal();
  while (!c.has_filename() && c.has_relative_path()) c = c.parent_path();
  return c;
}

void check_value_not_empty(const std::string& option, const std::string& value) {
  if (value.empty()) throw InputError(option + ": empty value (an unset shell variable?); leave the option out instead");
}

void check_distinct_outputs(const std::vector<std::pair<std::string, std::string>>& outputs) {
  namespace fs = std::filesystem;
  std::vector<std::pair<std::string, fs::path>> seen;
  for (const auto& [option, path] : outputs) {
    if (path.empty()) continue;
    const fs::path canon = comparable_path(path);
    for (const auto& [other, p] : seen)
      if (p == canon)
        throw InputError(other + " and " + option + " name the same output file '" + path + "'");
    seen.emplace_back(option, canon);
  }
}

void check_outputs_not_inputs(const std::vector<std::pair<std::string, std::string>>& outputs,
                              const std::vector<std::pair<std::string, std::string>>& inputs, bool missing_inputs_too) {
  namespace fs = std::filesystem;
  for (const auto& [in_opt, in_path] : inputs) {
    if (in_path.empty()) continue;
    std::error_code ec;
    const bool exists = fs::exists(in_path, ec);
    if (!exists && !missing_inputs_too) continue;
    const fs::path ci = comparable_path(in_path);
    for (const auto& [out_opt, out_path] : outputs) {
      if (out_path.empty()) continue;
      bool same = comparable_path(out_path) == ci;
      if (!same && exists && fs::exists(out_path, ec)) same = fs::equivalent(out_path, in_path, ec) && !ec;
      if (same && exists)
        throw InputError(out_opt + ": '" + out_path + "' is the input of " + in_opt +
                         " (refusing to overwrite a file this run reads)");
      if (same)
        throw InputError(out_opt + ": '" + out_path + "' is an input name of " + in_opt +
                         " (a later run would read it as that input)");
    }
  }
}

std::uint64_t parse_decimal_u64(const std::string& text, const std::string& what, const std::string& expected) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
    throw InputError(what + ": expected " + expected + ", got '" + text + "'");
  std::uint64_t v = 0;
  for (char c : text) {
    const std::uint64_t d = std::uint64_t(c - '0');
    if (v > (~std::uint64_t(0) - d) / 10) throw InputError(what + ": '" + text + "' is beyond 2^64 - 1");
    v = v * 10 + d;
  }
  return v;
}

std::vector<std::uint64_t> parse_decimal_list(const std::string& text, const std::string& what) {
  const std::string expected = "a comma-separated list of whole numbers >= 0 (decimal digits only)";
  if (text.empty()) throw InputError(what + ": empty list");
  std::vector<std::uint64_t> v;
  std::size_t start = 0;
  for (;;) {
    const std::size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (item.empty()) throw InputError(what + ": expected " + expected + ", got '" + text + "'");
    const std::uint64_t x = parse_decimal_u64(item, what, expected + " (in '" + text + "')");
    for (std::uint64_t y : v)
      if (y == x) throw InputError(what + ": " + std::to_string(x) + " is listed twice in '" + text + "'");
    v.push_back(x);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return v;
}

std::pair<std::uint64_t, std::uint64_t> parse_decimal_range(const std::string& text, const std::string& what) {
  const std::string expected = "FROM:TO, two whole numbers (decimal digits only) with FROM < TO";
  const std::size_t colon = text.find(':');
  if (colon == std::string::npos) throw InputError(what + ": expected " + expected + ", got '" + text + "'");
  const std::uint64_t from = parse_decimal_u64(text.substr(0, colon), what, expected + " (in '" + text + "')");
  const std::uint64_t to = parse_decimal_u64(text.substr(colon + 1), what, expected + " (in '" + text + "')");
  if (from >= to) throw InputError(what + ": expected " + expected + ", got '" + text + "' (FROM >= TO)");
  return {from, to};
}

}  // namespace spartan
