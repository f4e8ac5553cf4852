// The checks that make calling the loaded ggml through these headers safe: the library's version equals the
// headers' (the bundle's ggml/CMakeLists.txt, read at configure time), the structs passed across the boundary
// have the size the headers give them, and every type the pair table uses means what the table says. Each check
// is printed and recorded; the benchmark stops (mq::Error, exit 1) on the first mismatch.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ggml_api.h"

namespace vsggml {

struct AbiCheck {
  std::string what, headers, library;
  bool ok = false;
};

// Runs every check (none throws); `header_version` and `header_commit` are the bundle's.
std::vector<AbiCheck> abi_checks(const Api& a, const std::string& header_version, const std::string& header_commit);
// mq::Error naming the first failed check.
void require_abi(const std::vector<AbiCheck>& checks);
nlohmann::json abi_json(const std::vector<AbiCheck>& checks);

}  // namespace vsggml
