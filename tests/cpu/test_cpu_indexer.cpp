// The blocked sort-based indexer (examples/indexer): tokenizer, keys, runs and their merge,
// and whole builds of a small synthetic collection in every variant and many block sizes,
// each checked posting by posting against a std::map index built here independently. The
// gpu variants sort on the GPU where there is one, else with gpusort's CPU backend. With
// GPUSORT_INDEXER_PATH defined the program itself is run too.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "../../examples/indexer/indexer.hpp"

namespace {

namespace fs = std::filesystem;
namespace ix = gpusort::indexer;

// ---- helpers ------------------------------------------------------------------------------

// A directory of its own under the system's temporary directory, removed with everything in it.
class temp_dir {
 public:
  temp_dir() {
    static int serial = 0;
    path_ = fs::temp_directory_path() /
            ("gpusort-indexer-test-" + std::to_string(::getpid()) + "-" + std::to_string(serial++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_file(const fs::path& path, std::string_view bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::vector<std::string> listing(const fs::path& dir) {
  std::vector<std::string> names;
  if (!fs::exists(dir)) return names;
  for (const auto& entry : fs::directory_iterator(dir))
    names.push_back(entry.path().filename().string());
  std::ranges::sort(names);
  return names;
}

const std::vector<std::string> index_names = {"docs", "postings", "terms"};

// Tokens written independently of ix::tokenizer: alphanumeric ASCII runs, lowercased, runs
// over 64 characters dropped.
std::vector<std::string> naive_tokens(std::string_view text) {
  std::vector<std::string> tokens;
  std::string current;
  const auto end_run = [&] {
    if (!current.empty() && current.size() <= 64) tokens.push_back(current);
    current.clear();
  };
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 128 && std::isalnum(u))
      current += static_cast<char>(std::tolower(u));
    else
      end_run();
  }
  end_run();
  return tokens;
}

// term -> docID -> term frequency
using naive_index = std::map<std::string, std::map<ix::doc_id, std::uint32_t>>;

// ---- tokenizer, keys, varints ---------------------------------------------------------------

TEST(IndexerTokenizer, SplitsOnEverythingButAsciiLettersAndDigits) {
  using v = std::vector<std::string>;
  EXPECT_EQ(ix::tokenize(""), v{});
  EXPECT_EQ(ix::tokenize(" ,.;-- \n\t"), v{});
  EXPECT_EQ(ix::tokenize("Hello, World!"), (v{"hello", "world"}));
  EXPECT_EQ(ix::tokenize("x86-64 abc123 007"), (v{"x86", "64", "abc123", "007"}));
  EXPECT_EQ(ix::tokenize("foo_bar::Baz()"), (v{"foo", "bar", "baz"}));
  EXPECT_EQ(ix::tokenize("caf\xC3\xA9 na\xC3\xAFve"), (v{"caf", "na", "ve"}));  // UTF-8 bytes split
  EXPECT_EQ(ix::tokenize(std::string("a\0b", 3)), (v{"a", "b"}));
  EXPECT_EQ(ix::tokenize("MiXeD CASE"), (v{"mixed", "case"}));
  EXPECT_EQ(ix::tokenize("a"), v{"a"});
}

TEST(IndexerTokenizer, KeepsTokensOf64CharactersAndDropsLongerOnes) {
  const std::string longest(64, 'A'), too_long(65, 'b');
  EXPECT_EQ(ix::tokenize(longest), std::vector<std::string>{std::string(64, 'a')});
  EXPECT_EQ(ix::tokenize(too_long), std::vector<std::string>{});
  EXPECT_EQ(ix::tokenize("x " + too_long + " y " + std::string(1000, '7') + "!z"),
            (std::vector<std::string>{"x", "y", "z"}));
}

TEST(IndexerTokenizer, TokensMaySpanPieces) {
  const std::string text = "The quick brown-fox, " + std::string(70, 'q') + " jumps over " +
                           std::string(64, 'L') + " the lazy dog";
  for (std::size_t piece : {1, 2, 3, 7, 64, 65, 1000}) {
    std::vector<std::string> tokens;
    const auto add = [&](std::string_view t) { tokens.emplace_back(t); };
    ix::tokenizer t;
    for (std::size_t at = 0; at < text.size(); at += piece)
      t.feed(std::string_view(text).substr(at, piece), add);
    t.finish(add);
    EXPECT_EQ(tokens, ix::tokenize(text)) << "pieces of " << piece;
    EXPECT_EQ(tokens, naive_tokens(text));
  }
}

TEST(IndexerTokenizer, QueryWordsBecomeTermsAsDocumentsDo) {
  using v = std::vector<std::string>;
  EXPECT_EQ(ix::query_terms("Printf"), v{"printf"});
  EXPECT_EQ(ix::query_terms("PTHREAD_MUTEX"), (v{"pthread", "mutex"}));
  EXPECT_EQ(ix::query_terms("--"), v{"--"});
}

TEST(IndexerKeys, PackAndUnpack) {
  static_assert(ix::pack_key(0, 0) == 0);
  static_assert(ix::pack_key(1, 2) == 0x0000000100000002ull);
  static_assert(ix::term_of(ix::pack_key(0xFFFFFFFFu, 7)) == 0xFFFFFFFFu);
  static_assert(ix::doc_of(ix::pack_key(5, 0xFFFFFFFFu)) == 0xFFFFFFFFu);
  static_assert(ix::pack_key(3, 0xFFFFFFFFu) < ix::pack_key(4, 0));
  std::mt19937_64 random(1);
  for (int i = 0; i < 1000; ++i) {
    const auto term = static_cast<ix::term_id>(random()), doc = static_cast<ix::doc_id>(random());
    const std::uint64_t key = ix::pack_key(term, doc);
    EXPECT_EQ(ix::term_of(key), term);
    EXPECT_EQ(ix::doc_of(key), doc);
    // Keys order as (term, doc) pairs do.
    const auto term2 = static_cast<ix::term_id>(random()), doc2 = static_cast<ix::doc_id>(random());
    EXPECT_EQ(key < ix::pack_key(term2, doc2), std::pair(term, doc) < std::pair(term2, doc2));
  }
}

TEST(IndexerKeys, VarintsRoundTrip) {
  for (const std::uint64_t value : {0ull, 1ull, 127ull, 128ull, 16383ull, 16384ull, 0xFFFFFFFFull,
                                    0xFFFFFFFFFFFFFFFFull}) {
    std::uint8_t bytes[ix::max_varint_bytes];
    const std::size_t n = ix::put_varint(value, bytes);
    const std::uint8_t* at = bytes;
    std::uint64_t back = 0;
    ASSERT_TRUE(ix::get_varint(at, bytes + n, back));
    EXPECT_EQ(back, value);
    EXPECT_EQ(at, bytes + n);
    at = bytes;
    if (n > 1) {
      EXPECT_FALSE(ix::get_varint(at, bytes + n - 1, back)) << "cut short";
    }
  }
}

TEST(IndexerDictionary, GivesIdsInFirstSeenOrder) {
  ix::dictionary dict;
  EXPECT_EQ(dict.id_of("zeta"), 0u);
  EXPECT_EQ(dict.id_of("alpha"), 1u);
  EXPECT_EQ(dict.id_of("zeta"), 0u);
  for (int i = 0; i < 10000; ++i) dict.id_of("t" + std::to_string(i));  // views stay valid
  EXPECT_EQ(dict.id_of("alpha"), 1u);
  EXPECT_EQ(dict.size(), 10002u);
  EXPECT_EQ(dict.term(1), "alpha");
}

// ---- runs and merge ------------------------------------------------------------------------

std::vector<ix::run_record> read_run(const fs::path& path) {
  ix::run_reader reader(path, 24);
  std::vector<ix::run_record> records;
  for (ix::run_record r; reader.next(r);) records.push_back(r);
  return records;
}

TEST(IndexerRuns, RunsCollapseDuplicatesAndTheMergeAddsThemUp) {
  const temp_dir dir;
  const std::vector<std::uint64_t> a = {ix::pack_key(0, 1), ix::pack_key(0, 1), ix::pack_key(0, 1),
                                        ix::pack_key(2, 0), ix::pack_key(5, 9)};
  const std::vector<std::uint64_t> b = {ix::pack_key(0, 1), ix::pack_key(2, 3), ix::pack_key(2, 3)};
  EXPECT_EQ(ix::write_run(a, dir.path() / "a"), 3u);
  EXPECT_EQ(ix::write_run(b, dir.path() / "b"), 2u);
  EXPECT_EQ(ix::write_run({}, dir.path() / "empty"), 0u);
  EXPECT_EQ(fs::file_size(dir.path() / "a"), 3 * ix::run_record_bytes);
  const auto records = read_run(dir.path() / "a");
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].key, ix::pack_key(0, 1));
  EXPECT_EQ(records[0].tf, 3u);
  EXPECT_EQ(records[2].tf, 1u);

  const std::vector<fs::path> runs = {dir.path() / "a", dir.path() / "empty", dir.path() / "b"};
  std::vector<std::pair<std::uint64_t, std::uint32_t>> merged;
  ix::merge_runs(runs, [&](std::uint64_t key, std::uint32_t tf) { merged.emplace_back(key, tf); });
  const std::vector<std::pair<std::uint64_t, std::uint32_t>> expected = {
      {ix::pack_key(0, 1), 4}, {ix::pack_key(2, 0), 1},
      {ix::pack_key(2, 3), 2}, {ix::pack_key(5, 9), 1}};
  EXPECT_EQ(merged, expected);
}

TEST(IndexerRuns, ManyRandomRunsMergeToTheSortedCounts) {
  const temp_dir dir;
  std::mt19937_64 random(7);
  std::map<std::uint64_t, std::uint32_t> expected;
  std::vector<fs::path> runs;
  for (int r = 0; r < 37; ++r) {
    std::vector<std::uint64_t> keys(random() % 300);
    for (auto& key : keys) key = ix::pack_key(random() % 20, random() % 50);
    for (const auto key : keys) ++expected[key];
    std::ranges::sort(keys);
    runs.push_back(dir.path() / ("run-" + std::to_string(r)));
    ix::write_run(keys, runs.back());
  }
  // Through intermediate passes of at most 3 runs each, then one final merge.
  const auto reduced = ix::reduce_runs(runs, 3, dir.path(), nullptr);
  EXPECT_LE(reduced.size(), 3u);
  std::map<std::uint64_t, std::uint32_t> merged;
  std::uint64_t previous = 0;
  bool first = true;
  ix::merge_runs(reduced, [&](std::uint64_t key, std::uint32_t tf) {
    EXPECT_TRUE(first || key > previous);
    first = false;
    previous = key;
    merged[key] = tf;
  });
  EXPECT_EQ(merged, expected);
}

// ---- whole builds ------------------------------------------------------------------------------

// A small collection: 50 documents of words drawn (skewed, so terms repeat within
// documents) from a 200-word vocabulary, in nested directories, plus the awkward cases.
class IndexerBuild : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dir_.path() / "collection";
    std::mt19937 random(2011);
    std::vector<std::string> vocabulary;
    std::set<std::string> seen;
    const std::string letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    while (vocabulary.size() < 200) {
      std::string word(1 + random() % 12, ' ');
      for (char& c : word) c = letters[random() % letters.size()];
      if (seen.insert(naive_tokens(word).front()).second) vocabulary.push_back(word);
    }
    const std::vector<std::string> separators = {" ", "\n", ", ", ". ", "-", "_", "\t", "\xC3\xA9",
                                                 "(", ")\n\n", "::", "  "};
    for (int i = 0; i < 50; ++i) {
      std::string text;
      const int words = static_cast<int>(random() % 400);
      for (int w = 0; w < words; ++w) {
        const std::size_t pick = std::min(random() % 200, random() % 200);  // favours low ranks
        text += vocabulary[pick] + separators[random() % separators.size()];
      }
      const std::string sub = i % 3 == 0 ? "a" : i % 3 == 1 ? "b/c" : "b";
      add_document(root_ / sub / ("doc" + std::to_string(i) + ".txt"), text);
    }
    add_document(root_ / "empty.txt", "");
    add_document(root_ / "b" / "punctuation", "!!! ... --- ,,, ;;; ()[]{} \xE2\x80\x94\n");
    add_document(root_ / "a" / "long tokens.txt", std::string(64, 'K') + " " +
                                                      std::string(65, 'k') + " kept " +
                                                      std::string(200, '9'));
    // A NUL after the first 4 KiB: still text (the NUL separates tokens).
    add_document(root_ / "late-nul.txt",
                 std::string(5000, ' ') + "late" + std::string(1, '\0') + "nul");
    write_file(root_ / "a" / "binary.gz", std::string("\x1f\x8b\x08\0\0\0binary words here", 23));
    std::error_code ec;
    fs::create_symlink(root_ / "a" / "doc0.txt", root_ / "b" / "link.txt", ec);  // not followed

