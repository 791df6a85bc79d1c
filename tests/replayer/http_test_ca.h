// A throw-away certificate authority for the https:// tests, made with the openssl tool: a CA,
// a server certificate for 127.0.0.1 (and localhost) signed by it, and a second, self-signed
// certificate that the CA did not sign. All in a directory of its own, removed with the object.
//
// Test support only. Not thread-safe (make it on the test's thread).
#pragma once

#include <filesystem>
#include <string>

namespace replayer::testing {

class TestCa {
 public:
  TestCa();  // throws std::runtime_error when openssl fails
  ~TestCa();
  TestCa(const TestCa&) = delete;
  TestCa& operator=(const TestCa&) = delete;

  // ca.pem (the CA), server.pem / server.key (signed by it), other.pem / other.key (not).
  std::string path(const char* name) const { return (dir_ / name).string(); }
  std::string dir() const { return dir_.string(); }

 private:
  std::filesystem::path dir_;
};

}  // namespace replayer::testing
