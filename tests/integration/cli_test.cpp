// Every binary answers --help and --version without connecting anywhere, and the version is the
// one git describes (or says the build had no git).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>

#include "tests/integration/nats_server_process.h"
#include "tests/support/test_stack.h"

using namespace testsupport;

namespace {

// A listening socket on 127.0.0.1 that counts the connections made to it.
class Listener {
 public:
  Listener() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    port_ = FreePortRange(1);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port_));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
    REQUIRE(listen(fd_, 16) == 0);
  }
  ~Listener() { close(fd_); }
  int port() const { return port_; }
  // Connections waiting to be accepted now.
  int Pending() {
    int n = 0;
    pollfd p{fd_, POLLIN, 0};
    while (poll(&p, 1, 0) == 1) {
      int c = accept(fd_, nullptr, nullptr);
      if (c < 0) break;
      close(c);
      ++n;
    }
    return n;
  }

 private:
  int fd_ = -1;
  int port_ = 0;
};

std::string GitDescribe() {
  int rc = -1;
  std::string v = Capture("git -C '" + SourceDir() + "' describe --always 2>/dev/null", &rc);
  while (!v.empty() && (v.back() == '\n' || v.back() == ' ')) v.pop_back();
  return rc == 0 ? v : "";
}

}  // namespace

TEST_CASE("every binary answers --help and --version without connecting", "[integration][cli]") {
  Listener nats;
  Listener metrics;
  const std::string env = "NATS_URL=nats://127.0.0.1:" + std::to_string(nats.port()) +
                          " METRICS_LISTEN=127.0.0.1:" + std::to_string(metrics.port()) +
                          " DATABASE_URL=postgresql://127.0.0.1:" + std::to_string(nats.port()) +
                          "/x ";
  struct Binary {
    std::string name;
    std::string path;
    std::vector<std::string> help_mentions;
  };
  std::vector<Binary> binaries = {
      {"replayer",
       BinaryDir() + "/replayer/replayer",
       {"NATS_URL", "nats://127.0.0.1:4222", "UMAMI_URLS", "NATS_CA", "METRICS_LISTEN",
        "0.0.0.0:9464", "Exit codes"}},
      {"metricswriter",
       BinaryDir() + "/metricswriter/metricswriter",
       {"NATS_URL", "DATABASE_URL", "NATS_CERT", "METRICS_LISTEN", "Exit codes"}},
      {"platformctl",
       BinaryDir() + "/platformctl/platformctl",
       {"init", "streams", "dlq", "erase", "migrate", "Exit codes"}},
  };
  std::string first_version;
  for (const auto& b : binaries) {
    INFO(b.name);
    int rc = -1;
    std::string help = Capture(env + b.path + " --help 2>&1", &rc);
    INFO(help);
    CHECK(rc == 0);
    CHECK_THAT(help, Catch::Contains("Usage:") && Catch::Contains("--version"));
    for (const auto& m : b.help_mentions) CHECK_THAT(help, Catch::Contains(m));

    std::string version = Capture(env + b.path + " --version 2>&1", &rc);
    CHECK(rc == 0);
    REQUIRE(version.rfind(b.name + " ", 0) == 0);
    version = version.substr(b.name.size() + 1);
    while (!version.empty() && version.back() == '\n') version.pop_back();
    CHECK_FALSE(version.empty());
    if (first_version.empty()) first_version = version;
    CHECK(version == first_version);  // one build, one version

    std::string bad = Capture(env + b.path + " --no-such-option 2>&1", &rc);
    CHECK(rc == 2);
    CHECK_FALSE(bad.empty());
  }
  // Nothing was connected to, and nothing listened on METRICS_LISTEN.
  CHECK(nats.Pending() == 0);
  CHECK(metrics.Pending() == 0);
  // Built from this work tree: the version is git's description of it (-dirty aside).
  std::string git = GitDescribe();
  if (!git.empty()) CHECK(first_version.rfind(git, 0) == 0);
}

TEST_CASE("the version comes from git, CORE_VERSION, or says there was no git",
          "[integration][cli]") {
  TempDir dir;
  std::string script = SourceDir() + "/common/version.cmake";
  auto generate = [&](const std::string& src, const std::string& env) {
    std::string out = dir.path() + "/version.cpp";
    std::remove(out.c_str());
    int rc = Run(env + " cmake -DSRC='" + src + "' -DOUT='" + out + "' -P '" + script + "'");
    CHECK(rc == 0);
    return ReadFile(out);
  };
  // A tarball: the sources without .git (here: a directory that is no work tree).
  CHECK_THAT(generate(dir.path(), "env -u CORE_VERSION"),
             Catch::Contains("return \"unknown (built without git metadata)\";"));
  // A Docker build passes it in.
  CHECK_THAT(generate(dir.path(), "CORE_VERSION=v1.2.3"), Catch::Contains("return \"v1.2.3\";"));
  std::string git = GitDescribe();
  if (!git.empty()) {
    CHECK_THAT(generate(SourceDir(), "env -u CORE_VERSION"), Catch::Contains("return \"" + git));
  }
}