    std::ranges::sort(files_);
    for (std::size_t doc = 0; doc < files_.size(); ++doc)
      for (const std::string& token : naive_tokens(slurp(files_[doc]))) {
        ++expected_[token][static_cast<ix::doc_id>(doc)];
        ++tokens_;
      }
  }

  void add_document(const fs::path& path, std::string_view text) {
    write_file(path, text);
    files_.push_back(path.string());
  }

  ix::build_config config(ix::variant method, std::size_t block_keys,
                          const std::string& name) const {
    ix::build_config c;
    c.inputs = {root_.string()};
    c.index_dir = dir_.path() / name;
    c.method = method;
    c.block_keys = block_keys;
    return c;
  }

  // Every term, posting and document of the index at `index_dir` is the reference's.
  void expect_reference(const fs::path& index_dir, std::size_t documents) const {
    naive_index expected;  // of the first `documents` documents
    for (const auto& [term, postings] : expected_)
      for (const auto& [doc, tf] : postings)
        if (doc < documents) expected[term][doc] = tf;
    const ix::index_reader index(index_dir);
    ASSERT_EQ(index.document_count(), documents);
    for (std::size_t doc = 0; doc < documents; ++doc)
      EXPECT_EQ(index.document_path(static_cast<ix::doc_id>(doc)), files_[doc]);
    ASSERT_EQ(index.term_count(), expected.size());
    std::size_t i = 0, postings = 0;
    for (const auto& [term, docs] : expected) {
      ASSERT_EQ(index.term_name(i), term) << "terms in name order";
      const auto record = index.find(term);
      ASSERT_TRUE(record) << term;
      EXPECT_EQ(record->df, docs.size()) << term;
      std::vector<ix::posting> want;
      for (const auto& [doc, tf] : docs) want.push_back({doc, tf});
      EXPECT_EQ(index.postings(*record), want) << term;
      std::uint32_t max_tf = 0;
      for (const auto& p : want) max_tf = std::max(max_tf, p.tf);
      EXPECT_EQ(record->max_tf, max_tf) << term;
      postings += docs.size();
      ++i;
    }
    EXPECT_EQ(index.posting_count(), postings);
  }

