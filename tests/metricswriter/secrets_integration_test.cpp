// Nothing secret or hostile reaches the metricswriter's output (issue 35): a message's subject
// and Content-Type reach the log escaped (text and JSON), a DATABASE_URL's password never does,
// and the running process can dump no core.
#include <signal.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/metricswriter/harness.h"

using namespace mwtest;  // NOLINT: the harness (Harness, JsonBatch, Sleep...)

namespace {

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// "Max core file size  0  0  bytes" in /proc/<pid>/limits.
bool NoCoreLimit(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/limits");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Max core file size", 0) != 0) continue;
    std::istringstream f(line.substr(18));
    std::string soft, hard;
    f >> soft >> hard;
    return soft == "0" && hard == "0";
  }
  return false;
}

}  // namespace

TEST_CASE("a subject and Content-Type holding terminal escapes reach the log escaped",
          "[integration]") {
  Harness h;
  const std::string red = "\x1b[31m";
  {
    auto writer = h.StartWriter(0);
    CHECK(NoCoreLimit(writer->pid()));
    // A Content-Type the writer refuses: dead-lettered, and logged with the message's subject
    // and its Content-Type (in the reason).
    h.Publish(red + "evil", JsonBatch(1, NowNs()), "esc-1", "text/" + red + "plain");
    const bool moved = testsupport::WaitFor([&] { return h.ReadDlq().size() == 1; }, 15'000);
    const std::string log = testsupport::ReadFile(h.log_path(0));
    INFO(log);
    REQUIRE(moved);
    CHECK(Contains(log, "subject api.metrics.\\x1b[31mevil,"));
    CHECK(Contains(log, "unsupported content type text/\\\\x1b[31mplain"));
    CHECK_FALSE(Contains(log, "\x1b"));
    writer->Signal(SIGTERM);
    CHECK(writer->Wait(30'000) == 0);
  }
  // The same in JSON: every line one valid JSON object, the escape still written out.
  auto writer = h.StartWriter(1, {{"LOG_FORMAT", "json"}});
  h.Publish(red + "again", JsonBatch(1, NowNs()), "esc-2", "text/" + red + "plain");
  REQUIRE(testsupport::WaitFor([&] { return h.ReadDlq().size() == 2; }, 15'000));
  writer->Signal(SIGTERM);
  CHECK(writer->Wait(30'000) == 0);
  std::ifstream in(h.log_path(1));
  bool seen = false;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] != '{') continue;  // not ours (none expected)
    INFO(line);
    nlohmann::json j;
    REQUIRE_NOTHROW(j = nlohmann::json::parse(line));
    const std::string msg = j.at("msg");
    CHECK_FALSE(Contains(msg, "\x1b"));
    if (Contains(msg, "subject api.metrics.\\x1b[31magain")) seen = true;
  }
  CHECK(seen);
}

TEST_CASE("the metricswriter never prints DATABASE_URL's password", "[integration]") {
  Harness h;
  // libpq refuses the URL and, left alone, would echo "pa%ZZss" in its message.
  auto unparsable =
      h.StartWriter(0, {{"DATABASE_URL", "postgresql://mw:pa%ZZss@127.0.0.1:1/metrics"}});
  // A URL libpq accepts, with a password, to a port where nothing listens.
  auto refused =
      h.StartWriter(1, {{"DATABASE_URL", "postgresql://mw:s3cret-pw@127.0.0.1:1/metrics"}});
  // Only the lease holder connects: the first to lead says why it cannot, then the other.
  REQUIRE(testsupport::WaitFor(
      [&] {
        return Contains(testsupport::ReadFile(h.log_path(0)), "database not ready") ||
               Contains(testsupport::ReadFile(h.log_path(1)), "database not ready");
      },
      20'000));
  std::string which =
      Contains(testsupport::ReadFile(h.log_path(0)), "database not ready") ? "0" : "1";
  (which == "0" ? unparsable : refused)->Signal(SIGTERM);
  (which == "0" ? unparsable : refused)->Wait(30'000);
  REQUIRE(testsupport::WaitFor(
      [&] {
        return Contains(testsupport::ReadFile(h.log_path(0)), "database not ready") &&
               Contains(testsupport::ReadFile(h.log_path(1)), "database not ready");
      },
      30'000));
  const std::string log0 = testsupport::ReadFile(h.log_path(0));
  const std::string log1 = testsupport::ReadFile(h.log_path(1));
  INFO(log0 + "\n----\n" + log1);
  CHECK(Contains(log0, "DATABASE_URL cannot be parsed: invalid percent-encoded token"));
  CHECK_FALSE(Contains(log0, "ZZss"));
  CHECK_FALSE(Contains(log0, "pa%"));
  CHECK(Contains(log1, "postgres connect: "));
  CHECK_FALSE(Contains(log1, "s3cret"));
  // platformctl migrate prints libpq's reason on stderr: the same rule.
  std::string out;
  CHECK(h.Platformctl("migrate", "postgresql://mw:pa%ZZss@127.0.0.1:1/metrics", &out) == 5);
  CHECK(Contains(out, "DATABASE_URL cannot be parsed"));
  CHECK_FALSE(Contains(out, "ZZss"));
  CHECK(h.Platformctl("migrate", "postgresql://mw:s3cret-pw@127.0.0.1:1/metrics", &out) == 5);
  CHECK_FALSE(Contains(out, "s3cret"));
}
