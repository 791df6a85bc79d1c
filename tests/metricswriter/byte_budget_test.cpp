// The writer's byte budget (METRICSWRITER_MAX_BYTES_IN_FLIGHT) and how sizes are written.
#include <catch2/catch.hpp>

#include "metricswriter/byte_budget.h"
#include "metricswriter/config.h"

namespace {
constexpr int64_t kMiB = int64_t{1} << 20;
}

TEST_CASE("budget: fetches ask for what fits once decoded", "[budget]") {
  mw::ByteBudget b(64 * kMiB);
  auto f = b.NextFetch(0);
  REQUIRE(f.fetch);
  CHECK_FALSE(f.alone);
  // Before anything was decoded it assumes a batch decodes to 4 times its size.
  CHECK(f.max_bytes == 64 * kMiB / 5);
  // Protobuf batches of 7.5 MB that decode to 2.2 times that.
  b.Decoded(7'500'000, 16'500'000);
  CHECK(b.expansion() == Approx(4.0 * 0.95 + 2.2 * 0.05));
  for (int i = 0; i < 100; ++i) b.Decoded(7'500'000, 16'500'000);
  CHECK(b.expansion() == Approx(2.2).epsilon(0.01));
  CHECK(b.Estimate(1'000'000) == Approx(3'200'000).epsilon(0.01));
  f = b.NextFetch(40 * kMiB);
  REQUIRE(f.fetch);
  CHECK(f.max_bytes == Approx(24.0 * kMiB / 3.2).epsilon(0.01));
  // A bigger expansion is learnt at once: a JSON batch of many tiny points.
  b.Decoded(1000, 9000);
  CHECK(b.expansion() == 9.0);
  // Too little room to be worth a request: wait for releases.
  CHECK_FALSE(b.NextFetch(64 * kMiB - 100 * 1024).fetch);
  CHECK_FALSE(b.NextFetch(70 * kMiB).fetch);
}

TEST_CASE("budget: a message is decoded when its estimate fits, or alone", "[budget]") {
  mw::ByteBudget b(10 * kMiB);
  b.Decoded(kMiB, 2 * kMiB);  // expansion 4 -> 4 (falls slowly: 0.95*4 + 0.05*2 = 3.9)
  const double e = b.expansion();
  // held includes the message's own undecoded bytes.
  CHECK(b.MayDecode(kMiB, kMiB));            // nothing else held
  CHECK(b.MayDecode(5 * kMiB, kMiB));        // 5 + 3.9 <= 10
  CHECK_FALSE(b.MayDecode(7 * kMiB, kMiB));  // 7 + 3.9 > 10
  // A message bigger than the whole budget: decoded when it is all there is.
  CHECK(b.MayDecode(30 * kMiB, 30 * kMiB));
  CHECK_FALSE(b.MayDecode(30 * kMiB + 1, 30 * kMiB));
  CHECK(e < 4.0);
}

TEST_CASE("budget: the next message too big for the room is fetched alone", "[budget]") {
  mw::ByteBudget b(64 * kMiB);
  b.NextTooLarge();
  CHECK_FALSE(b.NextFetch(10 * kMiB).fetch);  // others held: wait until they are released
  auto f = b.NextFetch(0);
  REQUIRE(f.fetch);
  CHECK(f.alone);
  CHECK(f.max_bytes == 0);
  b.Fetched();
  f = b.NextFetch(0);
  CHECK(f.fetch);
  CHECK_FALSE(f.alone);
  // A budget smaller than one request's minimum still fetches with nothing held.
  mw::ByteBudget tiny(100 * 1024);
  f = tiny.NextFetch(0);
  CHECK(f.fetch);
  CHECK(f.max_bytes == 100 * 1024 / 5);
}

TEST_CASE("config: sizes in bytes or with a binary unit", "[budget]") {
  CHECK(common::ParseSize("64MiB") == 64 * kMiB);
  CHECK(common::ParseSize("67108864") == 64 * kMiB);
  CHECK(common::ParseSize("512KiB") == 512 * 1024);
  CHECK(common::ParseSize("2GiB") == 2048 * kMiB);
  CHECK(common::ParseSize("100B") == 100);
  CHECK_FALSE(common::ParseSize("64MB"));
  CHECK_FALSE(common::ParseSize("64 MiB"));
  CHECK_FALSE(common::ParseSize("-1"));
  CHECK_FALSE(common::ParseSize(""));
  CHECK_FALSE(common::ParseSize("MiB"));
  CHECK_FALSE(common::ParseSize("99999999999999999GiB"));
}

TEST_CASE("config: METRICSWRITER_MAX_BYTES_IN_FLIGHT", "[budget]") {
  auto read = [](const std::string& v) {
    common::ConfigReader r(std::map<std::string, std::string>{
        {"DATABASE_URL", "postgres://x"}, {"METRICSWRITER_MAX_BYTES_IN_FLIGHT", v}});
    auto o = mw::ReadWriterOptions(r);
    return std::make_pair(o.max_bytes_in_flight, r.errors());
  };
  CHECK(read("128MiB").first == 128 * kMiB);
  CHECK(read("128MiB").second.empty());
  CHECK_FALSE(read("lots").second.empty());
  CHECK_FALSE(read("512KiB").second.empty());  // below 1MiB
  common::ConfigReader r(std::map<std::string, std::string>{{"DATABASE_URL", "postgres://x"}});
  auto o = mw::ReadWriterOptions(r);
  CHECK(o.max_bytes_in_flight == 64 * kMiB);
  CHECK(o.consumer.pending_bytes_limit == 128 * kMiB);
  CHECK(o.too_large_retry == std::chrono::seconds(60));
}
