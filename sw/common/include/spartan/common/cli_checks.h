// Up-front checks of command-line values shared by the project's executables (issue 12,
// docs/reliability.md): every bad value is rejected before the long work starts, with one clear line.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/parsers.hpp>
#include <boost/program_options/variables_map.hpp>

namespace spartan {

/// Largest accepted --threads value of every tool (1..kMaxThreads). A worker pool beyond this is far past the
/// cores of any node the tools target and only exhausts stacks/memory.
constexpr std::int64_t kMaxThreads = 1024;

/// Checks a parsed command line before it is stored: throws InputError for a positional argument (none of the
/// tools takes one), for an empty value of any option (`--out ''`: an unset shell variable, not "not given"),
/// and for a value starting with '-' given to an option of unsigned type (Boost.Program_options would otherwise
/// wrap "-1" to 2^32-1 or 2^64-1).
void check_parsed_options(const boost::program_options::parsed_options& parsed);

/// Parses argv[1..argc) against `opts` (check_parsed_options, then store). With --help/-h (an option named
/// "help" in `opts`) prints `opts` to stdout and returns false: the caller exits 0. Otherwise runs notify
/// (required options, value storage) and returns true. Throws InputError / Boost.Program_options errors.
bool parse_options_or_help(int argc, const char* const* argv, const boost::program_options::options_description& opts,
                           boost::program_options::variables_map& vm);

/// The same for the arguments of a sub-command (`spartan-sim run ...`, `spartan-sdnn train ...`): `args`
/// excludes the program and sub-command names.
bool parse_options_or_help(const std::vector<std::string>& args, const boost::program_options::options_description& opts,
                           boost::program_options::variables_map& vm);

/// Throws InputError unless 1 <= n <= kMaxThreads; `option` names the flag (e.g. "--threads").
void check_threads(const std::string& option, std::int64_t n);

/// Throws InputError naming `option` when the output FILE `path` is an existing directory (for files to be
/// written into an output directory that may not exist yet; check_output_file also checks the directory).
void check_output_not_directory(const std::string& option, const std::string& path);

/// Checks, creating nothing, that the output FILE `path` of `option` can be written: not empty, not an
/// existing directory, and its directory exists and is writable (AtomicFile creates no directories).
/// Throws InputError (empty path, existing directory) or IoError, naming the option and the path.
void check_output_file(const std::string& option, const std::string& path);

/// `path` in a form two spellings of one file or directory compare equal in: absolute, symbolic links of its
/// existing part resolved (std::filesystem::weakly_canonical), "." and ".." folded, and no trailing separator
/// ("r/" and "r/." are "r": weakly_canonical keeps them for a path that does not exist yet). Never throws: if
/// the resolution fails, the lexically normal absolute path.
std::filesystem::path comparable_path(const std::string& path);

/// An explicitly given empty `value` of `option` (`--out "$UNSET"`): throws InputError "<option>: empty value
/// ...". Taken as "not given" it made tools skip an output without a word (fortieth session's new-user review).
void check_value_not_empty(const std::string& option, const std::string& value);

/// Throws InputError when two of the given (option, path) outputs name the same file (compared as
/// weakly-canonical absolute paths). Empty paths (output not requested) are ignored.
void check_distinct_outputs(const std::vector<std::pair<std::string, std::string>>& outputs);

/// Throws InputError when an output (option, path) names the same file as an input (option, path): the same
/// weakly-canonical path, or both exist and are std::filesystem::equivalent (hard or symbolic links). Writing
/// would replace a file the tool reads (a memory-mapped trace truncated under the reader faults with SIGBUS).
/// Empty paths are ignored; inputs that do not exist are skipped (their own check reports them), unless
/// `missing_inputs_too`: for inputs the tool looks for under several names (a dataset file raw or gzipped), where an
/// output on the name not there yet would be read as the input by a later run; such an output is refused too.
void check_outputs_not_inputs(const std::vector<std::pair<std::string, std::string>>& outputs,
                              const std::vector<std::pair<std::string, std::string>>& inputs,
                              bool missing_inputs_too = false);

/// Parses a plain decimal whole number: digits only (no sign, blank, exponent or "0x": stoll and sscanf take
/// " 1", "+1" and "-0", stod takes "1e3" and "0x10"), at most 2^64 - 1. Throws InputError
/// "`what`: expected `expected`, got 'text'", or "... is beyond 2^64 - 1".
std::uint64_t parse_decimal_u64(const std::string& text, const std::string& what, const std::string& expected);

/// A comma-separated list of parse_decimal_u64 values (layer or iteration numbers): not empty, no empty item
/// (so no trailing comma), no value twice. Throws InputError naming `what` and the whole text.
std::vector<std::uint64_t> parse_decimal_list(const std::string& text, const std::string& what);

/// FROM:TO, two parse_decimal_u64 values with FROM < TO (a cycle window). Throws InputError naming `what`.
std::pair<std::uint64_t, std::uint64_t> parse_decimal_range(const std::string& text, const std::string& what);

}  // namespace spartan
