// The replayer over https:// against a real Umami: a TLS-terminating proxy (Node's tls module,
// the runtime Umami itself runs on) with a certificate from a test CA stands in front of Umami,
// the replayer trusts that CA through UMAMI_CA_FILE, and the proxy writes down every plaintext
// byte the replayer sent, so the test can read what reached the wire.
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/replayer/fixture.h"
#include "tests/replayer/http_test_ca.h"

using replayer_test::Fixture;
using testsupport::TestEvent;

namespace {

const char* kProxy = R"JS(
const tls = require('tls'), net = require('net'), fs = require('fs');
const [key, cert, port, target, log] = process.argv.slice(2);
const server = tls.createServer({key: fs.readFileSync(key), cert: fs.readFileSync(cert)}, (c) => {
  const u = net.connect(Number(target), '127.0.0.1');
  c.on('data', (d) => fs.appendFileSync(log, d));
  c.pipe(u);
  u.pipe(c);
  c.on('error', () => u.destroy());
  u.on('error', () => c.destroy());
  c.on('close', () => u.destroy());
  u.on('close', () => c.destroy());
});
server.listen(Number(port), '127.0.0.1', () => console.log('listening'));
)JS";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("https: the replayer stores events through TLS, and a CR LF header smuggles nothing",
          "[integration][umami][replayer]") {
  Fixture f(1, 1);
  replayer::testing::TestCa ca;
  std::string umami = f.stack.Env("UMAMI_URLS");
  std::string umami_port = umami.substr(umami.rfind(':') + 1);
  int port = testsupport::FreePortRange(1);
  std::string script = ca.path("proxy.js"), wire = ca.path("wire.log");
  std::ofstream(script) << kProxy;
  std::string node = testsupport::Capture("command -v node");
  while (!node.empty() && (node.back() == '\n' || node.back() == ' ')) node.pop_back();
  REQUIRE_FALSE(node.empty());
  testsupport::ChildProcess proxy({node, script, ca.path("server.key"), ca.path("server.pem"),
                                   std::to_string(port), umami_port, wire},
                                  {{"PATH", "/usr/bin:/bin"}}, ca.path("proxy.out"));
  REQUIRE(testsupport::WaitFor(
      [&] { return ReadFile(ca.path("proxy.out")).find("listening") != std::string::npos; },
      10000));

  f.StartReplayer({{"UMAMI_URLS", "https://127.0.0.1:" + std::to_string(port)},
                   {"UMAMI_CA_FILE", ca.path("ca.pem")}});
  const std::string site = f.sites[0];
  // 10 visitors, 3 events each: the later ones carry the visitor's cache token over TLS.
  for (int seq = 0; seq < 3; ++seq) {
    for (int v = 0; v < 10; ++v) {
      TestEvent e;
      e.site = site;
      e.visitor = v;
      e.seq = seq;
      e.id = "tls-" + std::to_string(v) + "-" + std::to_string(seq);
      f.Publish(e);
    }
  }
  // A user agent that would end the header and write a second request of its own.
  TestEvent bad;
  bad.site = site;
  bad.visitor = 500;
  bad.id = "tls-smuggle";
  bad.user_agent =
      "Mozilla/5.0\r\nContent-Length: 0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: 127.0.0.1";
  f.Publish(bad);

  // The good events are stored; the bad one ends in WEB_DLQ (however the engine classifies a
  // send refused before the wire) and nothing waits behind it.
  REQUIRE(testsupport::WaitFor([&] { return f.StoredEvents() == 30; }, 60000));
  REQUIRE(f.WaitDrained(120000));
  CHECK(f.StoredEvents() == 30);
  CHECK(f.DlqReasons().size() == 1);

  std::string bytes = ReadFile(wire);
  CHECK(bytes.find("POST /api/send HTTP/1.1\r\n") != std::string::npos);
  CHECK(bytes.find("\r\nx-umami-cache: ") != std::string::npos);
  CHECK(bytes.find("GET /api/heartbeat HTTP/1.1\r\n") != std::string::npos);
  CHECK(bytes.find("smuggled") == std::string::npos);
  CHECK(bytes.find("/v0/2") != std::string::npos);    // a good event's url, in its body
  CHECK(bytes.find("/v500/0") == std::string::npos);  // the bad event was not sent at all
  CHECK(f.StoredEvents("url_path LIKE '%smuggled%'") == 0);
}
