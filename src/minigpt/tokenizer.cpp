// Word-level tokenizer: deterministic vocabulary, text splitting, JSON round trip and hash.
#include "minigpt/tokenizer.h"

#include <algorithm>
#include <cctype>
#include <set>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "miniquant/error.h"
#include "miniquant/util/json_checked.h"

namespace minigpt {

namespace {
constexpr const char* kFormat = "minigpt-vocab-v1";

bool is_punct(char c) { return c == ',' || c == '.' || c == '?' || c == '!' || c == ';' || c == ':'; }
}  // namespace

Tokenizer Tokenizer::build(const std::vector<Story>& train) {
  std::set<std::string> words;  // std::string's operator< is byte order: the same on every platform
  for (const auto& s : train)
    for (const auto& t : s.tokens) words.insert(t);
  words.erase(kUnk);
  words.erase(kSep);
  std::vector<std::string> vocab{kUnk, kSep};
  vocab.insert(vocab.end(), words.begin(), words.end());
  return Tokenizer(std::move(vocab));
}

Tokenizer::Tokenizer(std::vector<std::string> vocab) : vocab_(std::move(vocab)) {
  if (vocab_.size() < 2 || vocab_[0] != kUnk || vocab_[1] != kSep)
    throw mq::Error("tokenizer: the vocabulary must start with \"<unk>\", \"<sep>\"; rebuild it with Tokenizer::build");
  uint64_t h = 0xcbf29ce484222325ULL;
  for (size_t i = 0; i < vocab_.size(); ++i) {
    if (vocab_[i].empty()) throw mq::Error(fmt::format("tokenizer: vocabulary entry {} is empty", i));
    if (!index_.emplace(vocab_[i], static_cast<int32_t>(i)).second)
      throw mq::Error(fmt::format("tokenizer: token '{}' appears twice in the vocabulary", mq::clip_text(vocab_[i])));
    for (unsigned char c : vocab_[i]) h = (h ^ c) * 0x100000001b3ULL;
    h = (h ^ 0u) * 0x100000001b3ULL;
  }
  hash_ = h;
}

int32_t Tokenizer::id(std::string_view token) const {
  auto it = index_.find(std::string(token));
  return it == index_.end() ? kUnkId : it->second;
}

const std::string& Tokenizer::token(int32_t id) const {
  if (id < 0 || id >= size())
    throw mq::Error(fmt::format("tokenizer: id {} is outside the vocabulary [0, {})", id, size()));
  return vocab_[static_cast<size_t>(id)];
}

std::vector<int32_t> Tokenizer::encode(const std::vector<std::string>& tokens) const {
  std::vector<int32_t> ids;
  ids.reserve(tokens.size());
  for (const auto& t : tokens) ids.push_back(id(t));
  return ids;
}

std::vector<std::string> Tokenizer::split_text(std::string_view text) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    if (!cur.empty()) out.push_back(std::move(cur));
    cur.clear();
  };
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      flush();
    } else if (is_punct(c)) {
      flush();
      out.emplace_back(1, c);
    } else {
      cur.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    }
  }
  flush();
  return out;
}

std::vector<int32_t> Tokenizer::encode_text(std::string_view text) const { return encode(split_text(text)); }

std::string Tokenizer::decode(std::span<const int32_t> ids) const {
  std::string out;
  bool line_start = true;
  for (int32_t i : ids) {
    const std::string& t = token(i);
    const bool attach = t.size() == 1 && is_punct(t[0]);
    if (!line_start && !attach) out.push_back(' ');
    out += t;
    line_start = i == kSepId;
    if (line_start) out.push_back('\n');
  }
  return out;
}

std::string Tokenizer::to_json() const {
  nlohmann::json j;
  j["format"] = kFormat;
  j["hash"] = fmt::format("{:016x}", hash_);
  j["tokens"] = vocab_;
  return j.dump();
}

Tokenizer Tokenizer::from_json(const std::string& text) {
  nlohmann::json j;
  try {
    j = mq::parse_json_checked(text, "vocabulary JSON");
  } catch (const mq::Error& e) {
    throw mq::Error(fmt::format("tokenizer: {}; the checkpoint metadata is corrupt", e.what()));
  }
  if (!j.is_object() || !j.contains("format") || !j["format"].is_string() || j["format"] != kFormat || !j.contains("tokens") || !j["tokens"].is_array())
    throw mq::Error(fmt::format("tokenizer: vocabulary JSON lacks format \"{}\" and a \"tokens\" array", kFormat));
  std::vector<std::string> vocab;
  for (const auto& t : j["tokens"]) {
    if (!t.is_string()) throw mq::Error("tokenizer: vocabulary JSON holds a non-string token");
    vocab.push_back(t.get<std::string>());
  }
  Tokenizer tok(std::move(vocab));
  if (j.contains("hash") && (!j["hash"].is_string() || j["hash"] != fmt::format("{:016x}", tok.hash())))
    throw mq::Error("tokenizer: vocabulary JSON hash does not match its tokens; the metadata was edited or truncated");
  return tok;
}

std::vector<int32_t> encode_split(const Tokenizer& tok, const std::vector<Story>& split) {
  size_t n = 0;
  for (const auto& s : split) n += s.tokens.size();
  std::vector<int32_t> ids;
  ids.reserve(n);
  for (const auto& s : split)
    for (const auto& t : s.tokens) ids.push_back(tok.id(t));
  return ids;
}

}  // namespace minigpt
