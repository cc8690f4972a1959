// The gpusort tool in pipelines and on special files (tools/streams.hpp): `-` both ways, FIFOs,
// devices, symbolic links, read-only directories, a terminal, stream inputs larger than the
// host budget. Every test makes its own special files in its temporary directory and checks
// the exit code, the one stderr line, the bytes that arrived, and that no special file or link
// was replaced by a regular file.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "cpu/tool_fixture.hpp"
#include "streams.hpp"

namespace {

using namespace gpusort_test_tool;

class ToolStreams : public Tool {
 protected:
  // A file of generated keys, and the same keys sorted by the tool into a regular file: the
  // bytes every other way of sorting them must produce.
  std::string generate(const std::string& gen_args, const std::string& name) {
    EXPECT_EQ(run("gen " + gen_args + " " + file(name)).code, 0);
    return slurp(file(name));
  }
  std::string sorted(const std::string& sort_args, const std::string& in) {
    const outcome o = run("sort " + sort_args + " " + file(in) + " " + file("reference"));
    EXPECT_EQ(o.code, 0) << o.err;
    std::string bytes = slurp(file("reference"));
    fs::remove(file("reference"));
    return bytes;
  }
  static bool is_kind(const std::string& path, mode_t kind) {
    struct stat info {};
    return ::lstat(path.c_str(), &info) == 0 && (info.st_mode & S_IFMT) == kind;
  }
};

// ---- the index math of file arguments -------------------------------------------------

TEST(NamedDescriptor, DashAndTheDescriptorPaths) {
  using gpusort::detail::external::named_descriptor;
  static_assert(named_descriptor("-", 0) == 0 && named_descriptor("-", 1) == 1);
  EXPECT_EQ(named_descriptor("/dev/stdin", 1), 0);
  EXPECT_EQ(named_descriptor("/dev/stdout", 0), 1);
  EXPECT_EQ(named_descriptor("/dev/stderr", 0), 2);
  EXPECT_EQ(named_descriptor("/dev/fd/63", 0), 63);
  EXPECT_EQ(named_descriptor("/proc/self/fd/7", 0), 7);
  for (const char* other : {"--", "-x", "./-", "/dev/fd/", "/dev/fd/1a", "/dev/fd/-1", "/dev/full",
                            "/proc/1/fd/1", "out.bin", "/dev/fd/99999999999"})
    EXPECT_EQ(named_descriptor(other, 1), -1) << other;
}

TEST_F(ToolStreams, FinalTargetFollowsRelativeAndAbsoluteLinks) {
  fs::create_directories(file("a"));
  fs::create_directories(file("b"));
  fs::create_symlink("../b/target", file("a/one"));
  fs::create_symlink(file("a/one"), file("two"));
  EXPECT_EQ(fs::path(gpusort::detail::external::final_target(file("two"))).lexically_normal(),
            fs::path(file("b/target")).lexically_normal());
  EXPECT_EQ(gpusort::detail::external::final_target(file("plain")), fs::path(file("plain")));
  fs::create_symlink("loop", file("loop"));
  EXPECT_THROW(gpusort::detail::external::final_target(file("loop")), gpusort::invalid_request);
}

TEST(ProtectedLinks, TheKernelsRule) {
  using gpusort::detail::external::may_follow_link;
  constexpr unsigned sticky_tmp = S_ISVTX | 0777, plain = 0755, root = 0, alice = 1000, bob = 1001;
  static_assert(may_follow_link(plain, root, bob, alice));        // not sticky: any link
  static_assert(may_follow_link(S_ISVTX | 0755, root, bob, alice));  // sticky, not world-writable
  static_assert(may_follow_link(0777, root, bob, alice));         // world-writable, not sticky
  static_assert(may_follow_link(sticky_tmp, root, alice, alice));  // the follower's own link
  static_assert(may_follow_link(sticky_tmp, bob, bob, alice));     // the directory owner's link
  static_assert(!may_follow_link(sticky_tmp, root, bob, alice));   // planted by someone else
  static_assert(!may_follow_link(sticky_tmp, root, bob, root));    // root too, as the kernel
}

// Issue 44: in a sticky world-writable directory, a link that user nobody planted pointing at
// root's file is not followed by root's sort (the file keeps its bytes and mode); root's own
// link there is followed.
TEST_F(ToolStreams, APlantedLinkInAStickyDirectoryIsNotFollowed) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to plant a link owned by another user";
  fs::create_directories(file("tmp"));
  ::chmod(file("tmp").c_str(), S_ISVTX | 0777);
  std::ofstream(file("victim")) << "root's secret";
  ::chmod(file("victim").c_str(), 0600);
  fs::create_symlink(file("victim"), file("tmp/out"));
  ASSERT_EQ(::lchown(file("tmp/out").c_str(), 65534, 65534), 0);  // nobody
  generate("--type u32 --n 1000", "in");
  for (const std::string command : {"sort --type u32 " + file("in") + " ", std::string("gen --type u32 --n 5 ")}) {
    const std::string verb = command.substr(0, command.find(' '));
    EXPECT_TRUE(usage_failure(run(command + file("tmp/out")), verb,
                              "not following the symbolic link " + file("tmp/out")));
  }
  EXPECT_EQ(slurp(file("victim")), "root's secret");
  struct stat info {};
  ASSERT_EQ(::stat(file("victim").c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  EXPECT_TRUE(is_kind(file("tmp/out"), S_IFLNK));
  fs::create_symlink(file("mine"), file("tmp/own"));  // root's own link
  EXPECT_EQ(run("sort --type u32 " + file("in") + " " + file("tmp/own")).code, 0);
  EXPECT_EQ(fs::file_size(file("mine")), 4000u);
}

// ---- outputs that are not regular files -----------------------------------------------

// A copy of the full device (char 1, 7) as OUT: ENOSPC is reported (exit 3, one line), and
// the device stays a device. mknod needs root; elsewhere the test is skipped.
TEST_F(ToolStreams, AFullDeviceReportsNoSpaceAndStaysADevice) {
  if (::mknod(file("full").c_str(), S_IFCHR | 0666, makedev(1, 7)) != 0)
    GTEST_SKIP() << "cannot make a device node here (not root)";
  generate("--type u32 --n 100000", "in");
  const std::vector<std::string> before = listing();
  for (const std::string& command :
       {"sort --type u32 " + file("in") + " " + file("full"),
        "gen --type u64 --n 1000 " + file("full"),
        "gen --type f32 --n 1000 --text " + file("full")}) {
    const outcome o = run(command);
    EXPECT_TRUE(failure_with(o, 3, command.substr(0, command.find(' ')),
                             file("full") + ": write failed: no space left on device"))
        << command;
    EXPECT_TRUE(is_kind(file("full"), S_IFCHR)) << command;
    EXPECT_EQ(listing(), before) << command;
  }
}

// A FIFO with a reader gets the sorted bytes, and stays a FIFO.
TEST_F(ToolStreams, AFifoWithAReaderGetsTheSortedBytes) {
  ASSERT_EQ(::mkfifo(file("fifo").c_str(), 0600), 0);
  generate("--type f64 --n 50001 --dist gaussian", "in");
  const std::string expected = sorted("--type f64 --desc", "in");
  for (int round = 0; round < 2; ++round) {
    std::string arrived;
    std::thread reader([&] { arrived = slurp(file("fifo")); });
    const outcome o = run("sort --type f64 --desc " + file("in") + " " + file("fifo"));
    // Had the tool failed before opening the FIFO, the reader would wait for a writer forever:
    // open it for writing (it succeeds only while the reader waits) so that it sees the end.
    if (const int late = ::open(file("fifo").c_str(), O_WRONLY | O_NONBLOCK); late >= 0)
      ::close(late);
    reader.join();
    EXPECT_EQ(o.code, 0) << o.err;
    EXPECT_TRUE(arrived == expected) << arrived.size() << " bytes arrived";
    EXPECT_TRUE(is_kind(file("fifo"), S_IFIFO));
  }
  EXPECT_EQ(listing(), (std::vector<std::string>{"fifo", "in"}));
}

// /dev/stdout writes through standard output as the shell opened it: appended with >>, and
// --stats moves to stderr so that it never mixes with the data.
TEST_F(ToolStreams, DevStdoutIsWrittenInPlace) {
  generate("--type u32 --n 3000", "in");
  const std::string expected = sorted("--type u32", "in");
  std::ofstream(file("log"), std::ios::binary) << "head";
  const outcome o = run("sort --type u32 --stats " + file("in") + " /dev/stdout >>" + file("log"));
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(slurp(file("log")) == "head" + expected);
  EXPECT_TRUE(is_kind(file("log"), S_IFREG));
  EXPECT_NE(o.err.find("plan: "), std::string::npos) << o.err;
  const outcome dash = run("sort --type u32 --stats " + file("in") + " - >" + file("dash"));
  EXPECT_EQ(dash.code, 0) << dash.err;
  EXPECT_TRUE(slurp(file("dash")) == expected);
}

// Binary data is not written to a terminal (exit 2, one line); text is.
TEST_F(ToolStreams, BinaryIsRefusedOnATerminal) {
  const int master = ::posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0 || ::grantpt(master) != 0 || ::unlockpt(master) != 0)
    GTEST_SKIP() << "no pseudo-terminal here";
  const std::string terminal = ::ptsname(master);  // its buffer holds the text written below
  generate("--type u32 --n 100", "in");
  EXPECT_TRUE(usage_failure(run("gen --type u32 --n 10 - >" + terminal), "gen",
                            "-: is a terminal; binary data is not written to one"));
  EXPECT_TRUE(usage_failure(run("sort --type u32 " + file("in") + " - >" + terminal), "sort",
                            "is a terminal"));
  EXPECT_TRUE(usage_failure(run("sort --type u32 " + file("in") + " " + terminal), "sort",
                            terminal + ": is a terminal"));
  EXPECT_EQ(run("gen --type u32 --n 10 --text - >" + terminal).code, 0);
  ::close(master);
  EXPECT_EQ(listing(), std::vector<std::string>{"in"});
}

// ---- symbolic links and directories --------------------------------------------------

// OUT a link to a file in another directory: the target gets the sorted bytes (through a
// temporary file in the target's directory), the link stays the same link.
TEST_F(ToolStreams, ALinkIsFollowedToItsTarget) {
  fs::create_directories(file("a"));
  fs::create_directories(file("b"));
  generate("--type i32 --n 7919 --dist zipf", "in");
  const std::string expected = sorted("--type i32", "in");
  std::ofstream(file("b/target")) << "old";
  fs::create_symlink("../b/target", file("a/link"));
  for (const std::string extra : {"", " --device-memory 8K"}) {  // in memory, out of core
    const outcome o = run("sort --type i32" + extra + " " + file("in") + " " + file("a/link"));
    EXPECT_EQ(o.code, 0) << o.err;
    EXPECT_TRUE(is_kind(file("a/link"), S_IFLNK));
    EXPECT_EQ(fs::read_symlink(file("a/link")), fs::path("../b/target"));
    EXPECT_TRUE(slurp(file("b/target")) == expected) << extra;
    EXPECT_EQ(fs::directory_iterator(file("a"))->path().filename(), "link");
    EXPECT_EQ(std::distance(fs::directory_iterator(file("a")), fs::directory_iterator()), 1);
    EXPECT_EQ(std::distance(fs::directory_iterator(file("b")), fs::directory_iterator()), 1);
  }
  // A link to the input sorts the input in place, still through the link.
  fs::create_symlink("in", file("in-link"));
  ASSERT_EQ(run("sort --type i32 " + file("in-link") + " " + file("in-link")).code, 0);
  EXPECT_TRUE(is_kind(file("in-link"), S_IFLNK));
  EXPECT_TRUE(slurp(file("in")) == expected);
}

// A dangling link gets its target created; a link into a missing directory fails (exit 2)
// and stays as it was.
TEST_F(ToolStreams, ADanglingLinkGetsItsTarget) {
  fs::create_directories(file("b"));
  generate("--type u64 --n 1000", "in");
  const std::string expected = sorted("--type u64", "in");
  fs::create_symlink(file("b/new"), file("link"));
  const outcome o = run("sort --type u64 " + file("in") + " " + file("link"));
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(is_kind(file("link"), S_IFLNK));
  EXPECT_TRUE(slurp(file("b/new")) == expected);
  fs::create_symlink(file("nowhere/new"), file("lost"));
  EXPECT_TRUE(usage_failure(run("sort --type u64 " + file("in") + " " + file("lost")), "sort",
                            file("lost") + ": cannot create a file in " + file("nowhere")));
  EXPECT_TRUE(is_kind(file("lost"), S_IFLNK));
  EXPECT_EQ(fs::read_symlink(file("lost")), fs::path(file("nowhere/new")));
}

// A read-only directory: OUT there (directly or through a link) fails before any work with
// one line (exit 2), and nothing appears or changes. As root, file permissions are made to
// hold by dropping the capabilities that bypass them.
TEST_F(ToolStreams, AReadOnlyDirectoryFailsBeforeTheWork) {
  fs::create_directories(file("ro"));
  std::ofstream(file("ro/old")) << "old";
  fs::permissions(file("ro"), fs::perms::owner_read | fs::perms::owner_exec |
                                  fs::perms::group_read | fs::perms::group_exec |
                                  fs::perms::others_read | fs::perms::others_exec);
  const std::string launcher = without_permission_override();
  if (std::system((launcher + "true").c_str()) != 0 ||
      std::system((launcher + "touch '" + file("ro/x") + "' 2>/dev/null").c_str()) == 0)
    GTEST_SKIP() << "cannot make a directory read-only here";
  generate("--type u32 --n 1000", "in");
  fs::create_symlink(file("ro/old"), file("link"));
  for (const std::string& out : {file("ro/out"), file("ro/old"), file("link")}) {
    EXPECT_TRUE(usage_failure(run("sort --type u32 " + file("in") + " " + out, launcher), "sort",
                              "cannot create a file in " + file("ro") + ": Permission denied"))
        << out;
    EXPECT_TRUE(usage_failure(run("gen --type u32 --n 10 " + out, launcher), "gen",
                              "Permission denied"))
        << out;
  }
  EXPECT_EQ(slurp(file("ro/old")), "old");
  EXPECT_EQ(std::distance(fs::directory_iterator(file("ro")), fs::directory_iterator()), 1);
  EXPECT_TRUE(is_kind(file("link"), S_IFLNK));
  fs::permissions(file("ro"), fs::perms::owner_all);
}

// ---- `-` and stream inputs ----------------------------------------------------------

// gen | sort | check with `-` both ways, for keys, pairs and text, with check's checksum
// equal to that of the generated file.
TEST_F(ToolStreams, DashBothWaysInAPipeline) {
  for (const std::string args :
       {"--type u32", "--type f32 --pairs u32", "--type i64 --text", "--type f64 --text --pairs u32"}) {
    const std::string gen_args = args + " --n 2^16+3 --dist few_unique --seed 5";
    generate(gen_args, "in");
    const std::string sum = checksum(args + " " + file("in"));
    for (const std::string desc : {"", " --desc"}) {
      const outcome o = shell("\"$GPUSORT\" gen " + gen_args + " - | \"$GPUSORT\" sort " + args +
                              desc + " - - | \"$GPUSORT\" check " + args + desc + " -");
      EXPECT_EQ(o.code, 0) << args << desc << ": " << o.err;
      EXPECT_EQ(field(o.out, "file: "), "-");
      EXPECT_EQ(field(o.out, "records: ").substr(0, 6), "65539 ") << o.out;
      EXPECT_EQ(field(o.out, "sorted (" + std::string(desc.empty() ? "ascending" : "descending") +
                                 "): "),
                "yes")
          << o.out;
      EXPECT_EQ(field(o.out, "checksum: "), sum) << args;
    }
    fs::remove(file("in"));
  }
  // The same pipeline through process substitution and a FIFO input.
  generate("--type u32 --n 5000", "in");
  const std::string expected = sorted("--type u32", "in");
  EXPECT_EQ(shell("\"$GPUSORT\" sort --type u32 <(cat " + file("in") + ") " + file("out")).code, 0);
  EXPECT_TRUE(slurp(file("out")) == expected);
  ASSERT_EQ(::mkfifo(file("fifo").c_str(), 0600), 0);
  // The writer is stopped after the sort, so that a tool that never opened the FIFO cannot
  // leave it waiting.
  const outcome o = shell("cat " + file("in") + " >" + file("fifo") + " & writer=$!; \"$GPUSORT\" sort "
                          "--type u32 " + file("fifo") + " " + file("out2") + "; rc=$?; kill $writer "
                          "2>/dev/null; wait; exit $rc");
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(slurp(file("out2")) == expected);
  EXPECT_TRUE(is_kind(file("fifo"), S_IFIFO));
}

// A stream bigger than the host budget is sorted out of core (several runs), and its spool
// and runs leave nothing behind, beside OUT or in --tmp DIR.
TEST_F(ToolStreams, AStreamBiggerThanTheHostBudgetGoesOutOfCore) {
  generate("--type u64 --n 2^16 --seed 3", "in");
  const std::string expected = sorted("--type u64", "in");
  const outcome o = shell("cat " + file("in") + " | \"$GPUSORT\" sort --type u64 --memory 64K "
                          "--device-memory 64K --stats - " + file("out"));
  EXPECT_EQ(o.code, 0) << o.err;
  EXPECT_NE(field(o.out, "plan: ").find(" runs of "), std::string::npos) << o.out;
  EXPECT_TRUE(slurp(file("out")) == expected);
  EXPECT_EQ(listing(), (std::vector<std::string>{"in", "out"}));
  fs::create_directories(file("tmp"));
  const outcome piped = shell("cat " + file("in") + " | \"$GPUSORT\" sort --type u64 --memory 64K "
                              "--device-memory 64K --tmp " + file("tmp") + " - - >" + file("out2"));
  EXPECT_EQ(piped.code, 0) << piped.err;
  EXPECT_TRUE(slurp(file("out2")) == expected);
  EXPECT_TRUE(fs::is_empty(file("tmp")));
}

// A stream's errors name `-` (not the copy it was read into); nothing is written.
TEST_F(ToolStreams, StreamErrorsNameTheStream) {
  EXPECT_TRUE(usage_failure(shell("printf abcdef | \"$GPUSORT\" sort --type u32 - " + file("out")),
                            "sort", "-: 6 bytes is not a whole number of 4-byte records"));
  EXPECT_TRUE(usage_failure(shell("printf '1\\nx\\n' | \"$GPUSORT\" check --type u32 --text -"),
                            "check", "-:2: 'x' is not a u32 key"));
  EXPECT_TRUE(listing().empty());
  const outcome empty = run("sort --type u32 - " + file("out") + " </dev/null");
  EXPECT_EQ(empty.code, 0) << empty.err;
  EXPECT_TRUE(is_kind(file("out"), S_IFREG));
  EXPECT_EQ(fs::file_size(file("out")), 0u);
}

}  // namespace
