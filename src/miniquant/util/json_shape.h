// A JSON file's expected structure, checked before the code that reads it runs: a file of the wrong
// shape then fails with one line naming the file and the key ("summary.json: /models/minigpt/methods/2/
// phases: key \"total\" is missing") instead of a library exception, or undefined behaviour from
// operator[] on a const value whose key is absent.
//
// A spec is itself JSON:
//   "number"  a finite number;  "int" an integer that fits int32;  "int64";  "bool";  "string";  "null";
//   "object"; "array"; "any";  several joined by '|' ("string|null") accept any of them.
//   {"key": spec, "key?": spec, "*": spec}  an object with these keys (a trailing '?' marks one as
//             optional; "*" is the spec of every key not named); keys the spec does not name are allowed.
//   [spec]    an array whose every element matches spec.
//   {"|": [spec, spec, ...]}  any one of the specs.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace mq {

// Throws mq::Error "<file>: <path>: <what is wrong>" at the first place `value` does not match `spec`;
// `at` is where `value` sits in its file ("/models/minigpt/methods/3"), for the path in the message.
void check_json_shape(const nlohmann::json& value, const nlohmann::json& spec, const std::string& file, const std::string& at = "");

}  // namespace mq
