// `gpusort sort` without --type: GNU sort's command line, run as a program and checked byte for
// byte against `LC_ALL=C sort` with the same arguments on generated text of many shapes, every
// option alone and combined, in short, attached, combined and long spellings; standard input
// and output, several inputs, -o onto an input, -c and -C, and the refusals.
#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <sys/stat.h>  // mkfifo

#include "cpu/tool_fixture.hpp"

namespace {

using namespace gpusort_test_tool;
using namespace std::string_literals;

// Text of one shape: `lines` lines, each made by `line` from the generator.
template <class Line>
std::string generated(int lines, std::uint64_t seed, Line line) {
  std::mt19937_64 rng(seed);
  std::string text;
  for (int i = 0; i < lines; ++i) text += line(rng) + "\n";
  return text;
}

std::string any_of(std::mt19937_64& rng, const std::vector<std::string>& choices) {
  return choices[rng() % choices.size()];
}

std::string word(std::mt19937_64& rng) {
  std::string w(1 + rng() % 5, 'a');
  for (char& c : w) c = "abcABC_z\xc3\xa9"[rng() % 10];
  return w;
}

std::string number(std::mt19937_64& rng) {
  std::string n = rng() % 3 == 0 ? "-" : "";
  n += std::to_string(rng() % 2000);
  if (rng() % 2) n += "." + std::to_string(rng() % 100);
  return n;
}

// The shapes: name and text.
std::vector<std::pair<std::string, std::string>> shapes() {
  return {
      {"words", generated(400, 1, [](auto& rng) {
         return word(rng) + " " + word(rng) + (rng() % 2 ? " " + word(rng) : "");
       })},
      {"csv", generated(400, 2, [](auto& rng) {
         return word(rng) + "," + number(rng) + "," + any_of(rng, {"x", "y", "z", ""});
       })},
      {"numbers", generated(400, 3, [](auto& rng) {
         return any_of(rng, {"", " ", "  ", "\t"}) + number(rng) +
                any_of(rng, {"", " a", " -0", " .5", " 1e3", " +4"});
       })},
      {"duplicates", generated(600, 4, [](auto& rng) {
         return any_of(rng, {"a 1", "a 1", "b 2", "b  2", "10 a", "9 b", " a 1", "a\t1"});
       })},
      {"empty_lines", generated(300, 5, [](auto& rng) {
         return any_of(rng, {"", "", " ", "x y", "y x", "\t"}) ;
       })},
      {"crlf", generated(300, 6, [](auto& rng) { return word(rng) + " " + number(rng) + "\r"; })},
      {"leading_blanks", generated(300, 7, [](auto& rng) {
         return any_of(rng, {"", " ", "   ", "\t", " \t"}) + word(rng) +
                any_of(rng, {" ", "  ", "\t"}) + number(rng);
       })},
      {"no_final_newline", "b 2\na 10\nc 1\n\nd"},
  };
}

// Each option alone, combined, and in its other spellings (the shapes' fields: 1 a word or a
// number, 2 a number or a word, 3 a word in CSV).
const std::vector<std::string> option_sets = {
    "",
    "-r",
    "-n",
    "-u",
    "-s",
    "-b",
    "-rn",
    "-nu",
    "-ru",
    "-bu",
    "-k2",
    "-k2,2",
    "-k2,2n",
    "-k2,2nr",
    "-k 2,2n",
    "-k2b,2",
    "-k1.2,1.3",
    "-k2,2n -k1,1r",
    "-n -k2,2",
    "-b -k2,2",
    "-s -k1,1",
    "-u -k1,1",
    "-su -k2n",
    "-r -k2,2",
    "-t, -k2,2n",
    "-t , -k2,2nr -k1,1",
    "-t, -k3,3 -k2,2n",
    "-t, -u -k3,3",
    "-t: -k2",
    "--reverse --numeric-sort",
    "--key=2,2n --field-separator=,",
    "--key 2,2 --unique --stable",
    "--ignore-leading-blanks --key=2,2",
    "-S 1M --parallel=2 -k2,2n",
};

class ToolGnu : public Tool {
 protected:
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(file(name), std::ios::binary) << text;
  }

  outcome gnu(const std::string& args) const { return shell("LC_ALL=C sort " + args); }
  outcome ours(const std::string& args) const { return run("sort " + args); }

