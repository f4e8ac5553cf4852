// Depth- and duplicate-checked JSON parsing, bounded summaries and range-checked getters.
#include "miniquant/util/json_checked.h"

#include <cmath>
#include <vector>

#include <sys/stat.h>

#include <fmt/core.h>

#include "miniquant/util/error.h"
#include "miniquant/util/io.h"

namespace mq {
namespace {

// nlohmann's messages start with "[json.exception.parse_error.101] " and may quote a whole
// (possibly huge) token after "last read:": keep the reason, drop the prefix, cap the length.
std::string short_reason(const char* what) {
  std::string s(what);
  if (s.rfind("[json.exception.", 0) == 0) {
    const size_t close = s.find("] ");
    if (close != std::string::npos) s.erase(0, close + 2);
  }
  constexpr size_t kMax = 160;
  if (s.size() > kMax) s = s.substr(0, kMax) + "...";
  return s;
}

std::string truncated(std::string_view s, size_t max_chars) {
  if (s.size() <= max_chars) return std::string(s);
  return fmt::format("{}... ({} chars)", s.substr(0, max_chars), s.size());
}

}  // namespace

std::string clip_text(std::string_view s, size_t max_chars) { return truncated(s, max_chars); }

namespace {

// Builds the document from nlohmann's SAX events, as its own DOM parser does, with the checks: depth
// before anything deeper is built, a key repeated in one object, and the estimated bytes of what is
// built against the budget. (Not nlohmann's callback parser: at every closing brace it scans the whole
// parent for discarded values, so an object of n small objects cost n^2 / 2 steps: a 4 MiB header of
// "k":{} members took minutes.)
class CheckedDom final : public nlohmann::json_sax<nlohmann::json> {
 public:
  CheckedDom(const std::string& what, int max_depth, size_t budget, size_t text_size)
      : what_(what), max_depth_(max_depth), budget_(budget), text_size_(text_size) {}
  nlohmann::json& root() { return root_; }

  bool null() override { return value(nullptr); }
  bool boolean(bool v) override { return value(v); }
  bool number_integer(number_integer_t v) override { return value(v); }
  bool number_unsigned(number_unsigned_t v) override { return value(v); }
  bool number_float(number_float_t v, const string_t&) override { return value(v); }
  bool string(string_t& v) override {
    charge(heap(v.size()));
    return value(std::move(v));
  }
  bool binary(binary_t& v) override { return value(nlohmann::json::binary(std::move(v))); }
  bool start_object(std::size_t) override { return open(nlohmann::json::object()); }
  bool key(string_t& k) override {
    charge(96 + heap(k.size()));  // the member's map node, its key and value inside it
    nlohmann::json& obj = *stack_.back();
    if (obj.contains(k)) {
      throw Error(fmt::format("{}: duplicate JSON key {}; each key may appear once", what_, json_summary(nlohmann::json(k), 60)));
    }
    member_ = &obj[k];
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(nlohmann::json::array()); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    throw Error(fmt::format("{}: not valid JSON ({})", what_, short_reason(e.what())));
  }

 private:
  // Strings longer than the small-string buffer (15 chars) live on the heap, with the allocator's overhead.
  static size_t heap(size_t n) { return n > 15 ? n + 17 : 0; }
  void charge(size_t bytes) {
    built_ += bytes;
    if (built_ > budget_)
      throw Error(fmt::format("{}: the JSON would take more than {} MB of memory to hold ({} bytes of text); the data is "
                              "corrupt or not a file of this kind",
                              what_, (budget_ + (1 << 20) - 1) >> 20, text_size_));
  }
  // Places a value where the document is: the root, the next array element, or the member just keyed.
  nlohmann::json* place(nlohmann::json&& v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    nlohmann::json& top = *stack_.back();
    if (top.is_array()) {
      top.emplace_back(std::move(v));
      return &top.back();
    }
    *member_ = std::move(v);
    return member_;
  }
  bool value(nlohmann::json&& v) {
    charge(32);  // 16 bytes of value, as much again for a vector's growth
    place(std::move(v));
    return true;
  }
  bool open(nlohmann::json&& empty) {
    // Refuse before the parser builds anything deeper.
    if (static_cast<int>(stack_.size()) >= max_depth_)
      throw Error(fmt::format("{}: JSON nested deeper than {} levels; the data is corrupt", what_, max_depth_));
    charge(96);  // the value, its map or vector (a heap object), its slot's growth: measured ~84 bytes per "[]"
    stack_.push_back(place(std::move(empty)));
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }

