// Word-level tokenizer for the verb corpus: vocabulary from the train split, encode/decode, and a
// JSON form plus a hash so a checkpoint carries (and can check) the vocabulary it was trained with.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "minigpt/corpus/story.h"

namespace minigpt {

class Tokenizer {
 public:
  static constexpr int32_t kUnkId = 0;
  static constexpr int32_t kSepId = 1;
  static constexpr const char* kUnk = "<unk>";
  static constexpr const char* kSep = kSeparator;

  // Ids: <unk> = 0, <sep> = 1, then every other token of the stories in byte order.
  static Tokenizer build(const std::vector<Story>& train);
  // `vocab` must start with <unk>, <sep> and hold no duplicates (mq::Error otherwise).
  explicit Tokenizer(std::vector<std::string> vocab);

  int32_t size() const { return static_cast<int32_t>(vocab_.size()); }
  int32_t id(std::string_view token) const;  // kUnkId when unknown
  const std::string& token(int32_t id) const;  // mq::Error when out of range
  const std::vector<std::string>& vocab() const { return vocab_; }

  std::vector<int32_t> encode(const std::vector<std::string>& tokens) const;
  // Lower-cases, splits on white space and cuts punctuation off words: "Yesterday, the dog" ->
  // "yesterday" "," "the" "dog". "<sep>" stays one token.
  std::vector<int32_t> encode_text(std::string_view text) const;
  static std::vector<std::string> split_text(std::string_view text);
  // Words joined by spaces, punctuation attached to the word before it, a line break after <sep>.
  std::string decode(std::span<const int32_t> ids) const;

  // FNV-1a 64 over the tokens in id order, each followed by a 0 byte.
  uint64_t hash() const { return hash_; }
  std::string to_json() const;
  static Tokenizer from_json(const std::string& json);

 private:
  std::vector<std::string> vocab_;
  std::unordered_map<std::string, int32_t> index_;
  uint64_t hash_ = 0;
};

// One id stream for a split: the stories in order, each ending in <sep>.
std::vector<int32_t> encode_split(const Tokenizer& tok, const std::vector<Story>& split);

}  // namespace minigpt
