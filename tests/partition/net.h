// A private network of Linux network namespaces for the partition tests: a bridge in the host's
// namespace (10.77.N.1/24) and one namespace per host, each joined to the bridge by a veth pair.
// N is the network's number, PARTITION_NET (0..99, default 0): the soak and the tests can run
// side by side with different numbers.
// Faults are iptables rules inside the namespaces, so the host's own namespace never changes
// beyond the bridge and one DNAT rule:
//   Cut(a, b)       drops every packet between two hosts, both ways (a partition: TCP hangs, as
//                   on a real network; nothing answers with a reset)
//   Degrade(h, ...) drops a share of the packets in and out of h and holds what h sends for a
//                   delay (netdelay, an NFQUEUE reader: this kernel has no sch_netem)
// Everything a host reaches at 10.77.N.1 is the host namespace's loopback (DNAT with
// route_localnet), so a stack on 127.0.0.1 (scripts/stack's PostgreSQL and Umami) serves the
// namespaces unchanged.
//
// Ownership: a Net owns the bridge, the namespaces, its rules and its netdelay processes; the
// destructor removes them all. Make() removes what a killed earlier run of the same number left
// (the names carry the number, so two Nets of one number cannot live at once: the partition
// tests are RUN_SERIAL).
// Thread-safety: none; the test's main thread only.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "tests/support/test_stack.h"

namespace partition_test {

class Net {
 public:
  // The hosts by name ("n1", "r1", ...) and their last address byte (10.77.N.<byte>).
  // Fails (with the command's own message) where namespaces cannot be made: not root, no
  // `ip`, no iptables, a kernel without veth or bridges.
  static common::Result<std::unique_ptr<Net>> Make(const std::map<std::string, int>& hosts);
  ~Net();
  Net(const Net&) = delete;
  Net& operator=(const Net&) = delete;

  // The host namespace's address on the bridge: 10.77.N.1.
  std::string HostAddress() const { return Subnet() + "1"; }
  std::string Subnet0() const { return Subnet() + "0"; }  // the network's address
  std::string Ip(const std::string& host) const;
  // argv prefix that runs a program inside the host's namespace ("ip netns exec <ns>").
  std::vector<std::string> Exec(const std::string& host) const;

  void Cut(const std::string& a, const std::string& b);
  void Heal(const std::string& a, const std::string& b);
  // `loss` (0..1) of the packets in each direction dropped, and what the host sends held for
  // delay_ms. Restore() ends it.
  void Degrade(const std::string& host, double loss, int delay_ms);
  void Restore(const std::string& host);
  // Every cut and every degradation ended.
  void HealAll();
  // The rules now in force, for a failure's report.
  std::string Rules() const;

 private:
  Net(std::map<std::string, int> hosts, int number) : hosts_(std::move(hosts)), number_(number) {}
  std::string Subnet() const { return "10.77." + std::to_string(number_) + "."; }
  std::string Bridge() const { return "cwpbr" + std::to_string(number_); }
  std::string Dnat() const;
  void RemoveLeftovers();
  std::string Ns(const std::string& host) const;
  void In(const std::string& host, const std::string& iptables_args);
  std::map<std::string, int> hosts_;
  int number_ = 0;
  std::map<std::string, std::unique_ptr<testsupport::ChildProcess>> delayers_;
  std::vector<std::pair<std::string, std::string>> cuts_;
  std::string log_dir_;
};

}  // namespace partition_test
