// Error types: every bad input becomes one of these, with a message that says what and where.
#pragma once
#include <stdexcept>
#include <string>

namespace mq {

// Something is wrong with the data or the environment (NaN weight, missing file, corrupt checkpoint).
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The caller asked for something that does not exist or does not fit (unknown scheme name,
// group size that does not divide the width). The CLI maps these to exit code 2.
struct UsageError : Error {
  using Error::Error;
};

}  // namespace mq
