// The visitors' Umami cache tokens (x-umami-cache), in memory in front of the KV bucket.
//
// The KV bucket visit_state is the shared truth (kept 24 h, read by a new leader); this cache
// saves a KV read per event. Entries idle longer than `idle` are dropped by Sweep().
// Thread-safety: every method may be called from any thread (one mutex).
#pragma once

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace replayer {

class VisitCache {
 public:
  explicit VisitCache(std::chrono::milliseconds idle = std::chrono::minutes(10)) : idle_(idle) {}

  // nullopt: not known here (read the KV bucket). A known visitor without a token is "".
  std::optional<std::string> Lookup(const std::string& lane);
  // Returns true when the token changed (the caller writes it to the KV bucket).
  bool Set(const std::string& lane, const std::string& token);
  void Sweep();
  size_t size();

 private:
  struct Entry {
    std::string token;
    std::chrono::steady_clock::time_point used;
  };
  std::chrono::milliseconds idle_;
  std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
};

// The KV key of a visitor's state: <site>.<visitor>, each made KV-safe.
std::string VisitKey(const std::string& website, const std::string& visitor);

}  // namespace replayer
