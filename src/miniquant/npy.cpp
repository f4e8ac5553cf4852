// A small .npy reader/writer. No Debian package offers one for C++ (cnpy is not packaged), and the
// format is a short text header followed by raw data, so it is written here.
#include "miniquant/npy.h"

#include <charconv>
#include <cstring>

#include <fmt/core.h>

#include "miniquant/util/checked.h"
#include "miniquant/error.h"
#include "miniquant/half.h"
#include "miniquant/util/io.h"

namespace mq {
namespace {

// The header is a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
// Parsed by hand, one left-to-right pass with no recursion and no backtracking, because a
// regex engine recurses per character and a legal but long field overflows the stack.
struct Header {
  std::string descr;
  bool fortran = false;
  std::vector<int64_t> shape;
  std::string shape_text;
};

class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& name) : s_(text), name_(name) {}

  Header parse() {
    Header h;
    bool seen_descr = false, seen_fortran = false, seen_shape = false;
    expect('{');
    while (true) {
      skip_space();
      if (peek() == '}') break;
      const std::string key = quoted();
      skip_space();
      expect(':');
      skip_space();
      if (key == "descr") {
        h.descr = quoted();
        seen_descr = true;
      } else if (key == "fortran_order") {
        h.fortran = boolean();
        seen_fortran = true;
      } else if (key == "shape") {
        const size_t begin = i_;
        h.shape = tuple();
        h.shape_text = std::string(s_.substr(begin, i_ - begin));
        seen_shape = true;
      } else {
        throw fail(fmt::format("unexpected key '{}' (a .npy header holds descr, fortran_order and shape)", clip(key)));
      }
      skip_space();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      skip_space();
      if (peek() != '}') throw fail("expected ',' or '}' after a value");
    }
    if (!seen_descr) throw fail("no 'descr' field");
    if (!seen_fortran) throw fail("no 'fortran_order' field");
    if (!seen_shape) throw fail("no 'shape' field");
    return h;
  }

 private:
  Error fail(const std::string& what) const {
    return Error(fmt::format("'{}': malformed npy header at byte {}: {}", name_, i_, what));
  }
  static std::string clip(std::string_view v) {
    return v.size() <= 40 ? std::string(v) : fmt::format("{}... ({} chars)", v.substr(0, 40), v.size());
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void skip_space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  void expect(char c) {
    skip_space();
    if (peek() != c) throw fail(fmt::format("expected '{}'", c));
    ++i_;
  }
  std::string quoted() {
    const char q = peek();
    if (q != '\'' && q != '"') throw fail("expected a quoted string");
    const size_t end = s_.find(q, i_ + 1);
    if (end == std::string_view::npos) throw fail("unterminated string");
    std::string out(s_.substr(i_ + 1, end - i_ - 1));
    i_ = end + 1;
    return out;
  }
  bool boolean() {
    if (s_.substr(i_, 4) == "True") {
      i_ += 4;
      return true;
    }
    if (s_.substr(i_, 5) == "False") {
      i_ += 5;
      return false;
    }
    throw fail("fortran_order must be True or False");
  }
  // "(3, 4)", "(5,)", "()": non-negative decimal integers.
  std::vector<int64_t> tuple() {
    std::vector<int64_t> out;
    expect('(');
    while (true) {
      skip_space();
      if (peek() == ')') break;
      if (peek() == '-') throw fail("negative dimension in shape");
      int64_t v = 0;
      const char* b = s_.data() + i_;
      auto [end, ec] = std::from_chars(b, s_.data() + s_.size(), v);
      if (ec == std::errc::result_out_of_range) throw fail("shape dimension does not fit in 64 bits");
      if (ec != std::errc() || end == b) throw fail("shape must be a tuple of non-negative integers");
      i_ += static_cast<size_t>(end - b);
      if (out.size() >= 32) throw fail("shape has more than 32 dimensions");
      out.push_back(v);
      skip_space();
      if (peek() == ',') {
        ++i_;
        continue;
      }
      skip_space();
      if (peek() != ')') throw fail("expected ',' or ')' in shape");
    }
    ++i_;
    return out;
  }

  std::string_view s_;
  const std::string& name_;
  size_t i_ = 0;
};

}  // namespace

Matrix load_npy(const std::string& path) { return parse_npy(read_file(path), path); }

Matrix parse_npy(std::string_view bytes, const std::string& path) {
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0)
    throw Error(fmt::format("'{}' is not a .npy file (no \\x93NUMPY magic)", path));
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len = 0, start = 0;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw Error(fmt::format("'{}': truncated npy header", path));
    for (int i = 0; i < 4; ++i) header_len |= static_cast<size_t>(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
    start = 12;
  } else {
    throw Error(fmt::format("'{}': unsupported npy format version {}", path, major));
  }
  if (header_len > bytes.size() - start) throw Error(fmt::format("'{}': truncated npy header", path));
  const Header h = HeaderParser(bytes.substr(start, header_len), path).parse();
  const std::vector<int64_t>& shape = h.shape;
  if (shape.empty() || shape.size() > 2)
    throw Error(fmt::format("'{}': shape {} is not a matrix (1-D or 2-D expected)", path, h.shape_text));

  int width = 0;
  if (h.descr == "<f4") width = 4;
  else if (h.descr == "<f8") width = 8;
  else if (h.descr == "<f2") width = 2;
  else
    throw Error(fmt::format("'{}': dtype '{}' is not supported (little-endian float16/32/64: <f2, <f4, <f8)", path,
                            h.descr.size() <= 40 ? h.descr : fmt::format("{}... ({} chars)", h.descr.substr(0, 40), h.descr.size())));

  Matrix m;
  m.rows = shape.size() == 2 ? shape[0] : 1;
  m.cols = shape.back();
  const std::string what = fmt::format("'{}': shape {}", path, h.shape_text);
  const int64_t n = checked_mul(m.rows, m.cols, what);
  const int64_t need = checked_mul(n, width, what);
  const size_t data_start = start + header_len;
  // Sizes are checked against the bytes present before anything is allocated.
  if (bytes.size() - data_start < static_cast<uint64_t>(need))
    throw Error(fmt::format("'{}': truncated data: shape {} needs {} bytes, the file has {}", path, h.shape_text, need,
                            bytes.size() - data_start));
  m.data.resize(static_cast<size_t>(n));
  const char* p = bytes.data() + data_start;
  const size_t rows = static_cast<size_t>(m.rows), cols = static_cast<size_t>(m.cols);
  for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
    // Fortran order stores column by column: element i is (i % rows, i / rows).
    const size_t dst = h.fortran ? (i % rows) * cols + i / rows : i;
    if (width == 4) {
      std::memcpy(&m.data[dst], p + 4 * i, 4);
    } else if (width == 8) {
      double d;
      std::memcpy(&d, p + 8 * i, 8);
      m.data[dst] = static_cast<float>(d);
    } else {
      uint16_t hv;
      std::memcpy(&hv, p + 2 * i, 2);
      m.data[dst] = f16_to_f32(hv);
    }
  }
  return m;
}

void save_npy(const std::string& path, const Matrix& m) {
  std::string header = fmt::format("{{'descr': '<f4', 'fortran_order': False, 'shape': ({}, {}), }}", m.rows, m.cols);
  // The whole preamble (10 bytes + header + '\n') is padded to a multiple of 64 bytes.
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xFF);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  out.append(reinterpret_cast<const char*>(m.data.data()), m.data.size() * sizeof(float));
  write_file_atomic(path, out);
}

}  // namespace mq