  std::map<std::string, std::string> index_bytes(const fs::path& index_dir) const {
    std::map<std::string, std::string> bytes;
    for (const auto& name : index_names) bytes[name] = slurp(index_dir / name);
    return bytes;
  }

  temp_dir dir_;
  fs::path root_;
  std::vector<std::string> files_;  // text documents, in docID order
  naive_index expected_;
  std::uint64_t tokens_ = 0;
};

constexpr ix::variant all_variants[] = {ix::variant::cpu, ix::variant::gpu,
                                        ix::variant::gpu_pipelined};

TEST_F(IndexerBuild, EveryVariantAndBlockSizeGivesTheReferenceIndexByteForByte) {
  ASSERT_EQ(files_.size(), 54u);
  ASSERT_GT(tokens_, 5000u);
  const std::size_t block_sizes[] = {5, 7, 1000, 4096, tokens_, tokens_ + 1, std::size_t{1} << 20};
  std::map<std::string, std::string> first;
  for (const ix::variant method : all_variants) {
    for (const std::size_t block : block_sizes) {
      SCOPED_TRACE(std::string(ix::to_string(method)) + ", blocks of " + std::to_string(block));
      const std::string name =
          "index-" + std::string(ix::to_string(method)) + "-" + std::to_string(block);
      const ix::build_stats stats = ix::build_index(config(method, block, name));
      EXPECT_EQ(stats.documents, files_.size());
      EXPECT_EQ(stats.keys, tokens_);
      EXPECT_EQ(stats.runs, (tokens_ + block - 1) / block);
      EXPECT_EQ(stats.terms, expected_.size());
      EXPECT_GE(stats.parse_sort, 0.0);
      EXPECT_EQ(listing(dir_.path() / name), index_names) << "runs and temporary files removed";
      expect_reference(dir_.path() / name, files_.size());
      const auto bytes = index_bytes(dir_.path() / name);
      if (first.empty()) first = bytes;
      EXPECT_TRUE(bytes == first) << "index files differ from the first build's";
      fs::remove_all(dir_.path() / name);
    }
  }
}

