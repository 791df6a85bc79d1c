// The writer's pure parts: batch ids, subjects, content types, backoff, grouping, isolation,
// fingerprints and the binary COPY encoding.
#include <catch2/catch.hpp>

#include "metricswriter/copy_encoder.h"
#include "metricswriter/decisions.h"
#include "metricswriter/fingerprint.h"
#include "metricswriter/intake.h"
#include "metricswriter/migrations.h"
#include "metricswriter/otlp_json.h"
#include "metricswriter/store.h"

using namespace std::chrono_literals;

TEST_CASE("batch ids: replay suffixes stripped and characters checked", "[intake]") {
  CHECK(*mw::BatchIdFromMsgId("b-1") == "b-1");
  CHECK(*mw::BatchIdFromMsgId("b-1.replay.API_DLQ.42") == "b-1");
  CHECK(*mw::BatchIdFromMsgId("b-1.replay.API_DLQ.42.replay.API_DLQ.77") == "b-1");
  CHECK(*mw::BatchIdFromMsgId("0f8e:edge-3/abc+=@~_.x") == "0f8e:edge-3/abc+=@~_.x");
  // Not a replay suffix: kept as part of the id.
  CHECK(*mw::BatchIdFromMsgId("b.replay.X.y") == "b.replay.X.y");
  CHECK(*mw::BatchIdFromMsgId("b.replay.API_DLQ.") == "b.replay.API_DLQ.");
  CHECK_FALSE(mw::BatchIdFromMsgId(std::nullopt).ok());
  CHECK_FALSE(mw::BatchIdFromMsgId("").ok());
  CHECK_FALSE(mw::BatchIdFromMsgId(".replay.API_DLQ.1").ok());  // nothing left
  CHECK_FALSE(mw::BatchIdFromMsgId("has space").ok());
  CHECK_FALSE(mw::BatchIdFromMsgId("quote\"").ok());
  CHECK_FALSE(mw::BatchIdFromMsgId("caf\xC3\xA9").ok());
  CHECK(mw::BatchIdFromMsgId(std::string(128, 'a')).ok());
  CHECK_FALSE(mw::BatchIdFromMsgId(std::string(129, 'a')).ok());
  CHECK(mw::BatchIdFromMsgId(std::string(128, 'a') + ".replay.API_DLQ.1").ok());
}

TEST_CASE("tenant from the subject", "[intake]") {
  CHECK(*mw::TenantFromSubject("api.metrics.acme") == "acme");
  CHECK_FALSE(mw::TenantFromSubject("api.metrics.").ok());
  CHECK_FALSE(mw::TenantFromSubject("api.metrics.a.b").ok());
  CHECK_FALSE(mw::TenantFromSubject("web.events.x").ok());
}

TEST_CASE("content type: header or sniffed", "[intake]") {
  CHECK(*mw::FormatOf("application/json", "") == mw::Format::kJson);
  CHECK(*mw::FormatOf("Application/JSON; charset=utf-8", "") == mw::Format::kJson);
  CHECK(*mw::FormatOf("application/x-protobuf", "{") == mw::Format::kProtobuf);
  CHECK(*mw::FormatOf(std::nullopt, "  \n{\"a\":1}") == mw::Format::kJson);
  CHECK(*mw::FormatOf("", "\x0a\x02") == mw::Format::kProtobuf);
  auto bad = mw::FormatOf("text/plain", "{}");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "unsupported content type text/plain");
}

TEST_CASE("backoff doubles with jitter up to its cap and resets", "[decisions]") {
  mw::Backoff b(100ms, 1000ms);
  CHECK(b.Next(0.0) == 50ms);
  CHECK(b.Next(0.999) == 199ms);
  CHECK(b.Next(1.0) == 400ms);
  CHECK(b.Next(0.5) == 600ms);   // 800 * 0.75
  CHECK(b.Next(1.0) == 1000ms);  // capped
  for (int i = 0; i < 100; ++i) CHECK(b.Next(1.0) == 1000ms);
  b.Reset();
  CHECK(b.Next(1.0) == 100ms);
}

