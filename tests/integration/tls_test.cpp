// NATS over TLS from the client side: tls:// URLs with NATS_CA, and mutual TLS with NATS_CERT
// and NATS_KEY, against real nats-servers with certificates made here with openssl.
#include <signal.h>

#include <catch2/catch.hpp>
#include <fstream>

#include "tests/integration/nats_server_process.h"
#include "tests/support/test_stack.h"

using namespace testsupport;

namespace {

// A CA, a server certificate for 127.0.0.1 and localhost, a client certificate, and a second CA
// that signed none of them.
void MakeCertificates(const std::string& d) {
  const std::string key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
  std::string script =
      "set -e; cd '" + d + "'\n" + "openssl req -x509 " + key +
      " -keyout ca.key -out ca.pem -days 2 -subj /CN=test-ca\n" + "openssl req -x509 " + key +
      " -keyout other-ca.key -out other-ca.pem -days 2 "
      "-subj /CN=other-ca\n" +
      "openssl req " + key + " -keyout server.key -out server.csr -subj /CN=nats-test\n" +
      "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\nextendedKeyUsage=serverAuth\\n' "
      "> server.ext\n"
      "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
      "-extfile server.ext -out server.pem\n" +
      "openssl req " + key + " -keyout client.key -out client.csr -subj /CN=replayer\n" +
      "printf 'extendedKeyUsage=clientAuth\\n' > client.ext\n"
      "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
      "-extfile client.ext -out client.pem\n" +
      // Signed by the CA, but for another name than the one the client connects to.
      "openssl req " + key + " -keyout wrong.key -out wrong.csr -subj /CN=elsewhere\n" +
      "printf 'subjectAltName=DNS:elsewhere.test\\nextendedKeyUsage=serverAuth\\n' > wrong.ext\n"
      "openssl x509 -req -in wrong.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
      "-extfile wrong.ext -out wrong.pem\n";
  std::ofstream(d + "/make.sh") << script;
  REQUIRE(Run("bash '" + d + "/make.sh' >'" + d + "/openssl.log' 2>&1") == 0);
}

std::string TlsBlock(const std::string& d, bool verify, const std::string& cert = "server") {
  return "tls {\n  cert_file: \"" + d + "/" + cert + ".pem\"\n  key_file: \"" + d + "/" + cert +
         ".key\"\n  ca_file: \"" + d + "/ca.pem\"\n  verify: " + (verify ? "true" : "false") +
         "\n  timeout: 2\n}\n";
}

std::string JetStreamBlock(const std::string& d, const std::string& name) {
  return "jetstream { store_dir: \"" + d + "/" + name + "-js\" }\n";
}

// Runs platformctl with these variables; returns its output (stdout and stderr).
std::string PlatformctlWith(const std::string& vars, const std::string& args, int* rc) {
  return Capture(vars + " " + BinaryDir() + "/platformctl/platformctl " + args + " 2>&1", rc);
}

}  // namespace

