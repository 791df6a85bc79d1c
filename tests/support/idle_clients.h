// Test support: many idle TCP connections to a loopback port (an attacker that opens
// connections and sends nothing), and a one-shot HTTP GET with a deadline.
// Ownership: IdleClients owns its sockets and closes them all in its destructor. Not
// thread-safe: one thread creates, refreshes and destroys it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace testsupport {

class IdleClients {
 public:
  // Starts `count` non-blocking connects to 127.0.0.1:port (they need not be accepted yet: a
  // server whose accept queue is full leaves them pending in the kernel, as an attacker would).
  // Raises this process's soft RLIMIT_NOFILE to its hard limit when count needs it.
  IdleClients(int port, int count);
  ~IdleClients();
  IdleClients(const IdleClients&) = delete;
  IdleClients& operator=(const IdleClients&) = delete;

  // Closes the connections the server has closed (or refused) and opens new ones in their place,
  // so `count` stay open. Returns how many were opened again.
  int Refresh();
  // Connections the server has accepted or the kernel holds, i.e. not yet seen closed.
  int open() const;
  // Connections opened in all, the first `count` included.
  int64_t opened() const { return opened_; }

 private:
  int Dial();
  int port_;
  std::vector<int> fds_;  // owned; -1 where a connect failed at once
  int64_t opened_ = 0;
};

// GET path on a new connection to 127.0.0.1:port ("Connection: close"); the status code, or -1
// when no whole answer came within timeout_ms. *answer gets the whole answer, head and body.
int HttpGet(int port, const std::string& path, int timeout_ms, std::string* answer = nullptr);

}  // namespace testsupport