TEST_F(IndexerBuild, MultiPassMergesAndOtherSortAlgorithmsGiveTheSameIndex) {
  ix::build_config reference = config(ix::variant::cpu, 100000, "reference");
  ix::build_index(reference);
  for (const ix::variant method : all_variants) {
    ix::build_config c = config(method, 97, "passes");
    c.max_fan_in = 3;
    c.sort_options.algo = gpusort::algorithm::bitonic;
    const ix::build_stats stats = ix::build_index(c);
    EXPECT_GT(stats.runs, 9u);
    EXPECT_TRUE(index_bytes(c.index_dir) == index_bytes(reference.index_dir))
        << ix::to_string(method);
    EXPECT_EQ(listing(c.index_dir), index_names);
  }
}

TEST_F(IndexerBuild, MaxBytesTakesDocumentsUntilTheBudgetIsReached) {
  std::uint64_t total = 0;
  std::size_t documents = 0;
  const std::uint64_t budget = 20000;
  while (total < budget) total += fs::file_size(files_[documents++]);
  ASSERT_LT(documents, files_.size());
  ix::build_config c = config(ix::variant::gpu_pipelined, 300, "partial");
  c.max_bytes = budget;
  const ix::build_stats stats = ix::build_index(c);
  EXPECT_EQ(stats.documents, documents);
  EXPECT_EQ(stats.bytes, total);
  expect_reference(c.index_dir, documents);

  c.max_bytes = 0;
  EXPECT_EQ(ix::build_index(c).documents, 0u);
  expect_reference(c.index_dir, 0);
}

