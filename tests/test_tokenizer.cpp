// Tokenizer tests: vocabulary order, encode/decode round trips, <unk>, JSON round trip and hash.
#include <doctest/doctest.h>

#include <algorithm>

#include "miniquant/error.h"
#include "minigpt/corpus/corpus.h"
#include "minigpt/tokenizer.h"

using namespace minigpt;

namespace {

const Corpus& corpus() {
  static const Corpus c = [] {
    CorpusConfig cfg;
    cfg.train_tokens = 20'000, cfg.val_tokens = 2'000, cfg.test_tokens = 5'000;
    return generate_corpus(Lexicon::load(MQ_SOURCE_DIR "/data/lexicon"), cfg);
  }();
  return c;
}

const Tokenizer& tokenizer() {
  static const Tokenizer t = Tokenizer::build(corpus().train);
  return t;
}

std::vector<std::string> strs(std::initializer_list<const char*> l) { return {l.begin(), l.end()}; }

}  // namespace

TEST_CASE("vocabulary: specials first, then sorted, no duplicates") {
  const Tokenizer& t = tokenizer();
  REQUIRE(t.size() > 100);
  CHECK(t.token(Tokenizer::kUnkId) == "<unk>");
  CHECK(t.token(Tokenizer::kSepId) == "<sep>");
  const auto& v = t.vocab();
  CHECK(std::is_sorted(v.begin() + 2, v.end()));
  CHECK(std::adjacent_find(v.begin() + 2, v.end()) == v.end());
  for (int32_t i = 0; i < t.size(); ++i) CHECK(t.id(t.token(i)) == i);
  CHECK_THROWS_AS(t.token(t.size()), mq::Error);
  CHECK_THROWS_AS(t.token(-1), mq::Error);
}

TEST_CASE("encode/decode round trip over a split") {
  const Tokenizer& t = tokenizer();
  for (const auto& s : corpus().train) {
    const auto ids = t.encode(s.tokens);
    CHECK(std::find(ids.begin(), ids.end(), Tokenizer::kUnkId) == ids.end());
    CHECK(ids.back() == Tokenizer::kSepId);
    CHECK(t.encode_text(t.decode(ids)) == ids);
  }
}

TEST_CASE("encode_text splits punctuation and lower-cases a user prompt") {
  CHECK(Tokenizer::split_text("Yesterday, the dog") == strs({"yesterday", ",", "the", "dog"}));
  CHECK(Tokenizer::split_text("  Did the Cats eat?<sep>\nTom walks.") ==
        strs({"did", "the", "cats", "eat", "?", "<sep>", "tom", "walks", "."}));
  CHECK(Tokenizer::split_text("").empty());
  const Tokenizer& t = tokenizer();
  const auto ids = t.encode_text("Yesterday, the dog");
  REQUIRE(ids.size() == 4);
  CHECK(t.token(ids[0]) == "yesterday");
  CHECK(t.token(ids[1]) == ",");
  CHECK(t.decode(ids) == "yesterday, the dog");
}

TEST_CASE("unknown words map to <unk>") {
  const Tokenizer& t = tokenizer();
  const auto ids = t.encode_text("the zyzzyva walks");
  REQUIRE(ids.size() == 3);
  CHECK(ids[0] != Tokenizer::kUnkId);
  CHECK(ids[1] == Tokenizer::kUnkId);
  CHECK(t.id("Dog") == Tokenizer::kUnkId);  // encode() takes tokens as they are; only encode_text lower-cases
}

TEST_CASE("JSON round trip keeps tokens and hash") {
  const Tokenizer& t = tokenizer();
  const Tokenizer u = Tokenizer::from_json(t.to_json());
  CHECK(u.vocab() == t.vocab());
  CHECK(u.hash() == t.hash());
  CHECK_THROWS_AS(Tokenizer::from_json("{not json"), mq::Error);
  CHECK_THROWS_AS(Tokenizer::from_json(R"({"format":"other","tokens":["<unk>","<sep>"]})"), mq::Error);
  // Editing a token without updating the stored hash is caught.
  std::string edited = t.to_json();
  const auto at = edited.find("\"yesterday\"");
  REQUIRE(at != std::string::npos);
  edited.replace(at, 11, "\"yesterdax\"");
  try {
    Tokenizer::from_json(edited);
    FAIL("an edited vocabulary was accepted");
  } catch (const mq::Error& e) {
    CHECK(std::string(e.what()).find("hash does not match") != std::string::npos);
  }
}

TEST_CASE("hash: stable value, changes with the vocabulary") {
  const Tokenizer a(strs({"<unk>", "<sep>", "a", "b"}));
  const Tokenizer b(strs({"<unk>", "<sep>", "a", "c"}));
  const Tokenizer c(strs({"<unk>", "<sep>", "b", "a"}));
  const Tokenizer d(strs({"<unk>", "<sep>", "ab"}));
  const Tokenizer e(strs({"<unk>", "<sep>", "a", "b"}));
  CHECK(a.hash() == e.hash());
  CHECK(a.hash() != b.hash());
  CHECK(a.hash() != c.hash());  // order matters: ids would differ
  CHECK(a.hash() != d.hash());
  // FNV-1a 64 of "<unk>\0<sep>\0a\0b\0", pinned so the hash never drifts between versions.
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const char* s : {"<unk>", "<sep>", "a", "b"}) {
    for (const char* p = s; *p; ++p) h = (h ^ static_cast<unsigned char>(*p)) * 0x100000001b3ULL;
    h = h * 0x100000001b3ULL;
  }
  CHECK(a.hash() == h);
}

TEST_CASE("bad vocabularies are rejected") {
  CHECK_THROWS_AS(Tokenizer(strs({"a", "b"})), mq::Error);
  CHECK_THROWS_AS(Tokenizer(strs({"<unk>", "<sep>", "a", "a"})), mq::Error);
  CHECK_THROWS_AS(Tokenizer(strs({"<unk>", "<sep>", ""})), mq::Error);
}

TEST_CASE("encode_split joins stories, each ending in <sep>") {
  const Tokenizer& t = tokenizer();
  const auto& split = corpus().test;
  const auto ids = encode_split(t, split);
  size_t n = 0;
  for (const auto& s : split) n += s.tokens.size();
  REQUIRE(ids.size() == n);
  CHECK(std::count(ids.begin(), ids.end(), Tokenizer::kSepId) == static_cast<std::ptrdiff_t>(split.size()));
  CHECK(ids.back() == Tokenizer::kSepId);
  CHECK(std::vector<int32_t>(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(split[0].tokens.size())) ==
        t.encode(split[0].tokens));
}