  // The same exit code and standard output from both, for `args`.
  void expect_as_gnu(const std::string& args) const {
    SCOPED_TRACE(args);
    const outcome expected = gnu(args), got = ours(args);
    EXPECT_EQ(got.code, expected.code) << got.err;
    EXPECT_TRUE(got.out == expected.out) << "output differs; GNU's first bytes: "
                                         << expected.out.substr(0, 80);
  }
};

TEST_F(ToolGnu, EveryShapeWithEveryOption) {
  for (const auto& [shape, text] : shapes()) {
    write(shape, text);
    for (const std::string& options : option_sets) expect_as_gnu(options + " " + file(shape));
  }
}

TEST_F(ToolGnu, ZeroTerminatedRecords) {
  std::string text = generated(300, 8, [](auto& rng) { return word(rng) + "\n" + number(rng); });
  std::ranges::replace(text, '\n', '\0');  // newlines inside records, then NUL between them
  write("records", text + "last\nrecord");
  for (const std::string options : {"-z", "-zr", "--zero-terminated -u", "-z -k2,2n", "-zb -k1,1"})
    expect_as_gnu(options + " " + file("records"));
}

TEST_F(ToolGnu, StandardInputAndSeveralInputs) {
  write("a", "b 2\na 10\nno newline");
  write("b", "c 1\r\n\nz\n");
  write("c", "");
  for (const std::string args : {"< " + file("a"), "- < " + file("a"), "-n -k2 - < " + file("a"),
                                 file("a") + " " + file("b"), file("b") + " - " + file("a") + " < " + file("c"),
                                 file("a") + " " + file("c") + " " + file("b") + " -u",
                                 "-- " + file("a")})
    expect_as_gnu(args);
  const outcome piped = shell("cat " + file("a") + " | \"$GPUSORT\" sort -r");
  EXPECT_EQ(piped.out, gnu("-r " + file("a")).out);
}

TEST_F(ToolGnu, OutputFileMayBeAnInput) {
  const std::string text = shapes()[1].second;
  write("in", text);
  write("gnu", text);
  ASSERT_EQ(gnu("-t, -k2,2n -o " + file("gnu") + " " + file("gnu")).code, 0);
  const outcome o = ours("-t, -k2,2n -o " + file("in") + " " + file("in"));
  ASSERT_EQ(o.code, 0) << o.err;
  EXPECT_TRUE(o.out.empty());
  EXPECT_TRUE(slurp(file("in")) == slurp(file("gnu")));
  EXPECT_EQ(listing(), (std::vector<std::string>{"gnu", "in"}));  // no temporary file left
  // Attached and long spellings, and -o beside other inputs.
  write("x", "2\n1\n");
  ASSERT_EQ(ours("-o" + file("out1") + " " + file("x") + " " + file("in")).code, 0);
  ASSERT_EQ(ours("--output=" + file("out2") + " " + file("in") + " " + file("x")).code, 0);
  EXPECT_TRUE(slurp(file("out1")) == gnu(file("x") + " " + file("in")).out);
  EXPECT_TRUE(slurp(file("out2")) == slurp(file("out1")));
}

TEST_F(ToolGnu, CheckTellsDisorderAsGnuDoes) {
  write("sorted", "a\nb\nb\nc\n");
  write("unsorted", "a\nc\nb\n");
  for (const std::string check : {"-c", "-C", "--check", "--check=quiet", "--check=silent",
                                  "--check=diagnose-first"}) {
    SCOPED_TRACE(check);
    const outcome ok = ours(check + " " + file("sorted"));
    EXPECT_EQ(ok.code, 0);
    EXPECT_EQ(ok.err, "");
    const outcome bad = ours(check + " " + file("unsorted")), gnu_bad = gnu(check + " " + file("unsorted"));
    EXPECT_EQ(bad.code, 1);
    EXPECT_EQ(gnu_bad.code, 1);
    // GNU's message, from gpusort sort; none where GNU is silent.
    EXPECT_EQ(bad.err, gnu_bad.err.empty() ? "" : "gpusort " + gnu_bad.err);
  }
  // With -u, equal neighbours are disorder; -r, -n and keys order the check as the sort.
  for (const std::string args : {"-cu " + file("sorted"), "-c -r " + file("sorted"),
                                 "-c -n - < " + file("unsorted"), "-c -k1,1 -u " + file("sorted")}) {
    SCOPED_TRACE(args);
    const outcome got = ours(args), expected = gnu(args);
    EXPECT_EQ(got.code, expected.code);
    EXPECT_EQ(got.err, "gpusort " + expected.err);
  }
}

