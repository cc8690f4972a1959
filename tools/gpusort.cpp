// gpusort: generate, sort, check and benchmark files of keys, and sort text lines with GNU
// sort's command line (docs/tool.md; the tool's place in docs/design.md, Layers). Command
// lines are parsed by CLI11 (arguments.cpp, text_sort.cpp). Exit codes: 0 success, 1 `check`
// (or `sort -c`) found disorder, 2 bad input or usage, 3 a CUDA or I/O failure.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <new>
#include <string>
#include <type_traits>

#include "bench.hpp"
#include "bench/largest.hpp"
#include "cli.hpp"
#include "common/distributions.hpp"
#include "byte_records.hpp"
#include "gpusort/external.hpp"
#include "gpusort/notices.hpp"
#include "external_sort.hpp"
#include "bench_algorithms.hpp"  // is_host_sort
#include "host_sort.hpp"
#include "text_records.hpp"
#include "nan_move.hpp"
#include "gpusort/detail/index_math/sample_sort.hpp"
#include "gpusort/sort.hpp"
#include "plot.hpp"
#include "standard_descriptors.hpp"
#include "records.hpp"
#include "unique_keys.hpp"
#include "text_sort.hpp"

namespace {

using namespace gpusort::tools;

// Names separated by spaces, of enum values (through their to_string) or strings.
std::string join_names(const auto& items) {
  std::string names;
  for (const auto& item : items) {
    if (!names.empty()) names += ' ';
    if constexpr (std::is_enum_v<std::decay_t<decltype(item)>>)
      names += to_string(item);
    else
      names += item;
  }
  return names;
}

const std::string algorithm_names = join_names(gpusort::all_algorithms) + ", sample_sort_random";
const std::string distribution_names = join_names(all_distributions);

const std::string main_help = R"(usage: gpusort <command> [options]
  gen     write a file of generated keys
  sort    sort text lines as `LC_ALL=C sort` does (GNU sort's options), or a file of keys
  check   tell whether a file is sorted, and its checksum
  bench   time the algorithms side by side
  demo    sort one array with every algorithm and compare them
  largest sort the most u32 keys the GPU holds, in place, and check them on the device
  comparisons  count the comparisons of adaptive_bitonic against the bitonic network's
  plot    draw PNG figures of a benchmark CSV (with matplotlib)
`gpusort <command> --help` describes each command. Files are raw little-endian arrays of
keys (u32 i32 f32 u64 i64 f64; and i8 u8 i16 u16 f16 bf16: in memory or by runs merged on
the CPU, or with --gpus in the keys pipeline as 32-bit codes) or of packed
(key, u32 value) records; with --text, one
number (or "key value") per line; with --record-bytes B --key-bytes K, records of B bytes
with a key of K raw bytes compared as unsigned bytes (the Sort Benchmark's: B 100, K 10).
A file argument may be `-` (standard input or output), a FIFO, a device or a symbolic link:
gen -  | sort - - | check -  is a pipeline. An output that is not a regular file is written
in place once complete and never replaced; a link's target is replaced, the link kept.
gen, sort and check draw a progress line on stderr when it is a terminal and they run over a
second (GPUSORT_PROGRESS=0: never, =1: always); it never goes to stdout.
Exit codes: 0 success, 1 check (or sort -c) found disorder, 2 bad input or usage, 3 CUDA or
I/O failure. gpusort --version prints the version.
)";

const std::string gen_help =
    R"(usage: gpusort gen --type T --n N [--dist D] [--zipf S] [--and K] [--seed S]
                   [--pairs u32] [--text] [--tmp DIR] OUT
       gpusort gen --record-bytes B --key-bytes K [--key-offset O] --n N [--dist D]
                   [--seed S] [--tmp DIR] OUT
Writes N keys of type T (u32 i32 f32 u64 i64 f64 i8 u8 i16 u16 f16 bf16; f16 and bf16: the
f32 keys of the seed rounded, f16's scaled by 2^-5 to fit) to OUT, or N records of B bytes with a
key of K bytes at offset O (default 0). OUT may be - (standard output, not a terminal unless
--text) or any other stream, as for sort.
  --n N        a number, 2^k, 2^k+c or 2^k-c
  --dist D     )" +
    distribution_names + R"(
               (default uniform): integers over their whole range, floats in [-1e6, 1e6);
               gaussian is the mean of four uniforms, zipf ranks 0 to 2^20-1, few_unique
               16 keys, organ_pipe rises then falls, reduced_entropy ANDs random words
               (floats: their bits, with |key| < 2 so that all are finite)
  --zipf S     zipf's exponent: rank r comes with weight r^-S; S > 0 (default 1)
  --and K      reduced_entropy: AND K more random words into each key, 0 to 8 (default 2):
               an entropy per bit of 1.0 0.81 0.54 0.34 0.20 for K = 0..4
  --seed S     the same seed gives the same keys (default 1)
  --pairs u32  write (key, value) records, the value being the key's original index
  --text       one number (or "key value") per line instead of raw binary
  --tmp DIR    where a stream OUT is spooled until complete (default $TMPDIR, else /tmp)
  --record-bytes B, --key-bytes K, --key-offset O  records of B bytes (1 to 65536), the
               key K bytes at offset O (O + K <= B). The key's first 8 bytes (or K) are a
               64-bit number, most significant byte first: uniform random, sorted, reverse,
               few_unique (16 numbers) or all_equal (the only --dist values here); bytes
               beyond 8 are random (uniform) or follow from the number (few_unique: one of
               two tails each, so that keys share their first 8 bytes and differ after).
               The other bytes, the payload, start with the record's index (8 bytes
               little-endian, fewer if the payload is shorter), then filler from the index:
               every record is distinct, and a sort's stability shows
)";