TEST_CASE("group policy: full, lingering or empty", "[decisions]") {
  mw::GroupPolicy p(500, 10'000, 100ms);
  auto t0 = mw::Clock::now();
  CHECK_FALSE(p.Due(0, 0, t0, t0 + 1s));  // nothing to write
  CHECK_FALSE(p.Due(10, 200, t0, t0 + 50ms));
  CHECK(p.Due(10, 200, t0, t0 + 100ms));  // lingered long enough
  CHECK(p.Due(500, 200, t0, t0));         // full by batches
  CHECK(p.Due(3, 10'000, t0, t0));        // full by points
  CHECK(p.FetchWait(0, t0, t0, 1000ms) == 1000ms);
  CHECK(p.FetchWait(1, t0, t0 + 30ms, 1000ms) == 70ms);
  CHECK(p.FetchWait(1, t0, t0 + 80ms, 1000ms) == mw::kMinFetchWait);  // never a tiny request
  CHECK(p.FetchWait(1, t0, t0 + 300ms, 1000ms) == mw::kMinFetchWait);
}

TEST_CASE("new series are split into statements of bounded text", "[decisions]") {
  using V = std::vector<size_t>;
  CHECK(mw::SplitByBytes({}, 100).empty());
  CHECK(mw::SplitByBytes({10, 20, 30}, 100) == V{3});  // all fit: one statement
  CHECK(mw::SplitByBytes({40, 40, 40, 40}, 100) == V{2, 4});
  CHECK(mw::SplitByBytes({50, 50, 50}, 100) == V{2, 3});  // exactly the bound fits
  // An item bigger than the bound is a statement of its own, never an empty one.
  CHECK(mw::SplitByBytes({250, 10, 10}, 100) == V{1, 3});
  CHECK(mw::SplitByBytes({10, 250, 10}, 100) == V{1, 2, 3});
  // The group of the bench's case: 51,000 series of about 1,100 bytes, 4 MiB a statement.
  const V sizes(51'000, 1'100);
  const V ends = mw::SplitByBytes(sizes, mw::kSeriesStatementBytes);
  CHECK(ends.size() == 14);
  size_t begin = 0;
  for (size_t end : ends) {
    REQUIRE(end > begin);
    CHECK((end - begin) * 1'100 <= mw::kSeriesStatementBytes);
    begin = end;
  }
  CHECK(begin == sizes.size());
}

TEST_CASE("isolator finds one poison batch among 500 and stores the rest", "[decisions]") {
  for (size_t poison : {size_t{0}, size_t{137}, size_t{250}, size_t{499}}) {
    mw::Isolator iso(500);
    std::vector<int> stored(500, 0);
    std::vector<size_t> dead;
    int attempts = 0;
    while (!iso.Done()) {
      auto r = iso.Current();
      ++attempts;
      if (poison >= r.begin && poison < r.end) {
        if (iso.Rejected()) dead.push_back(r.begin);
      } else {
        for (size_t i = r.begin; i < r.end; ++i) ++stored[i];
        iso.Stored();
      }
    }
    INFO("poison " << poison);
    CHECK(dead == std::vector<size_t>{poison});
    for (size_t i = 0; i < 500; ++i) CHECK(stored[i] == (i == poison ? 0 : 1));
    CHECK(attempts <= 2 * 9 + 1);  // about 2*log2(500)
  }
}

TEST_CASE("isolator with every batch poisoned sets each aside once", "[decisions]") {
  mw::Isolator iso(7);
  std::vector<size_t> dead;
  while (!iso.Done()) {
    auto r = iso.Current();
    if (iso.Rejected()) dead.push_back(r.begin);
  }
  CHECK(dead == std::vector<size_t>{0, 1, 2, 3, 4, 5, 6});
}

TEST_CASE("fingerprint is pinned: stored in the database, it must never change", "[store]") {
  auto f = mw::Murmur3x64_128("");
  CHECK(f.hi == 0);
  CHECK(f.lo == 0);
  // MurmurHash3_x64_128 of "hello", seed 0 (the reference implementation's value).
  f = mw::Murmur3x64_128("hello");
  CHECK(f.hi == 0xcbd8a7b341bd9b02ULL);
  CHECK(f.lo == 0x5b1e906a48ae1d19ULL);
  mw::JsonDecoder d;
  mw::Batch a, b;
  REQUIRE(
      d.Decode(
           R"({"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"m","gauge":{"dataPoints":[{"attributes":[{"key":"x","value":{"intValue":1}},{"key":"y","value":{"stringValue":"s"}}]},{"attributes":[{"key":"x","value":{"doubleValue":1}},{"key":"y","value":{"stringValue":"s"}}]}]}}]}]}]})",
           &a)
          .ok());
  std::string scratch;
  auto f0 = mw::SeriesFingerprint("t", a, 0, &scratch);
  CHECK_FALSE(f0 == mw::SeriesFingerprint("t", a, 1, &scratch));  // int 1 vs double 1.0
  CHECK_FALSE(f0 == mw::SeriesFingerprint("u", a, 0, &scratch));  // another tenant
  // Attribute order does not matter.
  REQUIRE(
      d.Decode(
           R"({"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"m","description":"other","gauge":{"dataPoints":[{"attributes":[{"key":"y","value":{"stringValue":"s"}},{"key":"x","value":{"intValue":"1"}}]}]}}]}]}]})",
           &b)
          .ok());
  CHECK(f0 == mw::SeriesFingerprint("t", b, 0, &scratch));
  CHECK(f0.Bytes().size() == 16);
}

