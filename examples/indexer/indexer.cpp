// gpusort-indexer: the command line of the blocked sort-based indexer (indexer.hpp).
//   gpusort-indexer build --index DIR [--variant cpu|gpu|gpu-pipelined] [--block-mb N]
//                         [--block-keys N] [--max-bytes B] [--algo NAME] [--stats] PATH...
//   gpusort-indexer query --index DIR [--limit N] TERM...
// Exit codes: 0 success; 2 usage errors (command line, missing or unreadable paths, a bad
// index); 3 write or sort failures; 130 interrupted. Errors are one line on stderr.
#include <charconv>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "indexer.hpp"

namespace {

namespace ix = gpusort::indexer;

constexpr std::string_view usage_text =
    "usage:\n"
    "  gpusort-indexer build --index DIR [--variant cpu|gpu|gpu-pipelined] [--block-mb N]\n"
    "                        [--block-keys N] [--max-bytes B] [--algo NAME] [--stats] PATH...\n"
    "  gpusort-indexer query --index DIR [--limit N] TERM...\n"
    "\n"
    "build: index the text files under PATH... (directories recursively, sorted; files with\n"
    "  a NUL byte in their first 4 KiB are skipped) into DIR.\n"
    "  --variant      how blocks are sorted: cpu (std::sort), gpu (gpusort::sort), or\n"
    "                 gpu-pipelined (gpusort::sort on a second thread while parsing goes on)\n"
    "  --block-mb     MiB of 8-byte keys sorted at a time (default 256)\n"
    "  --block-keys   the block size in keys instead (small values give many runs)\n"
    "  --max-bytes    stop taking documents once this many bytes were taken (K, M, G: 2^10..)\n"
    "  --algo         gpusort algorithm for the gpu variants (default automatic)\n"
    "  --stats        print counts and stage times, one `name: value` per line\n"
    "query: print each term's document frequency and the documents holding all the terms.\n"
    "  --limit        print at most N paths (default 20; 0: all)\n";

// A wrong command line (exit 2, as other usage errors).
struct command_line_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// One subcommand's arguments: `--name value` or `--name=value` for `valued` names, `--name`
// for `flags`, everything else (and everything after `--`) positional.
struct arguments {
  std::map<std::string, std::string, std::less<>> values;
  std::vector<std::string> positional;

  arguments(int argc, char** argv, const std::set<std::string_view>& valued,
            const std::set<std::string_view>& flags) {
    bool options_done = false;
    for (int i = 0; i < argc; ++i) {
      const std::string_view arg = argv[i];
      if (options_done || !arg.starts_with("--")) {
        positional.emplace_back(arg);
        continue;
      }
      if (arg == "--") {
        options_done = true;
        continue;
      }
      std::string name(arg.substr(2)), value;
      const std::size_t equals = name.find('=');
      if (equals != std::string::npos) {
        value = name.substr(equals + 1);
        name.resize(equals);
      }
      if (flags.contains(name)) {
        if (equals != std::string::npos) throw command_line_error("--" + name + " takes no value");
      } else if (valued.contains(name)) {
        if (equals == std::string::npos) {
          if (++i == argc) throw command_line_error("--" + name + " needs a value");
          value = argv[i];
        }
      } else {
        throw command_line_error("unknown option --" + name);
      }
      values[name] = value;
    }
  }

  bool has(std::string_view name) const { return values.contains(name); }
  std::string get(std::string_view name) const {
    const auto it = values.find(name);
    return it == values.end() ? std::string() : it->second;
  }
};

std::uint64_t parse_unsigned(std::string_view text, std::string_view what) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size())
    throw command_line_error(std::string(what) + ": '" + std::string(text) + "' is not a number");
  return value;
}

// A byte count: digits with an optional binary suffix K, M, G or T.
std::uint64_t parse_bytes(std::string_view text, std::string_view what) {
  unsigned shift = 0;
  if (!text.empty()) {
    switch (text.back()) {
      case 'K': case 'k': shift = 10; break;
      case 'M': case 'm': shift = 20; break;
      case 'G': case 'g': shift = 30; break;
      case 'T': case 't': shift = 40; break;
      default: break;
    }
  }
  const std::uint64_t value = parse_unsigned(shift ? text.substr(0, text.size() - 1) : text, what);
  if (value > (std::numeric_limits<std::uint64_t>::max() >> shift))
    throw command_line_error(std::string(what) + ": '" + std::string(text) + "' is too large");
  return value << shift;
}

std::string required(const arguments& args, std::string_view name) {
  if (!args.has(name)) throw command_line_error("--" + std::string(name) + " is required");
  return args.get(name);
}

// Set by SIGINT/SIGTERM/SIGHUP during a build: the build stops at the next document or
// merge step and removes what it wrote.
std::atomic<bool> cancel_requested{false};

extern "C" void request_cancel(int signal_number) {
  cancel_requested.store(true);
  std::signal(signal_number, SIG_DFL);  // a second signal ends the process at once
}