const std::string sort_help =
    R"(usage: gpusort sort [OPTION]... [FILE]...
       gpusort sort --type T [--pairs u32] [--algo A] [--desc] [--nans last|first] [--text] [-u]
                    [--device-memory BYTES] [--memory BYTES] [--gpus LIST] [--tmp DIR] [--stats]
                    IN OUT
       gpusort sort --record-bytes B --key-bytes K [--key-offset O] [--algo A] [--desc]
                    [--device-memory BYTES] [--memory BYTES] [--tmp DIR] [--stats] IN OUT
Without --type or --record-bytes: text lines, sorted as `LC_ALL=C sort` sorts them (bytes in
the C locale's order whatever LC_ALL, LC_COLLATE or LANG say), with GNU sort's options. The
FILEs one after the other (a last line without a newline gets one), standard input when none
or `-`; the output on standard output, or in -o FILE, which may be one of the inputs.
  -k, --key=POS1[,POS2]  a key from field POS1 to POS2 (F[.C][bnr], counted from 1), or to
               the end of the line; several keys in order of precedence
  -t, --field-separator=SEP  fields end at the byte SEP (\0: NUL), not at blanks
  -n, --numeric-sort     keys are decimal numbers (sign, digits, a decimal point)
  -r, --reverse   -u, --unique   -s, --stable (no last-resort whole-line comparison)
  -b, --ignore-leading-blanks   -z, --zero-terminated (lines end with NUL)
  -o, --output=FILE      written under a temporary name beside FILE, then renamed over it
  -c, --check[=diagnose-first]  exit 1 at the first line out of order, named on stderr
  -C, --check=quiet|silent      the same, silently
  -m, --merge    inputs already sorted (they are sorted again: the same output)
  -S, --buffer-size=SIZE  lines sorted in memory at once (K M G T P E b or %; default half
               the memory); past it, sorted runs merged out of core
  -T, --temporary-directory=DIR  where the runs (and an output stream's spool) go
  --parallel=N  --batch-size=N  --compress-program=PROG: accepted, without effect
  --sort=numeric (-n), --version, --help
Refused (exit 2), as the engine lacks them: -d, -f, -i, -g, -M, -V, -R, --random-source,
--debug, --files0-from, --sort with other orders, and -h, which is GNU sort's
--human-numeric-sort (the help is --help).
With --type T or --record-bytes B:
Sorts the records of IN by key into OUT, on the GPU if there is one, else on the CPU.
OUT appears only when complete and checked: a regular file is written under a temporary name
beside it, then renamed over it; a symbolic link is followed to its final target, which is
replaced in its own directory (the link stays); any other OUT (- for standard output, a FIFO,
a device, /dev/stdout) is opened at once and written in place, in order, once the output is
complete (until then it is spooled in the scratch directory), and is never replaced. A
write error there (a full device: ENOSPC) is one line and exit 3. Binary output to a
terminal is refused (exit 2). When OUT is standard output, --stats goes to stderr.
IN is never modified, and OUT may be IN. IN may be - (standard input) or any readable stream
(a FIFO, a process substitution): it is first read to its end into an unlinked file in the
scratch directory, then sorted as a file of that size (out of core past the budgets). Floats sort -0.0 before +0.0 and NaNs last. On a
terminal, a sort that runs over a second shows its phase (reading, sorting, checking,
writing; out of core: runs, merge i/n) on stderr.
Keys alone on a GPU (raw binary) go through a pipeline: the file is read on all cores into
pinned buffers while earlier ones are copied to the device, sorted there, and copied back
while the output is written. When the keys and the sort's workspace fit the device budget
(by default 90% of the free device memory) that is one run; otherwise each run is sorted
and kept in host memory (or, beyond the host budget or half the machine's memory, in a
scratch file), and the runs are merged on the GPU in windows as long as a run: each window's
slices of the runs are gathered, sorted on the device, and written to their place in OUT.
With several GPUs (--gpus), each takes runs, then windows, as it is free, over its own link.
Pairs and records with --record-bytes on a GPU go through a second pipeline: each record's
key (for records, the first 8 key bytes, all K if fewer, read as a big-endian number) goes to
the device with the record's position; the positions come back sorted and the records are
gathered on the host on all cores. Equal keys that may hide a difference (the rest of a
longer byte key) or an unstable --algo's order are put in order on the host, so the output
is stable: equal keys in input order, whatever --algo. Runs beyond the device budget (keys,
positions and workspace) or the host budget (a run's records; by default half the machine's
memory) are kept in host memory or a scratch file and merged on the GPU in windows.
Without a GPU, or when the budgets make more than 64 runs, pairs, records (and keys without
a GPU) sort in memory unless a budget asks for more than one run, else one run at a time into
run files merged on the CPU (--algo std_sort and cpu_parallel sort records' indices stably by
the whole key in memory).
Scratch files live in a directory beside OUT's final target (".OUT.runs<pid>-<k>"), or in
--tmp DIR, or, when OUT is a stream, in $TMPDIR (else /tmp); it goes when the sort ends,
fails or is interrupted; a run holds a lock on it, and a later run removes only scratch no
run holds. OUT is never another user's file or FIFO in a sticky directory others may write
into (/tmp), as the kernel's protected_regular and protected_fifos rules. Out of core takes
raw binary files only (no --text).
  --algo A     )" +
    algorithm_names + R"( (default automatic); or a host sort
               on the same file I/O, the baseline of the GPU's: std_sort (one core) or
               cpu_parallel (GCC's parallel mode sort on all cores; stable for pairs)
  --desc       descending order
  --nans last|first  where float NaNs go, in both orders: after every number (last, the
               default, NumPy's) or before them (first; torch.sort's descending order is
               --desc --nans first). Runs are merged with NaNs as the largest keys; the NaN
               block of the finished output is moved (two more passes) where it must
  --pairs u32  records are (key, u32 value)
  -u, --unique the first record of each key alone (equal values, NaNs one key; pairs sort
               stably, so it is the key's first record in IN); not with --text or --record-bytes
  --text       IN and OUT hold one number (or "key value") per line
  --record-bytes B, --key-bytes K, --key-offset O  records of B bytes (1 to 65536) sorted
               by K bytes at offset O (default 0; O + K <= B) compared as unsigned bytes
               (memcmp), as the Sort Benchmark's (B 100, K 10); no --type, --pairs, --text
  --device-memory BYTES  the device budget of one run: its records and the algorithm's
               workspace (from the library's workspace query) must fit; with --record-bytes
               a record's 12-byte sort key (prefix and index) instead of the record. Without
               a GPU, where the CPU backend sorts, each record (sort key) counts twice (itself
               and one of workspace). BYTES: a number, or with a suffix K, M, G or T (powers
               of 1024): 64K, 512M, 4G
  --memory BYTES  the host budget (default: half the memory the process may use, its
               control group's limit counted): the run buffers (2 records' worth
               per record of a run, 3 for pairs; with --record-bytes 2 plus 16 bytes rounded
               up to records) and the merge buffers (up to 1 MiB each, a ninth of BYTES below
               9 MiB) must fit
  --max-input BYTES  the most a stream IN may hold (default: no limit); its copy also stops
               where it would leave less than 5% of the scratch file system free
  --gpus LIST  the GPUs that sort keys alone out of core (narrow keys too: they take the
               pipeline only when --gpus names GPUs), a comma list of device numbers
               (default: every visible GPU, the current one first; keys that fit one GPU's
               budget are sorted on the first)
  --tmp DIR    the scratch directory (a stream IN's copy, OUT's spool, out-of-core runs)
               instead of beside OUT's final target, or of $TMPDIR (else /tmp) when OUT is
               a stream
  --stats      print the plan and the time of each stage, one line each, on stdout (in
               memory: read, sort, write; the GPU pipeline: the busy time of each stage,
               which overlap, and the total; out of core on the CPU: read, sort, write
               runs, merge)
)";

const std::string check_help = R"(usage: gpusort check --type T [--pairs u32] [--desc] [--nans last|first] [--text] [--tmp DIR] FILE
       gpusort check --record-bytes B --key-bytes K [--key-offset O] [--desc] [--tmp DIR] FILE
Tells whether FILE's records are in order by key, where the first record out of order is,
how many records come right after one they should precede, and a checksum of the records
that does not depend on their order (so a sorted file has the checksum of its input).
Exit code 1 if FILE is out of order. FILE may be - (standard input) or another stream: it is
read to its end into an unlinked file in --tmp DIR ($TMPDIR, else /tmp) first.
  --desc       check for descending order
  --nans last|first  where float NaNs must be (default last: after every number)
  --pairs u32  records are (key, u32 value)
  --text       FILE holds one number (or "key value") per line
  --max-input BYTES  the most a stream FILE may hold (default: no limit)
  --record-bytes B, --key-bytes K, --key-offset O  records of B bytes ordered by K bytes at
               offset O (default 0) compared as unsigned bytes; the checksum covers all B
               bytes of each record
)";

const std::string bench_help =
    R"(usage: gpusort bench [--algos a,b] [--types u32,u64,f32] [--dists uniform,...]
                     [--sizes 2^16..2^28] [--segments 32,1024,powerlaw] [--pairs u32]
                     [--reps 20] [--arrays A] [--seed S] [--buckets S] [--intervals N]
                     [--k N] [--block-bits B] [--csv FILE] [--json FILE] [--plot DIR]
                     [--gpu-name NAME]
Times the algorithms side by side on one GPU: for each point the input is copied from a
pristine device buffer before every run (not timed), the sort is timed with CUDA events
after 2 warm-up runs, and the median of --reps runs is reported with the runs' spread;
every result is verified. approx and approx_sampled (linear or sampled splitters)
approximately sort into a second buffer, checked for intervals in order; top_k writes the
k first keys (with --segments, top_k_rows those of every segment), checked against
std::sort; select_k the same keys in any order and the k-th, checked once sorted. Their
extra bytes count that output. sort_segmented_indices (--pairs u32 only)
writes each key's position in its segment into the value buffer, as an argsort. The host
sorts: std_sort, and cpu_parallel, GCC's parallel mode sort on all cores (segments: spread
over the cores, one sorted by each). Without a CUDA device, the CPU backend (bitonic) is
timed against them.
  --algos    default: all of )" +
    join_names(bench_algorithms(true, false)) + R"(
             with --segments, all of: )" +
    join_names(bench_algorithms(true, true)) + R"(
             (std_sort and cpu_parallel too on request)
  --types    key types (default u32); rec16, rec32 and u64pair are records sorted with a
             user comparator by automatic, sample_sort, sample_sort_random, bitonic,
             thrust and cub_merge (builds with -DGPUSORT_BUILD_RECORD_BENCH=ON)
  --dists    )" +
    distribution_names + R"( (default uniform)
  --sizes    counts (1000, 2^20, 2^20+1) and ranges 2^a..2^b (every power of two), comma
             separated (default 2^16..2^28)
  --segments time segmented sorts instead: each size cut into segments in each layout
             listed, comma separated: a segment size (counts and ranges as in --sizes; the
             last segment is shorter if the size does not divide n) or powerlaw (sizes drawn
             lognormal, mu 3, sigma 1.2, from --seed, as in CUB's benchmarks). Every segment
             is verified. Without a CUDA device: the CPU backend (named sort_segmented)
             against std_sort on each segment
  --pairs    u32: sort (key, u32 value) records
  --reps     timed runs per input array (default 20; the host sorts and the CPU backend do
             fewer above 2^22 keys)
  --flush-l2 on|off: device runs start with a cold L2 cache, written over after the input
             is restored (default on, as NVBench; the CSV's l2 column says which)
  --arrays   input arrays per point (default 1; Capannini et al. use 20): each is generated
             afresh, the first from --seed and the others from seeds drawn from it, then
             timed --reps times after the warm-ups by every algorithm and verified; the
             statistics cover the runs of all arrays. Segment layouts stay those of --seed
  --buckets  sample_sort's buckets per level (s, a power of two from 2 to 1024; default:
             the measured choice)
  --intervals the interval count of approx, approx_sampled, approx_refine and top_k, up to
             2^24 (default 0: the library's choice)
  --k        top_k's k, at most n, and top_k_rows', at most a segment (default 1000)
  --block-bits adaptive_bitonic's block sort and block merge size, 2^B items: 10 to 13, or 1
             for none, the plain algorithm (default 0: 12)
  --csv      write one row per measurement, with the columns of docs/results/; the
             segment_size column is 0 for a single array, else the layout as --segments
             spells it (a number, or powerlaw); then min_ms, max_ms, reps (timed runs per
             array), std_ms (the sample standard deviation of all runs) and arrays
  --json     write the same rows as {"gpu": ..., "commit": ..., "rows": [{column: value,
             ...}, ...]}, numbers as numbers; the file appears only when complete
  --plot     draw PNG figures into DIR (created if missing) from the CSV after the run, as
             `gpusort plot` does (matplotlib): keys/s against n, and its spread over the
             distributions; without --csv, the CSV is written to DIR/bench.csv. When the
             figures cannot be drawn (no matplotlib), bench says so and the run still counts
  --gpu-name the name for the CSV's gpu column (default: the device's)
)";