TEST_F(ToolGnu, MergeGivesTheSortedOutput) {
  write("a", "a 1\nc 3\ne 5\n");
  write("b", "b 2\nc 3\nd 4\n");
  for (const std::string options : {"-m", "-mu", "--merge -k2,2n"})
    expect_as_gnu(options + " " + file("a") + " " + file("b"));
}

TEST_F(ToolGnu, LocaleIsIgnored) {
  write("mixed", "b\nB\na\nA\n\xc3\xa9\n_\n");
  const std::string expected = gnu(file("mixed")).out;
  for (const std::string locale : {"LC_ALL=en_US.UTF-8", "LANG=de_DE.UTF-8", "LC_COLLATE=fr_FR.UTF-8"}) {
    const outcome o = shell(locale + " \"$GPUSORT\" sort " + file("mixed"));
    EXPECT_EQ(o.code, 0) << locale;
    EXPECT_EQ(o.out, expected) << locale;
  }
}

// Past -S the lines are sorted a chunk at a time (a third of -S) into scratch runs that are
// merged by GNU's comparison: with -S 12K, over a hundred runs of this text, merged 64 at a
// time and then together. Byte for byte as GNU's, every option set, NUL records, stdin, -o
// onto the input; nothing is left in -T's directory.
TEST_F(ToolGnu, PastTheBufferSizeRunsAreMerged) {
  std::string text;
  for (const auto& [shape, part] : shapes()) text += part.empty() || part.back() == '\n' ? part : part + "\n";
  for (int copy = 0; copy < 4; ++copy) text += text;
  ASSERT_GT(text.size(), std::size_t{256} << 10);
  write("big", text);
  for (const std::string& options : option_sets) expect_as_gnu("-S 12K " + options + " " + file("big"));
  std::string records = text;
  std::ranges::replace(records, '\n', '\0');
  write("records", records + "no terminator");
  expect_as_gnu("-S 12K -z -k2,2n " + file("records"));
  expect_as_gnu("-S 12K -u -k1,1 - " + file("big") + " < " + file("big"));
  // Lines longer than a chunk (4 KiB here) between short ones: a chunk grows until one ends.
  std::string long_lines = text.substr(0, 50000) + std::string(100000, 'x') + "\n" +
                           text.substr(50000, 50000) + std::string(30000, 'a') + "\n" + "z\n";
  write("long-lines", long_lines);
  expect_as_gnu("-S 12K " + file("long-lines"));
  expect_as_gnu("-S 12K -r - < " + file("long-lines"));
  fs::create_directory(file("tmp"));
  write("copy", text);
  EXPECT_EQ(ours("-S 12K -T " + file("tmp") + " -o " + file("copy") + " " + file("copy")).code, 0);
  EXPECT_TRUE(slurp(file("copy")) == gnu(file("big")).out);
  EXPECT_TRUE(fs::is_empty(file("tmp")));
}

// The last merge runs in pieces on all cores, cut at sampled lines: where a cut falls inside
// lines of equal keys, those of earlier runs (earlier input) still come first with -s, and -u
// keeps the first of them. Three keys over 300 KB: every cut falls inside one.
TEST_F(ToolGnu, MergedPiecesKeepEqualKeysInInputOrder) {
  std::string text;
  for (int i = 0; i < 30000; ++i) text += "key" + std::to_string(i % 3) + " " + std::to_string(i) + "\n";
  write("equal-keys", text);
  for (const std::string options : {"-s -k1,1", "-s -k1,1r", "-k1,1", "-u -k1,1", "-u -k2,2n"})
    expect_as_gnu("-S 96K " + options + " " + file("equal-keys"));
  // -u over runs that each hold 3,000 of the same 5,000 lines (a chunk's repeats are gone
  // before its run is written): each line kept once, whichever pieces its copies fall in.
  std::string block, repeats;
  for (int i = 0; i < 5000; ++i) block += "line " + std::to_string(i * 7919 % 5000) + "\n";
  for (int copy = 0; copy < 6; ++copy) repeats += block;
  write("repeats", repeats);
  for (const std::string options : {"-u", "-u -r", "-u -n -k2,2"})
    expect_as_gnu("-S 96K " + options + " " + file("repeats"));
}