TEST_CASE("binary COPY: header, rows, NULLs, arrays and trailer", "[store]") {
  mw::Batch b;
  b.metrics.resize(1);
  b.AddSeries(0, "{}");
  mw::NumberPoint n;
  n.time = 5;
  n.value = 1.5;
  b.numbers.push_back(n);
  mw::HistogramPoint h;
  h.counts = {1, 2};
  h.bounds = {};
  b.histograms.push_back(h);
  mw::CopyEncoder e;
  e.Begin();
  e.Add(b, {42});
  e.Finish();
  const std::string& p = e.payload(mw::kNumberTable);
  REQUIRE(p.size() == 19 + 2 + 4 * 12 + 4 + 8 + 2);  // 4 eight-byte fields, a NULL, an int4
  CHECK(p.compare(0, 11, std::string("PGCOPY\n\377\r\n\0", 11)) == 0);
  CHECK(p.substr(19, 2) == std::string("\0\6", 2));                            // six fields
  CHECK(p.substr(21, 12) == std::string("\0\0\0\x08\0\0\0\0\0\0\0\x2a", 12));  // series 42
  CHECK(p.substr(p.size() - 2) == "\xff\xff");
  CHECK(p.find(std::string("\xff\xff\xff\xff", 4)) != std::string::npos);  // value_int NULL
  CHECK(e.rows(mw::kNumberTable) == 1);
  CHECK(e.rows(mw::kHistogramTable) == 1);
  CHECK(e.rows(mw::kSummaryTable) == 0);
  // An empty float8[] (the bounds) is written with zero dimensions: length 12, ndim 0,
  // no NULLs, element type 701.
  CHECK(e.payload(mw::kHistogramTable)
            .find(std::string("\0\0\0\x0c\0\0\0\0\0\0\0\0\0\0\x02\xbd", 16)) != std::string::npos);
}

TEST_CASE("embedded migrations are numbered and checksummed", "[store]") {
  auto m = mw::EmbeddedMigrations();
  REQUIRE_FALSE(m.empty());
  CHECK(m[0].version == 1);
  CHECK(m[0].name == "0001_metrics_schema.sql");
  CHECK(m[0].sql.find("CREATE TABLE metrics.batches") != std::string_view::npos);
  CHECK(mw::MigrationChecksum(m[0].sql).size() == 32);
  for (size_t i = 1; i < m.size(); ++i) CHECK(m[i].version > m[i - 1].version);
}

TEST_CASE("day strings", "[store]") {
  CHECK(mw::DayString(0) == "1970-01-01");
  CHECK(mw::DayString(20'000) == "2024-10-04");
}