const std::string demo_help = R"(usage: gpusort demo [--n N]
Sorts N uniform u32 keys (default 2^24 on a GPU, 2^20 without) with every algorithm,
verifies each result and prints the timings side by side. Without a CUDA device: the CPU
backend against std_sort.
)";

static_assert(max_entropy_ands == 8 && default_entropy_ands == 2, "as gen_help says");

// --gpus LIST: distinct device numbers of GPUs this machine has.
std::vector<int> parse_gpus(const std::string& list) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
  cudaGetLastError();  // a machine without a driver leaves an error behind
  std::vector<int> devices;
  for (const std::string& item : split(list, ',')) {
    std::uint64_t device = 0;
    if (!parse_number(item, device) || device >= (std::uint64_t{1} << 20))
      throw usage_error("--gpus: " + quote_input(item) + " is not a GPU number (a comma list: --gpus 0,1)");
    if (std::ranges::find(devices, static_cast<int>(device)) != devices.end())
      throw usage_error("--gpus: GPU " + item + " is named twice");
    devices.push_back(static_cast<int>(device));
  }
  for (const int device : devices)
    if (device >= count)
      throw usage_error("--gpus: there is no GPU " + std::to_string(device) +
                        " (this machine has " + std::to_string(count) + ")");
  return devices;
}

