// Runs the built `miniquant` binary and captures what it prints and its exit code.
#pragma once
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

struct CliResult {
  int code = -1;
  std::string out;  // stdout and stderr together
};

inline CliResult run_cli(const std::string& args) {
  const std::string cmd = std::string(MQ_CLI_PATH) + " " + args + " 2>&1";
  CliResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}
