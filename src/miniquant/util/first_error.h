// Errors inside an OpenMP loop: an exception must not leave a parallel region (std::terminate), so
// each item runs through FirstError::run, which keeps the exception of the lowest item index; after
// the loop rethrow() throws it. Which error is reported then does not depend on the threads.
#pragma once
#include <cstddef>
#include <exception>
#include <limits>
#include <mutex>

namespace mq {

class FirstError {
 public:
  template <class F>
  void run(size_t index, F&& f) noexcept {
    try {
      f();
    } catch (...) {
      const std::lock_guard<std::mutex> lock(mu_);
      if (index < index_) {
        index_ = index;
        error_ = std::current_exception();
      }
    }
  }
  void rethrow() const {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  std::mutex mu_;
  size_t index_ = std::numeric_limits<size_t>::max();
  std::exception_ptr error_;
};

}  // namespace mq