// The progress line (GPUSORT_PROGRESS=1 stands for a terminal): the phases in memory and
// out of core, erased before anything else shows, the output the same; nothing without it.
TEST_F(ToolGnu, ProgressLineOnlyWhenAsked) {
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "line " + std::to_string(i * 7919 % 20000) + "\n";
  write("lines", text);
  const std::string sorted = gnu(file("lines")).out;
  const outcome quiet = ours(file("lines"));
  EXPECT_EQ(quiet.err.find('\r'), std::string::npos) << quiet.err;
  EXPECT_TRUE(quiet.out == sorted);
  const scoped_environment forced("GPUSORT_PROGRESS", "1");
  const std::vector<std::string> erased;
  for (const char* size : {"", "-S 32K "}) {
    SCOPED_TRACE(size);
    const outcome drawn = ours(std::string(size) + file("lines"));
    ASSERT_EQ(drawn.code, 0) << drawn.err;
    EXPECT_TRUE(drawn.out == sorted);
    EXPECT_NE(drawn.err.find("\rreading "), std::string::npos) << drawn.err;
    EXPECT_NE(drawn.err.find(*size ? "\rmerging " : "\rsorting "), std::string::npos) << drawn.err;
    EXPECT_EQ(visible_messages(drawn.err), erased) << drawn.err;
  }
  const outcome checked = ours("-c " + file("lines"));
  EXPECT_EQ(checked.code, 1);
  EXPECT_NE(checked.err.find("\rchecking "), std::string::npos) << checked.err;
  EXPECT_EQ(visible_messages(checked.err),
            std::vector<std::string>{"gpusort sort: " + file("lines") + ":3: disorder: line 15838"});
}

// A run or the output that cannot be written (here: a file size limit, as a full disk): exit
// code 3, the old output as it was, and no scratch file left beside it.
TEST_F(ToolGnu, AFailedRunWriteLeavesTheOutputAsItWas) {
  std::string text;
  for (int i = 0; i < 20000; ++i) text += std::to_string(i * 7919 % 20011) + " line\n";
  write("big", text);
  write("out", "the old output\n");
  // -S 600K: runs of 200 KB, past the 64 KiB limit; -S 12K: runs of 4 KiB, and the output
  // past it (refused when its space is reserved).
  for (const std::string size : {"600K", "12K"}) {
    const outcome o = shell("trap '' XFSZ; ulimit -f 64; \"$GPUSORT\" sort -S " + size + " -o " +
                            file("out") + " " + file("big"));
    EXPECT_EQ(o.code, 3) << o.err;
    // A run fails as it is written, the output as its space is reserved (before any byte).
    EXPECT_TRUE(o.err.find("write failed") != std::string::npos ||
                o.err.find("out: cannot reserve space: File too large") != std::string::npos)
        << o.err;
    EXPECT_EQ(slurp(file("out")), "the old output\n");
    EXPECT_EQ(listing(), (std::vector<std::string>{"big", "out"}));
  }
}

// A text sort stopped mid-way (its runs spilled, waiting on a FIFO input): SIGTERM leaves the
// old output and nothing else; SIGKILL leaves the old output and a temporary one, which the
// next run removes. The runs are unlinked files: gone with the process either way.
TEST_F(ToolGnu, AStoppedTextSortKeepsTheOldOutput) {
  std::string text;
  for (int i = 0; i < 20000; ++i) text += std::to_string(i * 7919 % 20011) + " line\n";
  write("big", text);
  ASSERT_EQ(::mkfifo(file("fifo").c_str(), 0600), 0);
  for (const auto& [signal_name, code] : {std::pair{"TERM", 143}, std::pair{"KILL", 137}}) {
    write("out", "old");
    const outcome o = shell("\"$GPUSORT\" sort -S 12K -o " + file("out") + " " + file("big") + " " +
                            file("fifo") + " & pid=$!\n"
                            "for i in $(seq 1 200); do ls -a '" + file("") + "' | grep -q '^\\.out\\.' && break; "
                            "sleep 0.05; done\nsleep 0.3\n"
                            "kill -" + signal_name + " $pid; wait $pid; echo \"stopped $?\"");
    ASSERT_NE(o.out.find("stopped " + std::to_string(code)), std::string::npos) << o.out << o.err;
    EXPECT_EQ(slurp(file("out")), "old") << signal_name;
    if (code == 143) EXPECT_EQ(listing(), (std::vector<std::string>{"big", "fifo", "out"}));
  }
  ASSERT_EQ(ours("-S 12K -o " + file("out") + " " + file("big")).code, 0);
  EXPECT_EQ(listing(), (std::vector<std::string>{"big", "fifo", "out"}));
  EXPECT_TRUE(slurp(file("out")) == gnu(file("big")).out);
}