// --max-input BYTES: the longest stream IN spooled to scratch (default: no limit).
std::uint64_t parse_max_input(const arguments& args) {
  return args.has("max-input") ? parse_bytes(args.get("max-input"), "--max-input")
                               : std::numeric_limits<std::uint64_t>::max();
}

// gen's --zipf and --and, each allowed only with the distribution it shapes.
generator_options parse_generator_options(const arguments& args, distribution dist) {
  generator_options opt;
  if (args.has("zipf")) {
    if (dist != distribution::zipf) throw usage_error("--zipf needs --dist zipf");
    const std::string text = args.get("zipf");
    if (!parse_number(text, opt.zipf_exponent) || !std::isfinite(opt.zipf_exponent) ||
        opt.zipf_exponent <= 0)
      throw usage_error("--zipf: '" + text + "' is not an exponent above 0");
  }
  if (args.has("and")) {
    if (dist != distribution::reduced_entropy)
      throw usage_error("--and needs --dist reduced_entropy");
    const std::uint64_t ands = parse_unsigned(args.get("and"), "--and");
    if (ands > max_entropy_ands)
      throw usage_error("--and must be from 0 to " + std::to_string(max_entropy_ands));
    opt.entropy_and = static_cast<int>(ands);
  }
  return opt;
}

// gen --record-bytes: records with a byte key (external/record_sort.hpp).
int gen_byte_records(const arguments& args, const std::string& out,
                     const record_layout& layout) {
  const std::uint64_t n = parse_count(args.required("n"), "--n");
  distribution dist = distribution::uniform;
  if (args.has("dist") && !parse_distribution(args.get("dist"), dist))
    throw usage_error("--dist: unknown distribution '" + args.get("dist") + "' (" +
                      distribution_names + ")");
  parse_generator_options(args, dist);  // --zipf and --and need distributions records lack
  if (!byte_records_distribution(dist))
    throw usage_error("--dist " + args.get("dist") +
                      ": records with --record-bytes come uniform, sorted, reverse, few_unique "
                      "or all_equal");
  const std::uint64_t seed = parse_unsigned(args.get("seed", "1"), "--seed");
  pending_file file(out, true, args.get("tmp"));
  progress meter;
  generate_byte_records(file, layout, n, dist, seed, meter);
  return 0;
}

int gen(const arguments& args) {
  const std::string out = args.positional(1, "one output file")[0];
  refuse_closed_descriptor(out, STDOUT_FILENO);
  if (const auto layout = parse_record_layout(args, false))
    return gen_byte_records(args, out, *layout);
  const bool pairs = parse_pairs(args);
  const std::uint64_t n = parse_count(args.required("n"), "--n");
  distribution dist = distribution::uniform;
  if (args.has("dist") && !parse_distribution(args.get("dist"), dist))
    throw usage_error("--dist: unknown distribution '" + args.get("dist") + "' (" +
                      distribution_names + ")");
  const generator_options shape = parse_generator_options(args, dist);
  const std::uint64_t seed = parse_unsigned(args.get("seed", "1"), "--seed");
  if (pairs && n > (std::uint64_t{1} << 32))
    throw usage_error("--pairs u32: the original index of " + std::to_string(n) +
                      " records does not fit a u32");
  return with_file_key_type(args.required("type"), [&]<class K>() {
    if (n > std::vector<K>().max_size())  // gen makes the keys in memory
      throw usage_error("--n: " + args.get("n") + " keys of " + args.get("type") +
                        " are more than a process can hold");
    pending_file file(out, !args.has("text"), args.get("tmp"));
    progress meter;
    meter.phase("generating", false);
    records<K> r{generate<K>(dist, n, seed, shape), {}, pairs};
    if (pairs) {
      r.values.resize(n);
      for (std::uint64_t i = 0; i < n; ++i) r.values[i] = static_cast<std::uint32_t>(i);
    }
    with_records_format(args.has("text"), [&](const auto& format) { format.write(file, r, meter); });
    return 0;
  });
}

