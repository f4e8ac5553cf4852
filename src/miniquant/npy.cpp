// A small .npy reader/writer. No Debian package offers one for C++ (cnpy is not packaged), and the
// format is a short text header followed by raw data, so it is written here.
#include "miniquant/npy.h"

#include <cstring>
#include <regex>

#include <fmt/core.h>

#include "miniquant/error.h"
#include "miniquant/half.h"
#include "miniquant/util/io.h"

namespace mq {
namespace {

std::string header_field(const std::string& header, const std::string& key, const std::string& path) {
  const std::regex re("['\"]" + key + "['\"]\\s*:\\s*('[^']*'|\"[^\"]*\"|True|False|\\([^)]*\\))");
  std::smatch m;
  if (!std::regex_search(header, m, re)) throw Error(fmt::format("'{}': npy header has no '{}' field", path, key));
  std::string v = m[1].str();
  if (v.front() == '\'' || v.front() == '"') v = v.substr(1, v.size() - 2);
  return v;
}

}  // namespace

Matrix load_npy(const std::string& path) {
  const std::string bytes = read_file(path);
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
  if (start + header_len > bytes.size()) throw Error(fmt::format("'{}': truncated npy header", path));
  const std::string header = bytes.substr(start, header_len);
  const std::string descr = header_field(header, "descr", path);
  const bool fortran = header_field(header, "fortran_order", path) == "True";
  const std::string shape_text = header_field(header, "shape", path);

  std::vector<int64_t> shape;
  const std::regex num("\\d+");
  for (auto it = std::sregex_iterator(shape_text.begin(), shape_text.end(), num); it != std::sregex_iterator(); ++it)
    shape.push_back(std::stoll(it->str()));
  if (shape.empty() || shape.size() > 2)
    throw Error(fmt::format("'{}': shape {} is not a matrix (1-D or 2-D expected)", path, shape_text));

  int width = 0;
  if (descr == "<f4") width = 4;
  else if (descr == "<f8") width = 8;
  else if (descr == "<f2") width = 2;
  else throw Error(fmt::format("'{}': dtype '{}' is not supported (little-endian float16/32/64: <f2, <f4, <f8)", path, descr));

  Matrix m;
  m.rows = shape.size() == 2 ? shape[0] : 1;
  m.cols = shape.back();
  const size_t n = static_cast<size_t>(m.rows * m.cols);
  const size_t data_start = start + header_len;
  if (bytes.size() - data_start < n * static_cast<size_t>(width))
    throw Error(fmt::format("'{}': truncated data: shape {} needs {} bytes, the file has {}", path, shape_text,
                            n * static_cast<size_t>(width), bytes.size() - data_start));
  m.data.resize(n);
  const char* p = bytes.data() + data_start;
  for (size_t i = 0; i < n; ++i) {
    // Fortran order stores column by column: element i is (i % rows, i / rows).
    const size_t dst = fortran ? (i % static_cast<size_t>(m.rows)) * static_cast<size_t>(m.cols) + i / static_cast<size_t>(m.rows) : i;
    if (width == 4) {
      std::memcpy(&m.data[dst], p + 4 * i, 4);
    } else if (width == 8) {
      double d;
      std::memcpy(&d, p + 8 * i, 8);
      m.data[dst] = static_cast<float>(d);
    } else {
      uint16_t h;
      std::memcpy(&h, p + 2 * i, 2);
      m.data[dst] = f16_to_f32(h);
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
