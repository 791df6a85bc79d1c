// Test support: what the kernel says about a process's TCP connections (/proc), so a test can
// wait for "connected" or "accepted" itself instead of sleeping and hoping. Linux, IPv4 only
// (/proc/net/tcp: the tests connect over 127.0.0.1). Stateless; any thread.
#pragma once

#include <sys/types.h>

namespace testsupport {

// TCP connections in state ESTABLISHED that process `pid` holds a descriptor of and whose
// local port (local = true: connections its listener accepted) or remote port (local = false:
// connections it made) is `port`; -1 when /proc cannot be read (the process is gone).
int EstablishedSockets(pid_t pid, int port, bool local);

}  // namespace testsupport