// --nans last|first: where float NaNs go in both orders (default last, NumPy's).
gpusort::nan_order parse_nans(const arguments& args) {
  const std::string nans = args.get("nans", "last");
  if (nans != "last" && nans != "first") throw usage_error("--nans is last or first");
  return nans == "first" ? gpusort::nan_order::first : gpusort::nan_order::last;
}

int sort(const arguments& args) {
  const std::vector<std::string>& files = args.positional(2, "IN and OUT");
  refuse_closed_descriptor(files[0], STDIN_FILENO);
  refuse_closed_descriptor(files[1], STDOUT_FILENO);
  const bool descending = args.has("desc");
  const auto layout = parse_record_layout(args, descending);
  if (layout && args.has("nans")) throw usage_error("--nans is for float keys, not --record-bytes");
  const std::uint64_t max_input = parse_max_input(args);
  const bool pairs = parse_pairs(args);
  const bool unique = args.has("unique");
  if (unique && (layout || args.has("text")))
    throw usage_error("-u keeps the first record of each key of --type files, not of --record-bytes "
                      "or --text ones");
  // -u keeps each key's first record in the input: pairs sort stably.
  gpusort::options opt{.direction =
                           descending ? gpusort::order::descending : gpusort::order::ascending,
                       .nans = parse_nans(args)};
  opt.stable = unique && pairs;
  const std::string host_sort = args.has("algo") && is_host_sort(args.get("algo")) ? args.get("algo") : "";
  if (args.has("algo") && host_sort.empty() && !gpusort::parse_method(args.get("algo"), opt))
    throw usage_error("--algo: unknown algorithm '" + args.get("algo") + "' (" + algorithm_names +
                      ", std_sort, cpu_parallel)");
  gpusort::file_sort_stats stats;
  sort_request request{.input = files[0],
                       .output = files[1],
                       .pairs = pairs,
                       .opt = gpusort::with_nans_largest(opt),
                       .device_budget_given = args.has("device-memory"),
                       .stats = args.has("stats") ? &stats : nullptr};
  if (request.device_budget_given)
    request.device_budget_bytes = parse_bytes(args.get("device-memory"), "--device-memory");
  if (args.has("memory"))
    request.host_budget_bytes = parse_bytes(args.get("memory"), "--memory");
  if (args.has("gpus")) request.devices = parse_gpus(args.get("gpus"));
  if (args.has("text") && (request.device_budget_given || args.has("memory")))
    throw usage_error("--device-memory and --memory sort out of core, which reads raw binary "
                      "files, not --text");
  if (!host_sort.empty() && (request.device_budget_given || args.has("memory")))
    throw usage_error("--algo " + host_sort + " sorts in host memory: no --device-memory or --memory");
  // The type before OUT opens (narrow keys: their request checked).
  if (!layout)
    with_file_key_type(args.required("type"),
                       [&]<class K>() { narrow_file_request<K>(request, opt, host_sort); });
  // OUT first: one that cannot be created fails before any work (and a FIFO waits for its
  // reader); then a stream IN is read to its end into OUT's scratch directory.
  pending_file out(files[1], !args.has("text"), args.get("tmp"));
  progress spool_meter;
  const input_source in(files[0], out.scratch_dir(), spool_meter, max_input);
  spool_meter.finish();
  request.input = in.path();
  progress meter;
  request.meter = &meter;
  // The library's sorts, or a CPU baseline in their place (host_sort.hpp).
  const auto sort_with = [&](const auto& sorter) {
    return layout ? sort_byte_records_file(request, *layout, out, sorter)
                  : with_file_key_type(args.required("type"), [&]<class K>() {
                      place_nans_on_commit<K>(out, opt, pairs, args.has("text"));
                      if (unique) keep_unique_keys_on_commit<K>(out, pairs);
                      return with_records_format(args.has("text"), [&](const auto& format) {
                        return sort_keys_file<K>(request, out, sorter, format);
                      });
                    });
  };
  const int status = host_sort.empty() ? sort_with(no_host_sort{}) : sort_with(gpusort::tools::host_sort{host_sort});
  meter.finish();
  if (status == 0) std::fputs(stats.text().c_str(), stdout);
  return status;
}

// check's report on stdout; its exit code.
int report_check(const std::string& file, std::uint64_t records, const std::string& described,
                 bool descending, const order_report& order, const checksum& sum) {
  std::printf("file: %s\nrecords: %llu %s\nsorted (%s): %s\n", file.c_str(),
              static_cast<unsigned long long>(records), described.c_str(),
              descending ? "descending" : "ascending", order.out_of_order == 0 ? "yes" : "no");
  if (order.out_of_order == 0)
    std::printf("first out of order: none\n");
  else
    std::printf("first out of order: %llu\n", static_cast<unsigned long long>(order.first));
  std::printf("out of order: %llu\nchecksum: %s\n",
              static_cast<unsigned long long>(order.out_of_order), sum.str().c_str());
  return order.out_of_order == 0 ? 0 : 1;
}

gpusort::order opt_direction(bool descending) {
  return descending ? gpusort::order::descending : gpusort::order::ascending;
}

