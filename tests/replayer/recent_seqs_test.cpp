#include "replayer/recent_seqs.h"

#include <catch2/catch.hpp>

using replayer::RecentSeqs;

TEST_CASE("recent sequences: remembered up to the capacity, the oldest forgotten first",
          "[recent_seqs]") {
  RecentSeqs r(3);
  CHECK_FALSE(r.Contains(1));
  r.Add(1);
  r.Add(2);
  r.Add(3);
  CHECK(r.Contains(1));
  CHECK(r.Contains(3));
  r.Add(2);  // already there: neither added twice nor does it push anything out
  CHECK(r.size() == 3);
  CHECK(r.Contains(1));
  r.Add(4);
  CHECK_FALSE(r.Contains(1));
  CHECK(r.Contains(2));
  CHECK(r.Contains(4));
  CHECK(r.size() == 3);
}

TEST_CASE("recent sequences: a capacity of zero still remembers the last one", "[recent_seqs]") {
  RecentSeqs r(0);
  r.Add(7);
  CHECK(r.Contains(7));
  r.Add(8);
  CHECK_FALSE(r.Contains(7));
  CHECK(r.Contains(8));
}
