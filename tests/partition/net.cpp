#include "tests/partition/net.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace partition_test {

namespace {

// Per namespace: cuts and degradations in chains of their own, so each can be emptied alone.
constexpr const char* kChains[] = {"CWP-CUT-IN", "CWP-CUT-OUT", "CWP-DEG-IN", "CWP-DEG-OUT"};

int Quiet(const std::string& command) { return testsupport::Run(command + " >/dev/null 2>&1"); }

// Runs a setup command; its own words on failure.
common::Status Must(const std::string& command) {
  int rc = 0;
  std::string out = testsupport::Capture(command + " 2>&1", &rc);
  if (rc != 0) return common::Error::Permanent(command + ": " + out);
  return common::Status::Ok();
}

void MustOrThrow(const std::string& command) {
  auto s = Must(command);
  if (!s.ok()) throw std::runtime_error(s.error().message);
}

}  // namespace

// The DNAT that makes 10.77.N.1 the host namespace's loopback for the namespaces.
std::string Net::Dnat() const {
  return "PREROUTING -i " + Bridge() + " -d " + HostAddress() +
         " -p tcp -j DNAT --to-destination 127.0.0.1";
}

void Net::RemoveLeftovers() {
  Quiet("ip link del " + Bridge());
  for (const auto& [name, byte] : hosts_) {
    Quiet("ip netns del " + Ns(name));
    // The pair goes with its namespace, unless a process of a killed run still holds that.
    Quiet("ip link del " + Ns(name));
  }
  while (Quiet("iptables -t nat -D " + Dnat()) == 0) {
  }
}

common::Result<std::unique_ptr<Net>> Net::Make(const std::map<std::string, int>& hosts) {
  if (geteuid() != 0) {
    return common::Error::Permanent("network namespaces need root (running as uid " +
                                    std::to_string(geteuid()) + ")");
  }
  for (const char* tool : {"ip", "iptables"}) {
    if (Quiet(std::string("command -v ") + tool) != 0) {
      return common::Error::Permanent(std::string(tool) + " is not installed");
    }
  }
  const char* number_env = std::getenv("PARTITION_NET");
  const int number = number_env != nullptr && *number_env != 0 ? std::atoi(number_env) : 0;
  if (number < 0 || number > 99) {
    return common::Error::Invalid("PARTITION_NET must be 0..99, not " + std::string(number_env));
  }
  std::unique_ptr<Net> net(new Net(hosts, number));
  net->RemoveLeftovers();
  const std::string br = net->Bridge();
  for (const std::string& c :
       {"ip link add " + br + " type bridge", "ip addr add " + net->HostAddress() + "/24 dev " + br,
        "ip link set " + br + " up", "sysctl -qw net.ipv4.conf." + br + ".route_localnet=1",
        "iptables -t nat -A " + net->Dnat()}) {
    if (auto s = Must(c); !s.ok()) return s.error();
  }
  for (const auto& [name, byte] : hosts) {
    const std::string ns = net->Ns(name);
    const std::string veth = ns;  // the host side's end, named after the namespace (<= 15 chars)
    std::vector<std::string> steps = {
        "ip netns add " + ns,
        "ip link add " + veth + " type veth peer name eth0 netns " + ns,
        "ip link set " + veth + " master " + br + " up",
        "ip -n " + ns + " addr add " + net->Ip(name) + "/24 dev eth0",
        "ip -n " + ns + " link set eth0 up",
        "ip -n " + ns + " link set lo up",
        "ip -n " + ns + " route add default via " + net->HostAddress(),
    };
    for (const char* chain : kChains) {
      steps.push_back("ip netns exec " + ns + " iptables -N " + chain);
    }
    steps.push_back("ip netns exec " + ns + " iptables -A INPUT -i eth0 -j CWP-CUT-IN");
    steps.push_back("ip netns exec " + ns + " iptables -A INPUT -i eth0 -j CWP-DEG-IN");
    steps.push_back("ip netns exec " + ns + " iptables -A OUTPUT -o eth0 -j CWP-CUT-OUT");
    steps.push_back("ip netns exec " + ns + " iptables -A OUTPUT -o eth0 -j CWP-DEG-OUT");
    for (const auto& c : steps) {
      if (auto s = Must(c); !s.ok()) return s.error();
    }
  }
  return net;
}