int check(const arguments& args) {
  const std::string file = args.positional(1, "one file")[0];
  refuse_closed_descriptor(file, STDIN_FILENO);
  const bool descending = args.has("desc");
  const auto layout = parse_record_layout(args, descending);
  if (layout && args.has("nans")) throw usage_error("--nans is for float keys, not --record-bytes");
  const bool pairs = !layout && parse_pairs(args);
  if (!layout) with_file_key_type(args.required("type"), []<class K>() {});  // before IN is read
  progress meter;
  const input_source in(file, stream_scratch_dir(args.get("tmp")), meter, parse_max_input(args));
  if (layout) {
    const byte_records_report r = check_byte_records(in.path(), *layout, meter);
    meter.finish();  // before stdout, which may be the same terminal
    return report_check(file, r.records, describe_byte_records(*layout), descending,
                        r.order, r.sum);
  }
  return with_file_key_type(args.required("type"), [&]<class K>() {
    const records<K> r = with_records_format(args.has("text"), [&](const auto& format) {
      return format.template read<K>(in.path(), pairs, meter);
    });
    meter.phase("checking", false);
    const order_report order =
        scan_order(r.keys, descending, gpusort::nans_lowest(opt_direction(descending), parse_nans(args)));
    const checksum sum = checksum_of(r);
    meter.finish();  // before stdout, which may be the same terminal
    return report_check(file, r.keys.size(), describe_records<K>(pairs), descending, order, sum);
  });
}

int bench(const arguments& args) {
  args.positional(0, "no file arguments");
  bench_config config;
  if (args.has("algos")) config.algorithms = split(args.get("algos"), ',');
  if (args.has("types")) config.key_types = split(args.get("types"), ',');
  if (args.has("dists")) {
    config.distributions.clear();
    for (const std::string& name : split(args.get("dists"), ',')) {
      if (!parse_distribution(name, config.distributions.emplace_back()))
        throw usage_error("--dists: unknown distribution '" + name + "' (" + distribution_names +
                          ")");
    }
  }
  config.sizes = parse_sizes(args.get("sizes", "2^16..2^28"));
  if (args.has("segments")) config.segments = parse_segments(args.get("segments"));
  config.pairs = parse_pairs(args);
  const std::uint64_t reps = parse_unsigned(args.get("reps", "20"), "--reps");
  if (reps < 1 || reps > 100000) throw usage_error("--reps must be between 1 and 100000");
  config.reps = static_cast<int>(reps);
  const std::string flush = args.get("flush-l2", "on");
  if (flush != "on" && flush != "off") throw usage_error("--flush-l2 is on or off");
  config.flush_l2 = flush == "on";
  const std::uint64_t arrays = parse_unsigned(args.get("arrays", "1"), "--arrays");
  if (arrays < 1 || arrays > 100000) throw usage_error("--arrays must be between 1 and 100000");
  config.arrays = static_cast<int>(arrays);
  config.seed = parse_unsigned(args.get("seed", "1"), "--seed");
  config.buckets = static_cast<unsigned>(parse_unsigned(args.get("buckets", "0"), "--buckets"));
  if (gpusort::detail::index_math::bucket_bits_of(config.buckets) < 0)
    throw usage_error("--buckets must be a power of two from 2 to 1024");
  const std::uint64_t intervals = parse_count(args.get("intervals", "0"), "--intervals");
  if (intervals > (std::uint64_t{1} << 24))
    throw usage_error("--intervals must be from 0 (the default) to 2^24");
  config.intervals = static_cast<std::uint32_t>(intervals);
  config.k = parse_count(args.get("k", "1000"), "--k");
  if (config.k < 1) throw usage_error("--k must be at least 1");
  const std::uint64_t block_bits = parse_unsigned(args.get("block-bits", "0"), "--block-bits");
  if (block_bits != 0 && block_bits != 1 && (block_bits < 10 || block_bits > 13))
    throw usage_error("--block-bits must be 0 (the default), 1, or 10 to 13");
  config.block_bits = static_cast<unsigned>(block_bits);
  config.csv_path = args.get("csv");
  config.json_path = args.get("json");
  config.plot_dir = args.get("plot");
  config.gpu_name = args.get("gpu-name");
  return run_bench(config);
}

const std::string largest_help = R"(usage: gpusort largest [--n N] [--algo A]
       gpusort largest --all [--type T] [--pairs u32]
Makes N u32 keys on the GPU (a shuffled counting sequence), sorts them with algorithm A
(default bitonic, which needs no memory beyond the keys) and checks every key on the device.
The default N is the largest power of two whose keys fit in the free device memory.
An algorithm that needs more memory than is free fails with a message saying so.
  --all      sort nothing: for every device algorithm of bench that sorts whole arrays,
             print the largest n whose records and the workspace the algorithm asks for fit
             in the free device memory (Capannini et al.'s sizes each algorithm can sort),
             found by binary search with workspace queries. thrust allocates its own
             workspace: its row counts one more copy of the records
  --type T   --all: the key type (u32 i32 f32 u64 i64 f64; default u32)
  --pairs    --all: u32 values with the keys
)";