  const std::string& what_;
  const int max_depth_;
  const size_t budget_, text_size_;
  size_t built_ = 0;
  nlohmann::json root_;
  std::vector<nlohmann::json*> stack_;  // the open containers, outermost first
  nlohmann::json* member_ = nullptr;    // where the value of the last key goes
};

}  // namespace

nlohmann::json parse_json_checked(std::string_view text, const std::string& what, int max_depth, size_t max_dom_bytes) {
  const size_t budget = max_dom_bytes ? max_dom_bytes : kJsonBytesPerTextByte * text.size() + (size_t{1} << 20);
  CheckedDom dom(what, max_depth, budget, text.size());
  try {
    nlohmann::json::sax_parse(text.begin(), text.end(), &dom, nlohmann::json::input_format_t::json, true);
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: not valid JSON ({})", what, short_reason(e.what())));
  }
  return std::move(dom.root());
}

nlohmann::json read_json_file(const std::string& path, size_t max_bytes) {
  check_input_file(path);
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && static_cast<uint64_t>(st.st_size) > max_bytes)
    throw Error(fmt::format("{}: {} bytes is larger than any JSON file of this kind (at most {}); the file is corrupt or "
                            "not the one meant",
                            path, st.st_size, max_bytes));
  // Bounded by the limit plus one byte, so a file that grew after the stat is reported as too large below.
  const std::string text = read_file(path, max_bytes + 1);
  if (text.size() > max_bytes)  // it grew between the stat and the read
    throw Error(fmt::format("{}: {} bytes is larger than any JSON file of this kind (at most {})", path, text.size(), max_bytes));
  return parse_json_checked(text, path);
}

void throw_json_access_error(const std::string& file, const nlohmann::json::exception& e) {
  throw Error(fmt::format("{}: unexpected content ({}); the file is corrupt or not the one meant", file, short_reason(e.what())));
}

std::string json_summary(const nlohmann::json& v, size_t max_chars) {
  switch (v.type()) {
    case nlohmann::json::value_t::object: return fmt::format("an object with {} keys", v.size());
    case nlohmann::json::value_t::array: return fmt::format("an array of {} elements", v.size());
    case nlohmann::json::value_t::string: return fmt::format("\"{}\"", truncated(v.get_ref<const std::string&>(), max_chars));
    case nlohmann::json::value_t::binary: return "binary data";
    case nlohmann::json::value_t::discarded: return "a discarded value";
    case nlohmann::json::value_t::number_float:
      // dump() writes inf and NaN (values built in code, or 1e999 read elsewhere) as null.
      if (!std::isfinite(v.get<double>())) return fmt::format("{}", v.get<double>());
      return truncated(v.dump(), max_chars);
    default: return truncated(v.dump(), max_chars);  // null, boolean, number: scalars, dump() does not recurse
  }
}

int64_t json_int(const nlohmann::json& v, const std::string& what, int64_t lo, int64_t hi) {
  auto fail = [&] {
    return Error(fmt::format("{} must be an integer in [{}, {}], got {}", what, lo, hi, json_summary(v)));
  };
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX) || static_cast<int64_t>(u) > hi || static_cast<int64_t>(u) < lo) throw fail();
    return static_cast<int64_t>(u);
  }
  if (!v.is_number_integer()) throw fail();
  const int64_t i = v.get<int64_t>();
  if (i < lo || i > hi) throw fail();
  return i;
}

uint64_t json_uint64(const nlohmann::json& v, const std::string& what) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return static_cast<uint64_t>(v.get<int64_t>());
  throw Error(fmt::format("{} must be a non-negative integer, got {}", what, json_summary(v)));
}

double json_finite(const nlohmann::json& v, const std::string& what) {
  // nlohmann parses overflowing literals such as 1e999 to inf: refuse those too.
  if (!v.is_number() || !std::isfinite(v.get<double>()))
    throw Error(fmt::format("{} must be a finite number, got {}", what, json_summary(v)));
  return v.get<double>();
}

std::string json_string(const nlohmann::json& v, const std::string& what) {
  if (!v.is_string()) throw Error(fmt::format("{} must be a string, got {}", what, json_summary(v)));
  return v.get<std::string>();
}

}  // namespace mq