TEST_F(IndexerBuild, QueriesFindSingleTermsAndIntersections) {
  const ix::build_config c = config(ix::variant::cpu, 1000, "index");
  ix::build_index(c);
  const ix::index_reader index(c.index_dir);
  const auto docs_of = [&](const std::string& term) {
    std::vector<ix::doc_id> docs;
    for (const auto& [doc, tf] : expected_.at(term)) docs.push_back(doc);
    return docs;
  };
  // The two most common terms, and one in few documents.
  std::vector<std::string> by_df;
  for (const auto& [term, docs] : expected_) by_df.push_back(term);
  std::ranges::stable_sort(by_df, std::greater<>{},
                           [&](const std::string& t) { return expected_.at(t).size(); });
  const std::string common = by_df[0], second = by_df[1], rare = by_df.back();

  ix::query_result one = ix::run_query(index, {common});
  ASSERT_EQ(one.terms.size(), 1u);
  EXPECT_EQ(one.terms[0].df, expected_.at(common).size());
  EXPECT_EQ(one.documents, docs_of(common));

  std::string shouting = common;
  std::ranges::transform(shouting, shouting.begin(),
                         [](char ch) { return static_cast<char>(std::toupper(ch)); });
  EXPECT_EQ(ix::run_query(index, {shouting}).documents, docs_of(common));

  for (const auto& terms : {std::vector<std::string>{common, second},
                            std::vector<std::string>{common, second, rare},
                            std::vector<std::string>{rare, common}}) {
    std::vector<ix::doc_id> want = docs_of(terms[0]);
    for (std::size_t i = 1; i < terms.size(); ++i) {
      std::vector<ix::doc_id> next;
      std::ranges::set_intersection(want, docs_of(terms[i]), std::back_inserter(next));
      want = next;
    }
    const ix::query_result all = ix::run_query(index, terms);
    EXPECT_EQ(all.documents, want);
    ASSERT_EQ(all.terms.size(), terms.size());
    for (std::size_t i = 0; i < terms.size(); ++i)
      EXPECT_EQ(all.terms[i].df, expected_.at(terms[i]).size());
  }
  // "word_word" is two terms, as in the documents.
  EXPECT_EQ(ix::run_query(index, {common + "_" + second}).documents,
            ix::run_query(index, {common, second}).documents);

  const ix::query_result unknown = ix::run_query(index, {"nosuchtermanywhere"});
  EXPECT_EQ(unknown.terms[0].df, 0u);
  EXPECT_TRUE(unknown.documents.empty());
  EXPECT_TRUE(ix::run_query(index, {common, "nosuchtermanywhere"}).documents.empty());
  EXPECT_EQ(ix::run_query(index, {std::string(64, 'k')}).documents.size(), 1u);
  EXPECT_EQ(ix::run_query(index, {"late"}).documents, ix::run_query(index, {"nul"}).documents);
  EXPECT_TRUE(ix::run_query(index, {"binary"}).documents.empty()) << "the binary file is skipped";
}