int largest(const arguments& args) {
  args.positional(0, "no file arguments");
  const bool all = args.has("all");
  if (all && (args.has("n") || args.has("algo")))
    throw usage_error("--all finds the largest n of every algorithm: no --n or --algo");
  if (!all && (args.has("type") || args.has("pairs")))
    throw usage_error("--type and --pairs go with --all");
  const bool pairs = parse_pairs(args);
  const std::string key_type = args.get("type", "u32");
  with_key_type(key_type, []<class K>() {});  // an unknown type is a usage error, GPU or not
  if (!cuda_device_present()) throw usage_error("needs a CUDA device");
  if (all) return print_largest_sizes(key_type, pairs);
  std::size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess)
    throw io_error("cannot read the device's free memory");
  std::uint64_t fitting = 1;
  while (fitting * 2 * sizeof(std::uint32_t) <= free_bytes) fitting *= 2;
  const std::uint64_t n = args.has("n") ? parse_count(args.get("n"), "--n") : fitting;
  gpusort::algorithm algo = gpusort::algorithm::bitonic;
  if (args.has("algo") && !gpusort::parse_algorithm(args.get("algo"), algo))
    throw usage_error("unknown algorithm '" + args.get("algo") + "' (" + algorithm_names + ")");
  std::printf("sorting %llu u32 keys (%.1f GiB) with %s; %.1f GiB of %.1f GiB free\n",
              static_cast<unsigned long long>(n), n * 4.0 / (1ull << 30),
              std::string(gpusort::to_string(algo)).c_str(), free_bytes / double(1ull << 30),
              total_bytes / double(1ull << 30));
  const gpusort::bench::largest_result r = gpusort::bench::sort_counting_sequence(n, algo);
  if (r.status != cudaSuccess) {
    std::printf("failed while %s: %s (workspace asked: %.1f GiB)\n", r.failed_step.c_str(),
                cudaGetErrorString(r.status), r.workspace_bytes / double(1ull << 30));
    return 3;
  }
  std::printf("sorted in %.1f ms (%.2f Gkeys/s), extra device memory %.1f GiB, %llu keys out "
              "of place\n",
              r.sort_ms, n / r.sort_ms / 1e6, r.workspace_bytes / double(1ull << 30),
              static_cast<unsigned long long>(r.misplaced));
  return r.misplaced == 0 ? 0 : 1;
}

const std::string comparisons_help = R"(usage: gpusort comparisons [--sizes 2^16..2^28]
Sorts uniform u32 keys with adaptive_bitonic and prints the comparisons it counted
(options::comparison_count): the plain algorithm (block bits 1) and the default (block sorts
and block merges of 2^12 keys), next to the bitonic network's n L (L + 1) / 4 comparators
and the bound 2 n L (L = log2 n, n rounded up to a power of two). On the GPU if there is
one, else with the CPU backend (the plain algorithm only).
)";

int comparisons(const arguments& args) {
  args.positional(0, "no file arguments");
  const std::vector<std::uint64_t> sizes = parse_sizes(args.get("sizes", "2^16..2^28"));
  const bool gpu = cuda_device_present();
  std::uint64_t* count = nullptr;
  if (gpu && cudaMallocManaged(reinterpret_cast<void**>(&count), sizeof(std::uint64_t)) != cudaSuccess)
    throw io_error("cannot allocate the counter");
  std::uint64_t host_count = 0;
  if (!gpu) count = &host_count;
  std::printf("%12s %16s %16s %16s %16s %12s\n", "n", "plain", "block_bits_12", "network",
              "2_n_log2_n", "plain/network");
  for (const std::uint64_t n : sizes) {
    const std::vector<std::uint32_t> keys = generate<std::uint32_t>(distribution::uniform, n, 1);
    std::uint64_t counted[2] = {0, 0};
    for (int v = 0; v < (gpu ? 2 : 1); ++v) {
      gpusort::options opt{.algo = gpusort::algorithm::adaptive_bitonic,
                           .block_bits = v == 0 ? 1u : 0u,
                           .comparison_count = count};
      *count = 0;
      if (gpu) {
        std::uint32_t* d = nullptr;
        if (cudaMalloc(reinterpret_cast<void**>(&d), n * sizeof(std::uint32_t)) != cudaSuccess ||
            cudaMemcpy(d, keys.data(), n * sizeof(std::uint32_t), cudaMemcpyHostToDevice) !=
                cudaSuccess)
          throw io_error("cannot copy the keys to the device");
        gpusort::sort(std::span<std::uint32_t>(d, n), opt);
        cudaFree(d);
      } else {
        std::vector<std::uint32_t> copy = keys;
        gpusort::sort(copy, opt);
      }
      counted[v] = *count;
    }
    int log_n = 0;
    while ((std::uint64_t{1} << log_n) < n) ++log_n;
    const std::uint64_t padded = std::uint64_t{1} << log_n;
    const std::uint64_t network = padded * log_n * (log_n + 1) / 4;
    std::printf("%12llu %16llu %16s %16llu %16llu %12.3f\n", static_cast<unsigned long long>(n),
                static_cast<unsigned long long>(counted[0]),
                gpu ? std::to_string(counted[1]).c_str() : "-",
                static_cast<unsigned long long>(network),
                static_cast<unsigned long long>(2 * padded * log_n),
                network ? double(counted[0]) / double(network) : 0.0);
  }
  if (gpu) cudaFree(count);
  return 0;
}

int demo(const arguments& args) {
  args.positional(0, "no file arguments");
  bench_config config;
  config.sizes = {parse_count(args.get("n", cuda_device_present() ? "2^24" : "2^20"), "--n")};
  config.reps = 10;
  std::printf("gpusort demo: %llu uniform u32 keys, sorted by each algorithm and verified\n",
              static_cast<unsigned long long>(config.sizes[0]));
  return run_bench(config);
}

const std::string plot_help = R"(usage: gpusort plot CSV DIR
Draws PNG figures of a benchmark CSV (the columns of bench --csv; others are ignored) into
DIR, created if missing, with matplotlib, and prints the path of each:
  rate_<key>_<values>_<distribution>[_seg<S>].png  keys/s against n on a log2 axis, a line
      per algorithm, for each key type, value type, distribution and segment size measured
      at 2 or more sizes
  spread_<key>_<values>_n<N>[_seg<S>].png  a candlestick per algorithm of its keys/s over the
      distributions (min, 25 %, median, 75 %, max), for each key type, value type, n and
      segment size where an algorithm was measured on 2 or more distributions
A later row for the same measurement replaces an earlier one.
The figures are drawn by `python3 -m gpusort.plot CSV DIR` (python/gpusort/plot.py), run
with $GPUSORT_PYTHON if set, else the Python the build was configured with, else python3;
it needs matplotlib (Debian: python3-matplotlib). The package is looked for in
$GPUSORT_PYTHON_DIR if set, else in the source tree the tool was built from, else where it
was installed. Without Python or matplotlib: one line on stderr and exit code 2.
)";