TEST_CASE("tls:// with NATS_CA connects, without the CA or in plain text it is refused",
          "[integration][tls]") {
  TempDir dir;
  const std::string d = dir.path();
  MakeCertificates(d);
  NatsServerProcess tls(d, "tls", TlsBlock(d, false) + JetStreamBlock(d, "tls"));
  const std::string tls_url = "tls://127.0.0.1:" + std::to_string(tls.port());
  const std::string plain_url = "nats://127.0.0.1:" + std::to_string(tls.port());
  int rc = -1;

  SECTION("with the CA: JetStream works over TLS") {
    std::string out =
        PlatformctlWith("NATS_URL=" + tls_url + " NATS_CA=" + d + "/ca.pem", "init", &rc);
    INFO(out);
    CHECK(rc == 0);
    out = PlatformctlWith("NATS_URL=" + tls_url + " NATS_CA=" + d + "/ca.pem",
                          "streams --interval 0 --stream WEB_EVENTS", &rc);
    INFO(out);
    CHECK(rc == 0);
    CHECK_THAT(out, Catch::Contains("WEB_EVENTS"));
  }
  SECTION("without the CA (the system's trust store) the certificate is refused") {
    std::string out = PlatformctlWith("NATS_URL=" + tls_url, "streams --interval 0", &rc);
    INFO(out);
    CHECK(rc == 3);
    CHECK_THAT(out, Catch::Contains("connect to NATS at " + tls_url));
    CHECK_THAT(out, Catch::Contains("SSL handshake error") &&
                        Catch::Contains("unable to get local issuer certificate"));
  }
  SECTION("with a CA that did not sign the server's certificate, it is refused") {
    std::string out = PlatformctlWith("NATS_URL=" + tls_url + " NATS_CA=" + d + "/other-ca.pem",
                                      "streams --interval 0", &rc);
    INFO(out);
    CHECK(rc == 3);
    CHECK_THAT(out, Catch::Contains("unable to get local issuer certificate"));
  }
  SECTION("a certificate for another host name is refused") {
    // Signed by our CA, but it names elsewhere.test, not the 127.0.0.1 the URL names.
    NatsServerProcess wrong(d, "wrong", TlsBlock(d, false, "wrong"));
    const std::string url = "tls://127.0.0.1:" + std::to_string(wrong.port());
    std::string out = PlatformctlWith("NATS_URL=" + url + " NATS_CA=" + d + "/ca.pem",
                                      "streams --interval 0", &rc);
    INFO(out);
    CHECK(rc == 3);
    CHECK_THAT(out,
               Catch::Contains("SSL handshake error") && Catch::Contains("IP address mismatch"));
  }
  SECTION("a plain-text client is refused by the TLS server") {
    // nats:// without TLS settings: the server demands TLS; nats.c then tries TLS with the
    // system's trust store, which does not know our CA.
    std::string out = PlatformctlWith("NATS_URL=" + plain_url, "streams --interval 0", &rc);
    INFO(out);
    CHECK(rc == 3);
    // A client that speaks no TLS at all gets no further than the INFO line.
    std::string raw = Capture(
        "printf 'CONNECT {\"verbose\":false}\\r\\nPING\\r\\n' | timeout 5 "
        "bash -c 'exec 3<>/dev/tcp/127.0.0.1/" +
        std::to_string(tls.port()) + "; cat >&3; timeout 3 cat <&3' 2>&1");
    INFO(raw);
    CHECK_THAT(raw, Catch::Contains("\"tls_required\":true"));
    CHECK(raw.find("PONG") == std::string::npos);
  }
  SECTION("the services connect over TLS too") {
    int port = FreePortRange(1);
    ChildProcess replayer({BinaryDir() + "/replayer/replayer"},
                          {{"NATS_URL", tls_url},
                           {"NATS_CA", d + "/ca.pem"},
                           {"METRICS_LISTEN", "127.0.0.1:" + std::to_string(port)}},
                          d + "/replayer.log");
    std::string health;
    bool ok = WaitFor(
        [&] {
          health = Capture("curl -s -m 2 http://127.0.0.1:" + std::to_string(port) + "/healthz");
          return health.find("nats: connected") != std::string::npos;
        },
        15'000);
    INFO(ReadFile(d + "/replayer.log"));
    CHECK(ok);
    replayer.Signal(SIGTERM);
    CHECK(replayer.Wait(10'000) == 0);
  }
  SECTION("a service without the CA keeps trying and logs why it cannot connect") {
    int port = FreePortRange(1);
    ChildProcess replayer(
        {BinaryDir() + "/replayer/replayer"},
        {{"NATS_URL", tls_url}, {"METRICS_LISTEN", "127.0.0.1:" + std::to_string(port)}},
        d + "/replayer-noca.log");
    bool logged = WaitFor(
        [&] {
          // Three attempts, each with its reason.
          std::string log = ReadFile(d + "/replayer-noca.log");
          size_t n = 0;
          for (auto p = log.find("unable to get local issuer certificate"); p != std::string::npos;
               p = log.find("unable to get local issuer certificate", p + 1))
            ++n;
          return n >= 3;
        },
        15'000);
    INFO(ReadFile(d + "/replayer-noca.log"));
    CHECK(logged);
    CHECK(replayer.Running());
    replayer.Signal(SIGTERM);
    CHECK(replayer.Wait(10'000) == 0);
  }
}

TEST_CASE("mutual TLS: the client certificate from NATS_CERT and NATS_KEY", "[integration][tls]") {
  TempDir dir;
  const std::string d = dir.path();
  MakeCertificates(d);
  NatsServerProcess mtls(d, "mtls", TlsBlock(d, true) + JetStreamBlock(d, "mtls"));
  const std::string url = "tls://127.0.0.1:" + std::to_string(mtls.port());
  const std::string ca = " NATS_CA=" + d + "/ca.pem";
  int rc = -1;
  std::string out = PlatformctlWith(
      "NATS_URL=" + url + ca + " NATS_CERT=" + d + "/client.pem NATS_KEY=" + d + "/client.key",
      "init", &rc);
  INFO(out);
  CHECK(rc == 0);
  out = PlatformctlWith("NATS_URL=" + url + ca, "streams --interval 0", &rc);
  INFO(out);
  CHECK(rc == 3);  // no client certificate: the server refuses
  // A key that is not the certificate's: nats.c cannot load the pair, a configuration error.
  out = PlatformctlWith(
      "NATS_URL=" + url + ca + " NATS_CERT=" + d + "/client.pem NATS_KEY=" + d + "/server.key",
      "streams --interval 0", &rc);
  INFO(out);
  CHECK(rc == 2);
  CHECK_THAT(out, Catch::Contains("NATS_CERT/NATS_KEY: cannot load"));
}

TEST_CASE("tls:// to a server without TLS is refused, not used in plain text",
          "[integration][tls]") {
  TempDir dir;
  NatsServerProcess plain(dir.path(), "plain", JetStreamBlock(dir.path(), "plain"));
  int rc = -1;
  std::string out = PlatformctlWith("NATS_URL=tls://127.0.0.1:" + std::to_string(plain.port()),
                                    "streams --interval 0", &rc);
  INFO(out);
  CHECK(rc == 3);
  CHECK_THAT(out, Catch::Contains("ecure"));  // nats.c: "Secure connection wanted"/"required"
}

TEST_CASE("TLS files are checked at start, naming the variable", "[integration][tls]") {
  int rc = -1;
  for (const std::string& bin :
       {BinaryDir() + "/replayer/replayer", BinaryDir() + "/platformctl/platformctl streams"}) {
    std::string out =
        Capture("NATS_URL=tls://127.0.0.1:1 NATS_CA=/nonexistent/ca.pem " + bin + " 2>&1", &rc);
    INFO(out);
    CHECK(rc == 2);
    CHECK_THAT(out, Catch::Contains("NATS_CA: '/nonexistent/ca.pem' is not a readable file"));
  }
}