TEST_F(IndexerBuild, MissingInputsFailWithoutLeavingAnything) {
  ix::build_config c = config(ix::variant::cpu, 1000, "never");
  c.inputs.push_back((dir_.path() / "no such dir").string());
  EXPECT_THROW(ix::build_index(c), ix::usage_error);
  EXPECT_FALSE(fs::exists(c.index_dir));
  c.inputs = {};
  const ix::build_stats empty = ix::build_index(c);  // nothing to index: an empty index
  EXPECT_EQ(empty.documents, 0u);
  EXPECT_EQ(ix::index_reader(c.index_dir).term_count(), 0u);
}

// Fails on its third block, after two runs were written.
class failing_sorter final : public ix::block_sorter {
 public:
  void sort(std::vector<std::uint64_t>& keys) override {
    if (++calls_ == 3) throw std::runtime_error("sorter failed");
    std::ranges::sort(keys);
  }

 private:
  int calls_ = 0;
};

TEST_F(IndexerBuild, AFailedRebuildLeavesTheOldIndexAsItWas) {
  const ix::build_config good = config(ix::variant::cpu, 1000, "index");
  ix::build_index(good);
  const auto before = index_bytes(good.index_dir);
  for (const ix::variant method : all_variants) {
    failing_sorter sorter;
    ix::build_config bad = config(method, 100, "index");
    bad.sorter = &sorter;
    EXPECT_THROW(ix::build_index(bad), std::runtime_error) << ix::to_string(method);
    EXPECT_EQ(listing(good.index_dir), index_names) << "no runs or temporary files left";
    EXPECT_TRUE(index_bytes(good.index_dir) == before);

    failing_sorter fresh_sorter;
    ix::build_config fresh = config(method, 100, "fresh");
    fresh.sorter = &fresh_sorter;
    EXPECT_THROW(ix::build_index(fresh), std::runtime_error);
    EXPECT_FALSE(fs::exists(fresh.index_dir)) << "the directory this build created goes too";
  }
  const std::atomic<bool> cancel{true};
  ix::build_config cancelled = config(ix::variant::gpu_pipelined, 100, "index");
  cancelled.cancel = &cancel;
  EXPECT_THROW(ix::build_index(cancelled), ix::interrupted);
  EXPECT_TRUE(index_bytes(good.index_dir) == before);
  EXPECT_EQ(listing(good.index_dir), index_names);
}

