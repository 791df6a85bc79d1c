#include "tests/support/queue_judge.h"

#include <algorithm>

namespace testsupport::judge {

using platformctl::backlog::StreamReading;

bool Drained(const StreamReading& r) {
  if (r.consumers.empty()) return false;
  return std::all_of(r.consumers.begin(), r.consumers.end(),
                     [](const auto& c) { return !c.offline && c.pending == 0 && c.unacked == 0; });
}

uint64_t LeftBehind(const StreamReading& r) {
  if (r.consumers.empty()) return r.messages;
  if (r.consumers.size() == 1) {
    return r.consumers[0].offline ? r.messages : platformctl::backlog::Unclaimed(r, r.consumers[0]);
  }
  if (r.work_queue) {
    // Disjoint consumers: each held message is claimed by at most one of them.
    uint64_t claimed = 0;
    for (const auto& c : r.consumers) {
      if (!c.offline) claimed += c.pending + c.unacked;
    }
    return r.messages > claimed ? r.messages - claimed : 0;
  }
  // Each consumer sees every message: what the one that claims most leaves.
  uint64_t left = r.messages;
  for (const auto& c : r.consumers) {
    if (!c.offline) left = std::min(left, platformctl::backlog::Unclaimed(r, c));
  }
  return left;
}

std::string Describe(const StreamReading& r) {
  std::string s = r.name + (Drained(r) ? ": drained; holds " : ": not drained; holds ") +
                  std::to_string(r.messages);
  if (r.messages > 0) {
    s += " (seq " + std::to_string(r.first_seq) + ".." + std::to_string(r.last_seq) + ")";
  }
  s += ", " + std::to_string(LeftBehind(r)) + " left behind";
  if (r.consumers.empty()) s += "; no consumer";
  for (const auto& c : r.consumers) {
    s += "; consumer " + c.name;
    if (c.offline) {
      s += " offline";
    } else {
      s += " pending " + std::to_string(c.pending) + " unacked " + std::to_string(c.unacked);
    }
  }
  return s;
}

int64_t Tally::Missing() const { return std::max<int64_t>(0, published - stored); }

int64_t Tally::Lost() const { return std::max<int64_t>(0, Missing() - dead_lettered); }

bool Tally::StoredOnce() const {
  return stored == published && duplicates == 0 && dead_lettered == 0;
}

std::string Tally::Describe() const {
  return what + ": published " + std::to_string(published) + ", stored " + std::to_string(stored) +
         " distinct, duplicates " + std::to_string(duplicates) + ", dead-lettered " +
         std::to_string(dead_lettered) + ", lost " + std::to_string(Lost());
}

Tally Count(std::string what, int64_t published, int64_t missing, int64_t duplicates,
            int64_t dead_lettered) {
  Tally t;
  t.what = std::move(what);
  t.published = published;
  t.stored = published - std::min(published, missing);
  t.duplicates = duplicates;
  t.dead_lettered = dead_lettered;
  return t;
}

}  // namespace testsupport::judge