ix::build_config build_config_from(const arguments& args) {
  ix::build_config config;
  config.index_dir = required(args, "index");
  config.inputs = args.positional;
  if (config.inputs.empty()) throw command_line_error("build: no PATH to index");
  if (args.has("variant")) {
    const auto method = ix::parse_variant(args.get("variant"));
    if (!method)
      throw command_line_error("--variant: '" + args.get("variant") +
                               "' is not cpu, gpu or gpu-pipelined");
    config.method = *method;
  }
  if (args.has("block-mb")) {
    const std::uint64_t mb = parse_unsigned(args.get("block-mb"), "--block-mb");
    if (mb == 0 || mb > (std::uint64_t{1} << 20))
      throw command_line_error("--block-mb: must be 1 to 2^20");
    config.block_keys = mb * ix::keys_per_mb;
  }
  if (args.has("block-keys")) {
    config.block_keys = parse_unsigned(args.get("block-keys"), "--block-keys");
    if (config.block_keys == 0) throw command_line_error("--block-keys: must be at least 1");
  }
  if (args.has("max-bytes")) config.max_bytes = parse_bytes(args.get("max-bytes"), "--max-bytes");
  if (args.has("algo") && !gpusort::parse_algorithm(args.get("algo"), config.sort_options.algo))
    throw command_line_error("--algo: unknown algorithm '" + args.get("algo") + "'");
  config.cancel = &cancel_requested;
  return config;
}

void print_stats(const ix::build_stats& s) {
  const auto count = [](const char* name, std::uint64_t value) {
    std::printf("%s: %llu\n", name, static_cast<unsigned long long>(value));
  };
  const auto seconds = [](const char* name, double value) {
    std::printf("%s: %.3f\n", name, value);
  };
  count("documents", s.documents);
  count("bytes", s.bytes);
  count("keys", s.keys);
  count("postings", s.postings);
  count("terms", s.terms);
  count("runs", s.runs);
  seconds("parse", s.parse);
  seconds("sort", s.sort);
  seconds("write runs", s.write_runs);
  seconds("parse+sort", s.parse_sort);
  seconds("merge", s.merge);
}

int build(int argc, char** argv) {
  const arguments args(argc, argv,
                       {"index", "variant", "block-mb", "block-keys", "max-bytes", "algo"},
                       {"stats"});
  const ix::build_config config = build_config_from(args);
  for (const int signal_number : {SIGINT, SIGTERM, SIGHUP})
    std::signal(signal_number, request_cancel);
  const ix::build_stats stats = ix::build_index(config);
  if (args.has("stats")) print_stats(stats);
  return 0;
}

// One `TERM: df N` line per term, then (for several terms) `all: M`, then the paths of the
// documents holding every term, at most `limit` of them.
int query(int argc, char** argv) {
  const arguments args(argc, argv, {"index", "limit"}, {});
  const std::string dir = required(args, "index");
  if (args.positional.empty()) throw command_line_error("query: no TERM");
  const std::uint64_t limit = args.has("limit") ? parse_unsigned(args.get("limit"), "--limit") : 20;
  const ix::index_reader index(dir);
  const ix::query_result result = ix::run_query(index, args.positional);
  for (const ix::term_hits& hits : result.terms)
    std::printf("%s: df %u\n", hits.term.c_str(), hits.df);
  if (result.terms.size() > 1) std::printf("all: %zu\n", result.documents.size());
  const std::size_t shown =
      limit == 0 ? result.documents.size() : std::min<std::size_t>(limit, result.documents.size());
  for (std::size_t i = 0; i < shown; ++i)
    std::printf("%s\n", index.document_path(result.documents[i]).c_str());
  if (shown < result.documents.size())
    std::printf("... %zu more (--limit 0 shows all)\n", result.documents.size() - shown);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string_view command = argc > 1 ? argv[1] : "";
  try {
    if (command == "build") return build(argc - 2, argv + 2);
    if (command == "query") return query(argc - 2, argv + 2);
    if (command == "--help" || command == "-h" || command == "help") {
      std::fputs(usage_text.data(), stdout);
      return 0;
    }
    throw command_line_error(command.empty() ? "no command"
                                             : "unknown command '" + std::string(command) + "'");
  } catch (const command_line_error& e) {
    std::fprintf(stderr, "gpusort-indexer: %s (see gpusort-indexer --help)\n", e.what());
    return 2;
  } catch (const ix::usage_error& e) {
    std::fprintf(stderr, "gpusort-indexer: %s\n", e.what());
    return 2;
  } catch (const ix::interrupted& e) {
    std::fprintf(stderr, "gpusort-indexer: %s\n", e.what());
    return 130;
  } catch (const std::exception& e) {  // io_error, gpusort::error, bad_alloc
    std::fprintf(stderr, "gpusort-indexer: %s\n", e.what());
    return 3;
  }
}
