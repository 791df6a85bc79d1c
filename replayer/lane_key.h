// A visitor's lane key (site + visitor, WebEvent::LaneKey()) with its hash computed once.
//
// Why: the engine core looks an event's lane up about ten times on its way (the lane's queue,
// the visit state, the lookups under way), and a key is some 80 bytes; hashing it each time
// was a measurable share of the engine thread's CPU per event (docs/measured.md). Equality
// compares the hashes before the bytes.
// A plain value: copy and move freely; no shared state.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <utility>

namespace replayer {

class LaneKey {
 public:
  LaneKey() = default;
  // Implicit, so a test may pass a literal; the core builds one per held event.
  LaneKey(std::string key)  // NOLINT(google-explicit-constructor)
      : key_(std::move(key)), hash_(std::hash<std::string>{}(key_)) {}
  LaneKey(const char* key) : LaneKey(std::string(key)) {}  // NOLINT(google-explicit-constructor)

  const std::string& str() const { return key_; }
  size_t hash() const { return hash_; }
  bool empty() const { return key_.empty(); }
  bool operator==(const LaneKey& o) const { return hash_ == o.hash_ && key_ == o.key_; }

  struct Hash {
    size_t operator()(const LaneKey& k) const { return k.hash_; }
  };

 private:
  std::string key_;
  size_t hash_ = std::hash<std::string>{}(std::string());
};

}  // namespace replayer
