// Lists an object file's undefined symbols with nm (see twins.h).
#include "labs/twins.h"

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>

#include <fmt/core.h>

#include "miniquant/error.h"

namespace mqlab {

std::vector<std::string> undefined_symbols(const std::string& object_file) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(object_file, ec))
    throw mq::Error(fmt::format("your compiled file {} is missing (rebuild the lab's target)", object_file));
  // The path comes from CMake (the build tree), never from the learner; quoted for spaces all the same.
  std::string quoted = "'";
  for (char ch : object_file) quoted += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  quoted += "'";
  const std::string cmd = "nm -C --undefined-only " + quoted + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) throw mq::Error("cannot run nm (binutils) to list what your file calls");
  std::string out;
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = ::pclose(p);
  if (status != 0)
    throw mq::Error(fmt::format("nm -C --undefined-only {} failed (exit {}): {}", object_file,
                                WIFEXITED(status) ? WEXITSTATUS(status) : -1, out.substr(0, 200)));
  std::vector<std::string> syms;
  size_t at = 0;
  while (at < out.size()) {
    size_t end = out.find('\n', at);
    if (end == std::string::npos) end = out.size();
    std::string line = out.substr(at, end - at);
    at = end + 1;
    // "                 U mq::gptq_quantize(float const*, ...)"
    const size_t u = line.find(" U ");
    if (u != std::string::npos) syms.push_back(line.substr(u + 3));
  }
  return syms;
}

std::string references_twin(const std::vector<std::string>& symbols, const std::vector<std::string>& twins) {
  for (const std::string& s : symbols)
    for (const std::string& t : twins)
      // After the name: its arguments, an ABI tag ("mqexp::epi_frontier[abi:cxx11](...)" for functions returning
      // std::string or containers of them), template arguments, or a member of a class twin.
      if (s.rfind(t, 0) == 0 && s.size() > t.size() &&
          (s[t.size()] == '(' || s[t.size()] == '[' || s[t.size()] == '<' || s.compare(t.size(), 2, "::") == 0))
        return s;
  return "";
}

}  // namespace mqlab
