// Issue 70, the second security and robustness review: each test is one of its findings, run
// as the review ran it (a pipeline, a closed descriptor, a planted file, a second run in
// another PID namespace, a memory-limited control group, hostile names and tokens) and checked
// for the exit code, the bytes of OUT and what is left in the directory.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cpu/tool_fixture.hpp"
#include "run_plan.hpp"
#include "streams.hpp"

namespace {

using namespace gpusort_test_tool;
namespace ext = gpusort::detail::external;

// The tool without a GPU, whatever the host has: the CPU paths these findings were made on.
const std::string no_gpu = "CUDA_VISIBLE_DEVICES= ";

std::string sorted_u32_bytes(std::vector<std::uint32_t> keys) {
  std::ranges::sort(keys);
  return std::string(reinterpret_cast<const char*>(keys.data()), keys.size() * 4);
}

class ToolHostile : public Tool {
 protected:
  // in.u32: 1000 keys; returns their sorted bytes.
  std::string make_input() {
    std::vector<std::uint32_t> keys(1000);
    for (std::uint32_t i = 0; i < keys.size(); ++i) keys[i] = (i * 2654435761u) ^ 0x5a5a5a5a;
    write_array(file("in.u32"), keys);
    return sorted_u32_bytes(keys);
  }
};

// 1. A stream IN with an OUT that has no directory part: the scratch directory is ".".
TEST_F(ToolHostile, StreamInWithABareOutName) {
  const std::string expected = make_input();
  std::ofstream(file("keys.txt")) << "3\n1\n2\n";
  std::vector<std::uint8_t> records(64 * 8);
  for (std::size_t i = 0; i < records.size(); ++i) records[i] = static_cast<std::uint8_t>(i * 37);
  write_array(file("records.bin"), records);
  const outcome o = shell("cd '" + file("") + "' && cat in.u32 | \"$GPUSORT\" sort --type u32 - out.bin && "
                          "\"$GPUSORT\" sort --type u32 <(cat in.u32) out2.bin && "
                          "\"$GPUSORT\" sort --type u32 --text - out.txt < <(cat keys.txt) && "
                          "cat records.bin | \"$GPUSORT\" sort --record-bytes 8 --key-bytes 2 - out.rec && "
                          "\"$GPUSORT\" check --record-bytes 8 --key-bytes 2 out.rec");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(slurp(file("out.bin")) == expected);
  EXPECT_TRUE(slurp(file("out2.bin")) == expected);
  EXPECT_EQ(slurp(file("out.txt")), "1\n2\n3\n");
}

// 2. A closed stdin: `-` is refused (its descriptor now holds /dev/null), and OUT keeps its
// bytes; before, OUT's temporary file took descriptor 0 and was read back as IN.
TEST_F(ToolHostile, AClosedStdinLeavesOutAlone) {
  std::ofstream(file("keep.bin")) << "XXXX";
  const outcome o = shell("cd '" + file("") + "' && \"$GPUSORT\" sort --type u32 - ./keep.bin <&-");
  EXPECT_TRUE(usage_failure(o, "sort", "standard input is closed"));
  EXPECT_EQ(slurp(file("keep.bin")), "XXXX");
  const outcome check = shell("\"$GPUSORT\" check --type u32 /dev/stdin <&-");
  EXPECT_TRUE(usage_failure(check, "check", "standard input is closed"));
  const outcome gen = shell("\"$GPUSORT\" gen --type u32 --n 10 - >&-");
  EXPECT_TRUE(usage_failure(gen, "gen", "standard output is closed"));
  EXPECT_EQ(listing(), std::vector<std::string>{"keep.bin"});
}

// 3. A closed stderr: messages and progress lines go nowhere, never into OUT.
TEST_F(ToolHostile, AClosedStderrNeverWritesIntoOut) {
  std::ofstream(file("t.txt")) << "5\n4\n3\n2\n1\n";
  const std::string expected = make_input();
  const outcome o = shell(
      "cd '" + file("") + "' && " + no_gpu + "\"$GPUSORT\" sort --type u32 --text t.txt t2.txt 2>&- && " +
      no_gpu + "\"$GPUSORT\" sort --type u32 in.u32 out.bin 2>&- && " + no_gpu +
      "GPUSORT_PROGRESS=1 \"$GPUSORT\" gen --type u32 --n 1000 --seed 3 gen.bin 2>&- && "
      "\"$GPUSORT\" gen --type u32 --n 1000 --seed 3 gen2.bin");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(slurp(file("t2.txt")), "1\n2\n3\n4\n5\n");
  EXPECT_TRUE(slurp(file("out.bin")) == expected);
  EXPECT_TRUE(slurp(file("gen.bin")) == slurp(file("gen2.bin")));
}

// 4. The kernel's rule for regular files and FIFOs in sticky directories others may write
// into (fs.protected_regular, fs.protected_fifos), as a constant function and as root runs it.
TEST(StickyRule, MayWriteExisting) {
  using ext::may_write_existing;
  constexpr unsigned tmp = S_ISVTX | 0777, shared_group = S_ISVTX | 0770, plain = 0777;
  static_assert(!may_write_existing(tmp, 0, 65534, 0));         // root, nobody's file in /tmp
  static_assert(may_write_existing(tmp, 0, 0, 0));              // root's own
  static_assert(may_write_existing(tmp, 1000, 65534, 1000) == false);
  static_assert(may_write_existing(tmp, 65534, 65534, 0));      // the directory owner's file
  static_assert(may_write_existing(tmp, 0, 1000, 1000));        // the writer's own
  static_assert(!may_write_existing(shared_group, 0, 65534, 0));
  static_assert(may_write_existing(plain, 0, 65534, 0));        // not sticky
  static_assert(may_write_existing(S_ISVTX | 0755, 0, 65534, 0));  // sticky, only its owner writes
}

TEST_F(ToolHostile, RootDoesNotWriteIntoAFilePlantedInASharedStickyDirectory) {
  if (::geteuid() != 0) GTEST_SKIP() << "planting another user's file needs root";
  make_input();
  const fs::path shared = dir_ / "shared";
  fs::create_directory(shared);
  ASSERT_EQ(::chmod(shared.c_str(), 01777), 0);
  const std::string planted = (shared / "planted").string();
  std::ofstream(planted) << "nobody's";
  ASSERT_EQ(::chown(planted.c_str(), 65534, 65534), 0);
  ASSERT_EQ(::chmod(planted.c_str(), 0666), 0);
  const outcome o = run("sort --type u32 " + file("in.u32") + " " + planted);
  EXPECT_TRUE(usage_failure(o, "sort", "sticky directory"));
  EXPECT_EQ(slurp(planted), "nobody's");
  struct stat info {};
  ASSERT_EQ(::stat(planted.c_str(), &info), 0);
  EXPECT_EQ(info.st_uid, 65534u);
  // A link there to it: the same (the link itself is root's, so it is followed).
  fs::create_symlink(planted, shared / "link");
  EXPECT_TRUE(usage_failure(run("sort --type u32 " + file("in.u32") + " " + (shared / "link").string()),
                            "sort", "sticky directory"));
  // A FIFO planted there is refused before its open waits for a reader (a timeout guards a hang).
  const std::string fifo = (shared / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0666), 0);
  ASSERT_EQ(::chown(fifo.c_str(), 65534, 65534), 0);
  EXPECT_TRUE(usage_failure(run("sort --type u32 " + file("in.u32") + " " + fifo, "timeout 20 "),
                            "sort", "sticky directory"));
  // Root's own file there, and a new one, are written as before.
  std::ofstream(shared / "mine") << "old";
  EXPECT_EQ(run("sort --type u32 " + file("in.u32") + " " + (shared / "mine").string()).code, 0);
  EXPECT_EQ(run("sort --type u32 " + file("in.u32") + " " + (shared / "new").string()).code, 0);
  EXPECT_EQ(fs::file_size(shared / "mine"), 4000u);
}

