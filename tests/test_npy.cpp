// .npy reading and writing: round trip, the dtypes and orders we accept, and clear errors.
#include <doctest/doctest.h>

#include <cstdio>
#include <string>

#include "miniquant/error.h"
#include "miniquant/util/io.h"
#include "miniquant/npy.h"
#include "temp_dir.h"

using namespace mq;

namespace {

std::string tmp_path(const char* name) { return mqtest::temp_path("mq_test", std::string("mq_test_npy_") + name); }

// A hand-made .npy file: header text as numpy writes it, then the raw bytes.
std::string npy_bytes(const std::string& dict, const std::string& data) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY\x01";
  out += '\0';
  out += static_cast<char>(header.size());
  out += '\0';
  return out + header + data;
}

std::string load_error(const std::string& bytes) {
  const std::string p = tmp_path("bad.npy");
  write_file_atomic(p, bytes);
  try {
    load_npy(p);
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("save then load gives the same matrix") {
  Matrix m{2, 3, {1.5f, -2.0f, 3.25f, 0.0f, 1e-3f, 7.0f}};
  save_npy(tmp_path("rt.npy"), m);
  const Matrix back = load_npy(tmp_path("rt.npy"));
  CHECK(back.rows == 2);
  CHECK(back.cols == 3);
  CHECK(back.data == m.data);
}

TEST_CASE("float64, float16, Fortran order and 1-D files") {
  const double d[4] = {1.0, 2.0, 3.0, 4.0};
  write_file_atomic(tmp_path("f8.npy"), npy_bytes("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 2), }",
                                                  std::string(reinterpret_cast<const char*>(d), sizeof d)));
  Matrix m = load_npy(tmp_path("f8.npy"));
  CHECK(m.data == std::vector<float>{1.0f, 3.0f, 2.0f, 4.0f});  // column-major on disk

  const uint16_t h[3] = {0x3C00, 0xC000, 0x3800};  // 1, -2, 0.5
  write_file_atomic(tmp_path("f2.npy"), npy_bytes("{'descr': '<f2', 'fortran_order': False, 'shape': (3,), }",
                                                  std::string(reinterpret_cast<const char*>(h), sizeof h)));
  m = load_npy(tmp_path("f2.npy"));
  CHECK(m.rows == 1);
  CHECK(m.cols == 3);
  CHECK(m.data == std::vector<float>{1.0f, -2.0f, 0.5f});
}

TEST_CASE("bad files say what is wrong") {
  const std::string bad = "'" + tmp_path("bad.npy") + "'";  // the test's own temporary folder
  CHECK(load_error("hello world, not numpy") == bad + " is not a .npy file (no \\x93NUMPY magic)");
  CHECK(load_error(npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (1,), }", "abcd")) ==
        bad + ": dtype '<i4' is not supported (little-endian float16/32/64: <f2, <f4, <f8)");
  CHECK(load_error(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", "abcd")) ==
        bad + ": truncated data: shape (2, 2) needs 16 bytes, the file has 4");
  CHECK(load_error(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2, 2), }", "")) ==
        bad + ": shape (2, 2, 2) is not a matrix (1-D or 2-D expected)");
  const std::string missing = tmp_path("does_not_exist.npy");
  try {
    load_npy(missing);
    FAIL("loaded a missing file");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) == "cannot read '" + missing + "': no such file or directory");
  }
}
