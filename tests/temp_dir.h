// A test's temporary folder: unique per process and tag (mkdtemp, mode 0700), so two test runs on one
// machine never share a folder and no one else can plant a file or link at a name we will use (a fixed
// name such as /tmp/mq_gguf_llama collided between two overlapping runs of the test command).
#pragma once
#include <doctest/doctest.h>

#include <stdlib.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

namespace mqtest {

struct TempDirs {
  std::mutex m;
  std::map<std::string, std::string> by_tag;
  // Removed at exit unless MQ_KEEP_TEST_DIRS is set (to look at what a failed test left).
  ~TempDirs() {
    if (std::getenv("MQ_KEEP_TEST_DIRS")) return;
    for (auto& kv : by_tag) {
      std::error_code ec;
      std::filesystem::remove_all(kv.second, ec);
    }
  }
};

// `<temp>/<tag>.XXXXXX`, made on the first call for `tag` in this process and the same path after it.
// Safe at namespace scope (a test file's `const std::string kDir = mqtest::temp_dir(...)`).
inline std::string temp_dir(const std::string& tag) {
  static TempDirs dirs;
  std::lock_guard<std::mutex> lock(dirs.m);
  auto it = dirs.by_tag.find(tag);
  if (it != dirs.by_tag.end()) return it->second;
  std::string templ = (std::filesystem::temp_directory_path() / (tag + ".XXXXXX")).string();
  if (::mkdtemp(templ.data()) == nullptr) {
    const std::string why = std::strerror(errno);
    throw std::runtime_error("mkdtemp " + templ + ": " + why);
  }
  dirs.by_tag[tag] = templ;
  return templ;
}

// `name` inside this process's `tag` folder, not created: the path a test used to build under /tmp.
// The folder is private (0700), so removing and re-creating `name` there is safe.
inline std::string temp_path(const std::string& tag, const std::string& name) {
  return (std::filesystem::path(temp_dir(tag)) / name).string();
}

// A fresh, empty folder `name` inside this process's `tag` folder: a test that wants a clean start
// removes only what it made itself.
inline std::string fresh_subdir(const std::string& tag, const std::string& name) {
  const std::filesystem::path d = std::filesystem::path(temp_dir(tag)) / name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d.string();
}

}  // namespace mqtest