// 5. Scratch is claimed by a lock, not a pid: a live run's scratch whose pid means nothing here
// (another PID namespace, another host) stays; unlocked scratch of a dead run goes.
TEST_F(ToolHostile, ALockedScratchOfAnotherNamespaceStays) {
  make_input();
  const std::string foreign = ".out.runs1-0";  // pid 1 of another namespace, alive or not
  fs::create_directory(file(foreign));
  std::ofstream(file(foreign + "/run0")) << "a live run's";
  const int held = ::open(file(foreign).c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(held, 0);
  ASSERT_EQ(::flock(held, LOCK_EX), 0);
  ASSERT_EQ(run("sort --type u32 " + file("in.u32") + " " + file("out")).code, 0);
  EXPECT_TRUE(fs::exists(file(foreign + "/run0")));
  ::close(held);  // the run ends
  ASSERT_EQ(run("sort --type u32 " + file("in.u32") + " " + file("out")).code, 0);
  EXPECT_EQ(listing(), (std::vector<std::string>{"in.u32", "out"}));
}

// The review's own reproduction: a run in a new PID namespace sees no process of the first
// run's pid, and used to delete its scratch midway.
TEST_F(ToolHostile, ARunInAnotherPidNamespaceLeavesALiveRunsScratch) {
  if (shell("unshare -p -f --mount-proc true").code != 0)
    GTEST_SKIP() << "no new PID namespace here";
  ASSERT_EQ(run("gen --type u32 --n 2^21 " + file("big")).code, 0);
  make_input();
  const outcome o = shell(
      no_gpu + "\"$GPUSORT\" sort --type u32 --memory 256K " + file("big") + " " + file("out") +
      " & pid=$!\n"
      "for i in $(seq 1 400); do ls -a '" + file("") + "' | grep -q '^\\.out\\.runs' && break; "
      "sleep 0.05; done\n"
      "unshare -p -f --mount-proc \"$GPUSORT\" sort --type u32 " + file("in.u32") + " " + file("out") +
      " || exit 9\n"
      "wait $pid");
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_EQ(run("check --type u32 " + file("out")).code, 0);
  EXPECT_EQ(listing(), (std::vector<std::string>{"big", "in.u32", "out"}));
}

// 6. Without a GPU and without budgets, the default host budget is half the memory the
// process may use, its control group's limit included.
TEST(HostMemory, CgroupLimitsAlongThePath) {
  const fs::path root = fs::temp_directory_path() / ("gpusort_cgroup_" + std::to_string(::getpid()));
  fs::remove_all(root);
  const auto put = [&](const fs::path& file, const std::string& text) {
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text << "\n";
  };
  using ext::cgroup_memory_limit;
  constexpr std::uint64_t none = UINT64_MAX;
  EXPECT_EQ(cgroup_memory_limit("0::/a/b\n", root), none);  // nothing mounted
  put(root / "a/b/memory.max", "max");
  put(root / "a/memory.max", "1073741824");
  EXPECT_EQ(cgroup_memory_limit("0::/a/b\n", root), 1073741824u);  // a parent's limit
  put(root / "a/b/memory.max", "536870912");
  EXPECT_EQ(cgroup_memory_limit("0::/a/b\n", root), 536870912u);
  // v1: the memory controller's hierarchy; a container's own group as the mount's root.
  put(root / "memory/memory.limit_in_bytes", "268435456");
  EXPECT_EQ(cgroup_memory_limit("4:cpu,memory:/host/path\n1:cpu:/x\n", root), 268435456u);
  put(root / "memory/host/path/memory.limit_in_bytes", "9223372036854771712");
  EXPECT_EQ(cgroup_memory_limit("4:memory:/host/path\n", root), 268435456u);
  EXPECT_EQ(cgroup_memory_limit("4:cpuacct:/host/path\n", root), none);
  EXPECT_EQ(cgroup_memory_limit("garbage", root), none);
  fs::remove_all(root);
  EXPECT_GT(ext::host_memory_bytes(), 0u);
  EXPECT_EQ(ext::default_host_budget(), ext::host_memory_bytes() / 2);
}

TEST_F(ToolHostile, AMemoryLimitedControlGroupSortsOutOfCore) {
  // A child group of this process's memory group (v1 here, or v2), if root may make one.
  std::ifstream in("/proc/self/cgroup");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::vector<ext::memory_cgroup> groups = ext::memory_cgroups(text, "/sys/fs/cgroup");
  const auto group = std::ranges::find_if(groups, [](const ext::memory_cgroup& g) {
    return fs::exists(g.dir / g.limit_file);  // mounted here, not a name of the host's
  });
  if (group == groups.end()) GTEST_SKIP() << "no memory control group here";
  const std::string group_dir = group->dir.string(), limit_file = group->limit_file;
  const fs::path child = fs::path(group_dir) / ("gpusort_test_" + std::to_string(::getpid()));
  std::error_code ec;
  // The kernel fills a new group with its files; a plain directory has none.
  if (!fs::create_directory(child, ec) || !fs::exists(child / limit_file) ||
      !(std::ofstream(child / limit_file) << (64 << 20))) {
    fs::remove(child, ec);
    GTEST_SKIP() << "cannot make a memory-limited control group here";
  }
  ASSERT_EQ(run("gen --type u32 --n 2^24 " + file("in")).code, 0);  // 64 MiB: in memory, 128
  const outcome o = shell("echo $$ > '" + (child / "cgroup.procs").string() + "' && " + no_gpu +
                          "exec \"$GPUSORT\" sort --type u32 --stats " + file("in") + " " + file("out"));
  fs::remove(child, ec);
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_NE(field(o.out, "plan: "), "in memory") << o.out;
  EXPECT_EQ(run("check --type u32 " + file("out")).code, 0);
  EXPECT_EQ(checksum("--type u32 " + file("out")), checksum("--type u32 " + file("in")));
}

// 9. Names whose scratch name would pass NAME_MAX take a short hashed one.
TEST(ScratchNames, LongNamesTakeAHashedStem) {
  EXPECT_EQ(ext::scratch_stem("out.bin"), "out.bin");
  const std::string longest(255 - 20, 'n'), longer(236, 'n');
  EXPECT_EQ(ext::scratch_stem(longest), longest);
  const std::string stem = ext::scratch_stem(longer);
  EXPECT_EQ(stem.size(), 24u);
  EXPECT_TRUE(stem.starts_with("gpusort-"));
  EXPECT_NE(stem, ext::scratch_stem(std::string(236, 'm')));
  EXPECT_EQ(ext::scratch_owner_pid(".gpusort-0123456789abcdef.runs42-3", "gpusort-0123456789abcdef"), 42);
}

TEST_F(ToolHostile, OutNamesUpToNameMaxAreWritten) {
  const std::string expected = make_input();
  for (const std::size_t length : {246u, 250u, 255u}) {
    const std::string out = file(std::string(length, 'o'));
    SCOPED_TRACE(length);
    ASSERT_EQ(run("sort --type u32 " + file("in.u32") + " " + out).code, 0);
    EXPECT_TRUE(slurp(out) == expected);
    // Out of core too: the runs directory's name.
    const outcome o =
        run("sort --type u32 --memory 8K --device-memory 2K " + file("in.u32") + " " + out, no_gpu);
    ASSERT_EQ(o.code, 0) << o.err;
    EXPECT_TRUE(slurp(out) == expected);
    fs::remove(out);
  }
  EXPECT_EQ(listing(), std::vector<std::string>{"in.u32"});
}

// 10. An empty OUT (or IN) is a usage error before any work.
TEST_F(ToolHostile, EmptyFileNamesFailFirst) {
  make_input();
  EXPECT_TRUE(usage_failure(run("sort --type u32 " + file("in.u32") + " ''"), "sort", "empty"));
  EXPECT_TRUE(usage_failure(run("sort --type u32 '' " + file("out")), "sort", "empty"));
  EXPECT_TRUE(usage_failure(run("check --type u32 ''"), "check", "empty"));
  EXPECT_TRUE(usage_failure(run("gen --type u32 --n 10 ''"), "gen", "empty"));
  EXPECT_EQ(listing(), std::vector<std::string>{"in.u32"});
}

// 11. Messages quote at most a few dozen bytes of the input, escaped.
TEST_F(ToolHostile, MessagesQuoteInputBriefly) {
  std::ofstream(file("huge.txt")) << std::string(50 << 20, '7') << "x\n";
  outcome o = run("sort --type u32 --text " + file("huge.txt") + " " + file("out"));
  EXPECT_TRUE(usage_failure(o, "sort", "is not a u32 key"));
  EXPECT_LT(o.err.size(), 400u);
  EXPECT_NE(o.err.find("(52428801 bytes)"), std::string::npos) << o.err;

  std::string binary;
  for (int i = 0; i < 256; ++i) binary += static_cast<char>(i == '\n' ? 'n' : i);
  std::ofstream(file("binary.txt"), std::ios::binary) << binary << "\n";
  o = run("sort --type u32 --text " + file("binary.txt") + " " + file("out"));
  EXPECT_TRUE(usage_failure(o, "sort", "binary.txt:1: expected one key, got '\\x00\\x01"));
  EXPECT_TRUE(std::ranges::all_of(o.err.substr(0, o.err.size() - 1), [](char c) {
    return static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f;
  })) << o.err;

  std::ofstream(file("nul.txt"), std::ios::binary).write("1\n2\0x\n", 6);
  o = run("sort --type u32 --text " + file("nul.txt") + " " + file("out"));
  EXPECT_TRUE(usage_failure(o, "sort", "'2\\x00x' is not a u32 key"));

  // A file name with a newline stays one line.
  EXPECT_TRUE(usage_failure(run("sort --type u32 $'" + file("a\\nb") + "' " + file("out")), "sort",
                            "a\\x0ab"));
  EXPECT_FALSE(fs::exists(file("out")));
}

TEST(Quoted, EscapesAndShortens) {
  EXPECT_EQ(ext::quote_input("abc"), "'abc'");
  EXPECT_EQ(ext::quote_input(std::string_view("a\0b\\\x1b", 5)), "'a\\x00b\\x5c\\x1b'");
  EXPECT_EQ(ext::quote_input(std::string(100, 'z'), 4), "'zzzz'... (100 bytes)");
  EXPECT_EQ(ext::one_line("x\ny\x7f"), "x\\x0ay\\x7f");
  EXPECT_EQ(ext::one_line(std::string(10, 'q'), 3), "qqq...");
}

// 13. The minor ones.
TEST_F(ToolHostile, DoubleDashEndsTheOptions) {
  const std::string expected = make_input();
  const outcome o = shell("cd '" + file("") + "' && cp in.u32 ./--x && \"$GPUSORT\" sort --type u32 -- --x --y");
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(slurp(file("--y")) == expected);
  EXPECT_EQ(shell("\"$GPUSORT\" sort --type u32 -- --help").code, 2);  // a file, not the help
}

TEST_F(ToolHostile, GpusNamesDistinctGpusThatExist) {
  make_input();
  EXPECT_TRUE(usage_failure(run("sort --type u32 --gpus 0,0 " + file("in.u32") + " " + file("out")),
                            "sort", "named twice"));
  EXPECT_TRUE(usage_failure(run("sort --type u32 --gpus 4096 " + file("in.u32") + " " + file("out")),
                            "sort", "there is no GPU 4096"));
  EXPECT_TRUE(usage_failure(run("sort --type u32 --gpus 0 " + file("in.u32") + " " + file("out"),
                                no_gpu),
                            "sort", "there is no GPU 0 (this machine has 0)"));
  EXPECT_FALSE(fs::exists(file("out")));
}

TEST_F(ToolHostile, TinyFloatsRoundAsTheCLibraryDoes) {
  std::ofstream(file("tiny.txt")) << "1e-50\n-1e-50\n1e-40\n1e-999\n";
  ASSERT_EQ(run("sort --type f32 --text " + file("tiny.txt") + " " + file("f32.txt")).code, 0);
  std::ifstream f32(file("f32.txt"));
  std::vector<float> values;
  for (float v; f32 >> v;) values.push_back(v);
  ASSERT_EQ(values.size(), 4u);
  EXPECT_TRUE(std::signbit(values[0]) && values[0] == 0.0f);  // -0 before +0
  EXPECT_EQ(values[3], std::strtof("1e-40", nullptr));       // a subnormal
  ASSERT_EQ(run("sort --type f64 --text " + file("tiny.txt") + " " + file("f64.txt")).code, 0);
  EXPECT_EQ(slurp(file("f64.txt")), "-1e-50\n0\n1e-50\n1e-40\n");
  std::ofstream(file("huge.txt")) << "1e39\n";
  EXPECT_TRUE(usage_failure(run("sort --type f32 --text " + file("huge.txt") + " " + file("out")),
                            "sort", "'1e39' is out of the range of f32 keys"));
}

TEST_F(ToolHostile, NansIsNotForRecords) {
  std::ofstream(file("r.bin")) << "abcdefgh";
  EXPECT_TRUE(usage_failure(
      run("sort --record-bytes 4 --key-bytes 2 --nans first " + file("r.bin") + " " + file("out")),
      "sort", "--nans"));
  EXPECT_TRUE(usage_failure(run("check --record-bytes 4 --key-bytes 2 --nans last " + file("r.bin")),
                            "check", "--nans"));
}

TEST_F(ToolHostile, HelpNamesItsCommand) {
  const outcome sort_help = run("help sort"), main_help = run("help");
  EXPECT_EQ(sort_help.code, 0);
  EXPECT_TRUE(sort_help.out.starts_with("usage: gpusort sort")) << sort_help.out;
  EXPECT_EQ(sort_help.out, run("sort --help").out);
  EXPECT_TRUE(main_help.out.starts_with("usage: gpusort <command>"));
}

TEST_F(ToolHostile, AnEndlessStreamStopsAtTheLimit) {
  const outcome o = run("sort --type u32 --max-input 1M /dev/zero " + file("out"), "timeout 60 ");
  EXPECT_TRUE(usage_failure(o, "sort", "longer than the limit of 1048576 bytes"));
  EXPECT_TRUE(usage_failure(shell("timeout 60 \"$GPUSORT\" check --type u32 --max-input 64K - < /dev/zero"),
                            "check", "--max-input"));
  EXPECT_TRUE(listing().empty());
}

}  // namespace
