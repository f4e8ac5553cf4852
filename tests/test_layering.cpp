// The include graph of src/: libraries include only the ones below them (miniquant <- minigpt <- experiments), and
// inside src/miniquant each folder only the folders below it: util, then the K families (kquant/, which include
// only util), the formats and quantizers at the top level (which reach the K families through the format table),
// kernels/, and above them layers/ (QuantizedLinear), gguf/ and energy/, which do not include each other. No
// include runs back up (docs/ARCHITECTURE.md, "Layers"); the test fails when one appears. Beside it: the kernel
// library never includes util/sysinfo.h, which is a library of its own (mq_sysinfo: OpenSSL, hwloc) that only
// gguf/ and energy/ use.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>

namespace fs = std::filesystem;

namespace {

// A folder's layer inside src/miniquant ("" is the top level).
int layer(const std::string& folder) {
  static const std::map<std::string, int> order = {{"util", 0}, {"kquant", 1}, {"", 2}, {"kernels", 3}, {"layers", 4}, {"gguf", 4}, {"energy", 4}};
  const auto it = order.find(folder);
  return it == order.end() ? -1 : it->second;
}

// "src/miniquant/kernels/registry.h" -> "kernels"; a top-level file -> "".
std::string folder_of(const std::string& rel) {  // rel: below src/miniquant/
  const size_t slash = rel.find('/');
  return slash == std::string::npos ? "" : rel.substr(0, slash);
}

}  // namespace

TEST_CASE("src/miniquant: no include runs back up between its folders; no library includes one above it; the kernels never include sysinfo") {
  const fs::path root = fs::path(MQ_SOURCE_DIR) / "src";
  const std::regex inc(R"re(^\s*#\s*include\s+"([^"]+)")re");
  std::set<std::string> found, sysinfo;
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (!e.is_regular_file()) continue;
    const std::string ext = e.path().extension().string();
    if (ext != ".h" && ext != ".cpp") continue;
    const std::string rel = fs::relative(e.path(), root).generic_string();  // e.g. miniquant/kernels/registry.h
    const std::string lib = rel.substr(0, rel.find('/'));
    std::ifstream in(e.path());
    std::string line;
    ++files;
    while (std::getline(in, line)) {
      std::smatch m;
      if (!std::regex_search(line, m, inc)) continue;
      const std::string target = m[1];
      const std::string tlib = target.substr(0, target.find('/'));
      CAPTURE(rel);
      CAPTURE(target);
      // Libraries: miniquant never includes minigpt or experiments; minigpt never experiments.
      if (lib == "miniquant") CHECK((tlib != "minigpt" && tlib != "experiments"));
      if (lib == "minigpt") CHECK(tlib != "experiments");
      if (lib != "miniquant" || tlib != "miniquant") continue;
      const std::string from = rel.substr(std::string("miniquant/").size()), to = target.substr(std::string("miniquant/").size());
      const int lf = layer(folder_of(from)), lt = layer(folder_of(to));
      REQUIRE(lf >= 0);  // a new folder gets its place in layer() first
      REQUIRE(lt >= 0);
      if (lt > lf || (lt == lf && folder_of(from) != folder_of(to))) found.insert(from + " -> " + to);
      const std::string ff = folder_of(from);
      if (to == "util/sysinfo.h" && ff != "gguf" && ff != "energy" && from != "util/sysinfo.cpp") sysinfo.insert(from);
    }
  }
  CHECK(files > 100);
  for (const std::string& a : found) {
    CAPTURE(a);
    CHECK_MESSAGE(false, "an include runs back up the layers");
  }
  for (const std::string& f : sysinfo) {
    CAPTURE(f);
    CHECK_MESSAGE(false, "the kernel library includes util/sysinfo.h (mq_sysinfo is a library beside it)");
  }
}

// One door to every kernel: no code outside a family's own files chooses by a bit width. The integer families'
// widths are spelled in kernels/int_families.h (one specialization each), the K families' in kquant/ (one file
// each); everywhere else a kernel is chosen by the family (the registry) and specialised by the facts its
// family struct / KFamily names. A comparison of a width with a nonzero number, or a switch on one, fails this.
TEST_CASE("src/: no bit-width dispatch outside the families' own files") {
  const fs::path root = fs::path(MQ_SOURCE_DIR) / "src";
  const std::regex compare(R"re(\b(bits|Bits)\s*(==|!=)\s*[1-9])re"), swtch(R"re(switch\s*\([^)]*\b(bits|Bits)\b)re");
  int files = 0;
  std::set<std::string> found;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (!e.is_regular_file()) continue;
    const std::string ext = e.path().extension().string();
    if (ext != ".h" && ext != ".cpp") continue;
    const std::string rel = fs::relative(e.path(), root).generic_string();
    if (rel == "miniquant/kernels/int_families.h" || rel.rfind("miniquant/kquant/", 0) == 0) continue;
    ++files;
    std::ifstream in(e.path());
    std::string line;
    for (int n = 1; std::getline(in, line); ++n)
      if (std::regex_search(line, compare) || std::regex_search(line, swtch)) found.insert(rel + ":" + std::to_string(n) + ": " + line);
  }
  CHECK(files > 100);
  for (const std::string& f : found) {
    CAPTURE(f);
    CHECK_MESSAGE(false, "a bit-width dispatch outside the families' own files");
  }
  // The test can fail: the pattern catches the kinds of branch it is for.
  CHECK(std::regex_search(std::string("  if (s.bits == 8) {"), compare));
  CHECK(std::regex_search(std::string("if constexpr (Bits != 3)"), compare));
  CHECK(std::regex_search(std::string("  switch (f.bits) {"), swtch));
  CHECK_FALSE(std::regex_search(std::string("if (vector_bits == 512)"), compare));
}
