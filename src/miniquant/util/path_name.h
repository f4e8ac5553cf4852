// Names that come from a file or a flag and become part of a path (a config_id names a result
// file, a method names a trial folder): one check, so such a name can never leave its folder.
#pragma once
#include <string>
#include <string_view>

namespace mq {

// Longest name accepted: the longest id the project makes is ~35 characters
// ("L3-mlp_down-int8-per-channel-gptq"); 64 leaves room and keeps paths short.
inline constexpr size_t kMaxPathName = 64;

// "" when `name` may be one path component: 1..kMaxPathName characters of [A-Za-z0-9._+-], not
// starting with '.' (no "..", no hidden files) or '-' (never read as an option). Else the reason.
std::string path_name_problem(std::string_view name);
// Throws mq::UsageError "<what> "<name>" cannot name a file: <reason>" (exit 2: a bad value, like a
// bad flag) unless path_name_problem(name) is "".
void check_path_name(std::string_view name, std::string_view what);

}  // namespace mq
