// A block is the learner's own code, not a call of the library function it is graded against: the grader
// lists the symbols the learner's compiled file references (`nm -C --undefined-only` on its object file,
// which CMake builds separately for this) and fails a block whose file calls that block's library twin
// (e.g. lab 01 block C calling mq::gptq_quantize would pass every comparison with itself).
#pragma once
#include <string>
#include <vector>

namespace mqlab {

// The demangled names of the functions an object file references but does not define, one per line of
// `nm -C --undefined-only`. mq::Error when nm cannot be run or the file cannot be read.
std::vector<std::string> undefined_symbols(const std::string& object_file);

// The first of `symbols` whose name starts with one of `twins` followed by "(" (a function), "[" (its ABI tag),
// "<" (template arguments) or "::" (a member of a class twin, e.g. "mq::energy::RaplMeter"), or "" when none does.
std::string references_twin(const std::vector<std::string>& symbols, const std::vector<std::string>& twins);

}  // namespace mqlab
