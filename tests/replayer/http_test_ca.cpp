#include "tests/replayer/http_test_ca.h"

#include <unistd.h>

#include <cstdlib>
#include <stdexcept>

namespace replayer::testing {
namespace {

std::string SelfSigned(const std::string& name, const std::string& subject) {
  return "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout " +
         name + ".key -out " + name + ".pem -days 2 -subj '" + subject + "' 2>/dev/null";
}

}  // namespace

TestCa::TestCa() {
  char tmpl[] = "/tmp/http-test-ca-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  std::string cmd =
      "cd '" + dir_.string() + "' && " +
      "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\nbasicConstraints=CA:FALSE\\n"
      "extendedKeyUsage=serverAuth\\n' > ext.cnf && " +
      SelfSigned("ca", "/CN=core-workers test CA") + " && " +
      SelfSigned("other", "/CN=another CA") +
      " && openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
      "-keyout server.key -out server.csr -subj /CN=127.0.0.1 2>/dev/null && "
      "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
      "-out server.pem -days 2 -extfile ext.cnf 2>/dev/null";
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("openssl could not make the test CA");
}

TestCa::~TestCa() {
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

}  // namespace replayer::testing