Net::~Net() {
  for (auto& [host, proc] : delayers_) proc.reset();
  RemoveLeftovers();
}

std::string Net::Ns(const std::string& host) const {
  return "cwp" + std::to_string(number_) + "-" + host;
}

std::string Net::Ip(const std::string& host) const {
  auto it = hosts_.find(host);
  if (it == hosts_.end()) throw std::logic_error("no host " + host);
  return Subnet() + std::to_string(it->second);
}

std::vector<std::string> Net::Exec(const std::string& host) const {
  return {"/usr/sbin/ip", "netns", "exec", Ns(host)};
}

void Net::In(const std::string& host, const std::string& iptables_args) {
  MustOrThrow("ip netns exec " + Ns(host) + " iptables " + iptables_args);
}

void Net::Cut(const std::string& a, const std::string& b) {
  for (const auto& [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
    In(from, "-A CWP-CUT-OUT -d " + Ip(to) + " -j DROP");
    In(from, "-A CWP-CUT-IN -s " + Ip(to) + " -j DROP");
  }
  cuts_.emplace_back(a, b);
}

void Net::Heal(const std::string& a, const std::string& b) {
  for (const auto& [from, to] : {std::pair{a, b}, std::pair{b, a}}) {
    In(from, "-D CWP-CUT-OUT -d " + Ip(to) + " -j DROP");
    In(from, "-D CWP-CUT-IN -s " + Ip(to) + " -j DROP");
  }
  std::erase(cuts_, std::pair{a, b});
}

void Net::Degrade(const std::string& host, double loss, int delay_ms) {
  Restore(host);
  char p[32];
  std::snprintf(p, sizeof p, "%.3f", loss);
  if (loss > 0) {
    In(host,
       std::string("-A CWP-DEG-IN -m statistic --mode random --probability ") + p + " -j DROP");
    In(host,
       std::string("-A CWP-DEG-OUT -m statistic --mode random --probability ") + p + " -j DROP");
  }
  if (delay_ms > 0) {
    std::vector<std::string> argv = Exec(host);
    argv.push_back(testsupport::BinaryDir() + "/tests/partition/netdelay");
    argv.push_back("1");
    argv.push_back(std::to_string(delay_ms));
    const std::string log = "/tmp/" + Ns(host) + "-netdelay.log";
    std::remove(log.c_str());
    delayers_[host] = std::make_unique<testsupport::ChildProcess>(
        argv, std::map<std::string, std::string>{}, log);
    // Bound before the rule: a queue nobody reads holds packets (fail-open covers only a full one).
    bool ready = testsupport::WaitFor(
        [&] {
          return testsupport::Capture("cat " + log + " 2>/dev/null").find("ready") !=
                 std::string::npos;
        },
        5000);
    if (!ready)
      throw std::runtime_error("netdelay did not start: " + testsupport::Capture("cat " + log));
    In(host, "-A CWP-DEG-OUT -j NFQUEUE --queue-num 1");
  }
}

void Net::Restore(const std::string& host) {
  In(host, "-F CWP-DEG-IN");
  In(host, "-F CWP-DEG-OUT");
  // After the rule is gone: the delayer lets what it holds through as it stops.
  if (auto it = delayers_.find(host); it != delayers_.end()) {
    it->second->Signal(SIGTERM);
    it->second->Wait(5000);
    delayers_.erase(it);
  }
}

void Net::HealAll() {
  for (const auto& [name, byte] : hosts_) {
    In(name, "-F CWP-CUT-IN");
    In(name, "-F CWP-CUT-OUT");
    Restore(name);
  }
  cuts_.clear();
}

std::string Net::Rules() const {
  std::string out;
  for (const auto& [name, byte] : hosts_) {
    std::string rules = testsupport::Capture("ip netns exec " + Ns(name) +
                                             " iptables -S 2>&1 | grep -- '-A CWP' || true");
    if (!rules.empty()) out += name + ":\n" + rules;
  }
  return out.empty() ? "(no cuts, no degradations)\n" : out;
}

}  // namespace partition_test