TEST_F(ToolGnu, AcceptsGnuSizesAndTemporaryDirectory) {
  write("in", "b\na\n");
  fs::create_directory(file("tmp"));
  for (const std::string& options : std::vector<std::string>{"-S 100", "-S 1G", "-S 50%", "-S 2b", "--buffer-size=64K",
                                    "-T " + file("tmp"), "--temporary-directory=" + file("tmp"),
                                    "--parallel=4", "--batch-size=16", "--compress-program=gzip",
                                    "--sort=numeric"})
    expect_as_gnu(options + " " + file("in"));
  EXPECT_TRUE(fs::is_empty(file("tmp")));
}

TEST_F(ToolGnu, RefusesWhatItLacksWithOneLine) {
  write("in", "b\na\n");
  const std::string in = " " + file("in");
  for (const auto& [options, named] : std::vector<std::pair<std::string, std::string>>{
           {"-f", "--ignore-case"}, {"-d", "--dictionary-order"}, {"-i", "--ignore-nonprinting"},
           {"-g", "--general-numeric-sort"}, {"-M", "--month-sort"}, {"-V", "--version-sort"},
           {"-R", "--random-sort"}, {"-rf", "-f"}, {"--debug", "--debug"},
           {"--random-source=" + file("in"), "--random-source"}, {"--files0-from=x", "--files0-from"},
           {"--sort=month", "--sort=month"}, {"-k1f", "1f"}, {"-k0", "0"}, {"-t ab", "-t"},
           {"-S 12X", "-S"}, {"--parallel=0", "--parallel"}, {"--frobnicate", "--frobnicate"},
           {"-c" + in + in, "one input"}, {"-C -o x", "-o"}, {"--check=loud", "loud"},
           {"--desc", "--desc"}, {"--text", "--text"}, {"--type u32 -r", "--reverse"},
           {"-k", "invalid key"}}) {
    SCOPED_TRACE(options);
    const outcome o = ours(options + in);
    EXPECT_TRUE(usage_failure(o, "sort", named));
    EXPECT_EQ(o.out, "");
  }
  // GNU's -h is --human-numeric-sort: refused, pointing at --help.
  EXPECT_TRUE(usage_failure(ours("-h" + in), "sort", "--help"));
  EXPECT_TRUE(usage_failure(ours("-h" + in), "sort", "--human-numeric-sort"));
  // Missing and unreadable inputs: code 2 as GNU's, and the file named.
  EXPECT_TRUE(usage_failure(ours(file("none")), "sort", file("none")));
  EXPECT_EQ(gnu(file("none")).code, 2);
  EXPECT_TRUE(usage_failure(ours(file("in") + " " + file(".")), "sort", "is a directory"));
  EXPECT_EQ(listing(), std::vector<std::string>{"in"});
}

TEST_F(ToolGnu, VersionAndHelp) {
  const outcome version = ours("--version");
  EXPECT_EQ(version.code, 0);
  EXPECT_TRUE(version.out.starts_with("gpusort sort (gpusort) ")) << version.out;
  EXPECT_TRUE(run("--version").out.starts_with("gpusort ")) << run("--version").out;
  const outcome help = ours("--help");
  EXPECT_EQ(help.code, 0);
  EXPECT_TRUE(help.out.starts_with("usage: gpusort sort [OPTION]... [FILE]...")) << help.out;
  for (const std::string option : {"-k", "-t", "-o", "-c", "-C", "-m", "-S", "-T", "--parallel"})
    EXPECT_NE(help.out.find(option), std::string::npos) << option;
}

}  // namespace