int plot(const arguments& args) {
  const std::vector<std::string>& files = args.positional(2, "CSV and DIR");
  const plot_outcome drawn = run_plotter(files[0], files[1]);
  for (const std::string& path : drawn.figures) std::printf("%s\n", path.c_str());
  if (drawn.status < 0) throw usage_error(drawn.error);
  // The plotter's own messages, already in gpusort plot's words.
  std::fputs(drawn.error.c_str(), stderr);
  return drawn.status;
}

struct command;

// Parses a command's arguments (argv[0] is its name) and runs it.
int run_long_options(const command& cmd, int argc, const char* const* argv);
int run_sort_command_line(const command& cmd, int argc, const char* const* argv);

struct command {
  std::string_view name;
  const std::string& help;
  int (*run)(const arguments&);
  std::set<std::string_view> valued, flags;
  int (*parse_and_run)(const command&, int, const char* const*) = run_long_options;
  bool dash_h_is_help = true;  // not for sort, where -h is GNU sort's --human-numeric-sort
};

int run_long_options(const command& cmd, int argc, const char* const* argv) {
  return cmd.run(parse_arguments(argc, argv, cmd.valued, cmd.flags));
}

// gpusort sort: typed records, or GNU sort's command line over text lines.
int run_sort_command_line(const command& cmd, int argc, const char* const* argv) {
  const sort_command_line line = parse_sort_command_line(argc, argv, cmd.valued, cmd.flags);
  if (line.version) {
    std::printf("gpusort sort (gpusort) %s\n", GPUSORT_VERSION);
    return 0;
  }
  return line.text ? sort_text_lines(*line.text) : cmd.run(line.typed);
}

const command commands[] = {
    {"gen",
     gen_help,
     gen,
     {"type", "n", "dist", "zipf", "and", "seed", "pairs", "record-bytes", "key-bytes",
      "key-offset", "tmp"},
     {"text"}},
    {"sort",
     sort_help,
     sort,
     {"type", "pairs", "algo", "device-memory", "memory", "gpus", "record-bytes", "key-bytes",
      "key-offset", "tmp", "nans", "max-input"},
     {"desc", "text", "stats"},
     run_sort_command_line,
     false},
    {"check", check_help, check,
     {"type", "pairs", "record-bytes", "key-bytes", "key-offset", "tmp", "nans", "max-input"},
     {"desc", "text"}},
    {"bench",
     bench_help,
     bench,
     {"algos", "types", "dists", "sizes", "segments", "pairs", "reps", "arrays", "seed",
      "buckets", "intervals", "k", "block-bits", "csv", "json", "plot", "gpu-name", "flush-l2"},
     {}},
    {"demo", demo_help, demo, {"n"}, {}},
    {"largest", largest_help, largest, {"n", "algo", "type", "pairs"}, {"all"}},
    {"comparisons", comparisons_help, comparisons, {"sizes"}, {}},
    {"plot", plot_help, plot, {}, {}},
};

bool asks_for_help(std::string_view arg) { return arg == "--help" || arg == "-h" || arg == "help"; }

// A command's own --help (or -h) before any `--`.
bool asks_for_command_help(const command& cmd, int argc, char** argv) {
  for (int i = 2; i < argc && std::string_view(argv[i]) != "--"; ++i)
    if (std::string_view(argv[i]) == "--help" || (cmd.dash_h_is_help && std::string_view(argv[i]) == "-h"))
      return true;
  return false;
}

const command* find_command(std::string_view name) {
  for (const command& c : commands)
    if (c.name == name) return &c;
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  open_dev_null_onto_closed_standard_descriptors();
  // A command ended by Ctrl-C leaves no scratch behind; the library's notices go to stderr.
  gpusort::set_signal_cleanup(true);
  gpusort::set_notice_handler([](std::string_view notice) {
    gpusort::tools::progress::print_line("gpusort: " + std::string(notice));  // above a progress line
  });
  if (argc == 2 && std::string_view(argv[1]) == "--version") {
    std::printf("gpusort %s\n", GPUSORT_VERSION);
    return 0;
  }
  if (argc < 2 || asks_for_help(argv[1])) {
    const command* topic = argc > 2 ? find_command(argv[2]) : nullptr;  // gpusort help sort
    std::fputs(topic ? topic->help.c_str() : main_help.c_str(), argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string_view name = argv[1];
  const command* cmd = find_command(name);
  if (!cmd) {
    std::string names;
    for (const command& c : commands) names += (names.empty() ? "" : " ") + std::string(c.name);
    std::fprintf(stderr, "gpusort: unknown command %s (%s)\n", quote_input(argv[1]).c_str(), names.c_str());
    return 2;
  }
  if (asks_for_command_help(*cmd, argc, argv)) {
    std::fputs(cmd->help.c_str(), stdout);
    return 0;
  }
  const auto fail = [&](const char* message, int code) {
    std::fprintf(stderr, "gpusort %s: %s\n", argv[1], one_line(shown_names::in(message)).c_str());
    return code;
  };
  try {
    return cmd->parse_and_run(*cmd, argc - 1, argv + 1);
  } catch (const usage_error& e) {
    return fail(e.what(), 2);
  } catch (const io_error& e) {
    return fail(e.what(), 3);
  } catch (const gpusort::error& e) {
    return fail(e.what(), 3);
  } catch (const std::bad_alloc&) {
    return fail("out of host memory", 3);
  } catch (const std::length_error&) {
    return fail("more than host memory can hold", 3);
  } catch (const std::exception& e) {  // std::filesystem::filesystem_error and the like
    return fail(e.what(), 3);
  } catch (...) {
    return fail("unexpected error", 3);
  }
}
