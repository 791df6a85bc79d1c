// testsupport::CollapsedTail: the log excerpt a failed cluster test prints. It must keep what is
// different and fold a flood of one warning, or the flood hides the line that explains a failure.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "tests/support/test_stack.h"

namespace {

std::string WriteLog(const std::string& text) {
  char path[] = "/tmp/collapsed-tail-XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  close(fd);
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("a log tail folds lines that differ only in numbers and keeps the others", "[support]") {
  std::string log;
  log += "[10:00:00.001] [info] replayer started\n";
  for (int i = 0; i < 500; ++i) {
    log += "[10:00:01." + std::to_string(100 + i) + "] [warn] guard record for seq " +
           std::to_string(1000 + i) + " failed\n";
  }
  log += "[10:00:09.999] [warn] lease replayer: cannot take it\n";
  std::string path = WriteLog(log);
  std::string tail = testsupport::CollapsedTail(path, 40);
  std::remove(path.c_str());
  CHECK(tail ==
        "[10:00:00.001] [info] replayer started\n"
        "[10:00:01.100] [warn] guard record for seq 1000 failed\n"
        "  [... 499 more like it, the last: [10:00:01.599]]\n"
        "[10:00:09.999] [warn] lease replayer: cannot take it\n");
}

TEST_CASE("a log tail keeps only the last groups, and says when the log cannot be read",
          "[support]") {
  std::string log;
  for (char c = 'a'; c <= 'z'; ++c) log += "[t] line " + std::string(1, c) + "\n";
  std::string path = WriteLog(log);
  CHECK(testsupport::CollapsedTail(path, 3) == "[t] line x\n[t] line y\n[t] line z\n");
  std::remove(path.c_str());
  CHECK(testsupport::CollapsedTail(path, 3) == "(cannot read " + path + ")\n");
}