TEST_F(IndexerBuild, BadIndexDirectoriesAreUsageErrors) {
  const auto open = [](const fs::path& dir) { return ix::index_reader(dir).term_count(); };
  EXPECT_THROW(open(dir_.path() / "nothing here"), ix::usage_error);
  EXPECT_THROW(open(root_), ix::usage_error);
  const ix::build_config c = config(ix::variant::cpu, 1000, "index");
  ix::build_index(c);
  const std::string terms = slurp(c.index_dir / "terms");
  write_file(c.index_dir / "terms", terms.substr(0, terms.size() / 2));
  EXPECT_THROW(open(c.index_dir), ix::usage_error);
  write_file(c.index_dir / "terms", "not an index at all, just text");
  EXPECT_THROW(open(c.index_dir), ix::usage_error);
  write_file(c.index_dir / "terms", terms);
  EXPECT_EQ(open(c.index_dir), expected_.size());
  write_file(c.index_dir / "docs", slurp(c.index_dir / "docs") + "x");
  EXPECT_THROW(open(c.index_dir), ix::usage_error);
  write_file(root_ / "file", "x");
  EXPECT_THROW(ix::build_index(config(ix::variant::cpu, 10, "collection/file")), ix::usage_error)
      << "the index path is a file";
}

// ---- the program ----------------------------------------------------------------------------

#ifdef GPUSORT_INDEXER_PATH
struct outcome {
  int code;
  std::string out, err;
};

outcome run_indexer(const temp_dir& dir, const std::string& args) {
  const fs::path out = dir.path() / "stdout", err = dir.path() / "stderr";
  const std::string command = std::string(GPUSORT_INDEXER_PATH) + " " + args + " >" + out.string() +
                              " 2>" + err.string();
  const int status = std::system(command.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
}

TEST_F(IndexerBuild, TheProgramBuildsAndQueries) {
  const std::string index = "'" + (dir_.path() / "index").string() + "'";
  for (const ix::variant method : all_variants) {
    const outcome built =
        run_indexer(dir_, "build --index " + index + " --variant " +
                              std::string(ix::to_string(method)) + " --block-keys 333 --stats '" +
                              root_.string() + "'");
    ASSERT_EQ(built.code, 0) << built.err;
    EXPECT_NE(built.out.find("documents: 54\n"), std::string::npos) << built.out;
    for (const char* line : {"parse: ", "sort: ", "write runs: ", "parse+sort: ", "merge: ",
                             "bytes: ", "postings: ", "terms: ", "runs: "})
      EXPECT_NE(built.out.find(std::string("\n") + line), std::string::npos) << line;
  }
  const std::string term = expected_.begin()->first;
  const outcome one = run_indexer(dir_, "query --index " + index + " --limit 0 " + term);
  ASSERT_EQ(one.code, 0) << one.err;
  std::string want = term + ": df " + std::to_string(expected_.at(term).size()) + "\n";
  for (const auto& [doc, tf] : expected_.at(term)) want += files_[doc] + "\n";
  EXPECT_EQ(one.out, want);

  const outcome unknown = run_indexer(dir_, "query --index " + index + " Nosuchterm");
  EXPECT_EQ(unknown.code, 0);
  EXPECT_EQ(unknown.out, "nosuchterm: df 0\n");
  const outcome two = run_indexer(dir_, "query --index " + index + " " + term + " nosuchterm");
  EXPECT_EQ(two.out, term + ": df " + std::to_string(expected_.at(term).size()) +
                         "\nnosuchterm: df 0\nall: 0\n");

  const outcome bad_index = run_indexer(dir_, "query --index '" + root_.string() + "' x");
  EXPECT_EQ(bad_index.code, 2);
  EXPECT_EQ(std::ranges::count(bad_index.err, '\n'), 1) << bad_index.err;
  const outcome missing = run_indexer(dir_, "build --index " + index + "2 /no/such/path");
  EXPECT_EQ(missing.code, 2);
  EXPECT_FALSE(fs::exists(dir_.path() / "index2"));
  EXPECT_EQ(run_indexer(dir_, "build --index " + index + " --variant fast x").code, 2);
  EXPECT_EQ(run_indexer(dir_, "frobnicate").code, 2);
}
#endif

}  // namespace
