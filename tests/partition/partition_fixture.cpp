#include "tests/partition/partition_fixture.h"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <stdexcept>

#include "platformctl/nats_admin.h"
#include "tests/support/metrics_scrape.h"
#include "tests/support/nats_cluster.h"
#include "tests/support/queue_judge.h"
#include "tests/support/web_events.h"

namespace partition_test {

using testsupport::Capture;

namespace {

constexpr int kNodes = 3;
constexpr const char* kServices[] = {"r1", "r2", "w1", "w2"};
constexpr int kMetricsPort = 9464;

// Records which address inserted each batch row, and when: the writers' leadership as the
// database saw it. Test-only; the schema itself has no such column.
constexpr const char* kAuditSql =
    "CREATE TABLE IF NOT EXISTS public.partition_audit (batch_id text, client inet, "
    "at timestamptz DEFAULT clock_timestamp());"
    "CREATE OR REPLACE FUNCTION public.partition_audit_fn() RETURNS trigger AS $$ BEGIN "
    "INSERT INTO public.partition_audit (batch_id, client) VALUES (NEW.batch_id, "
    "inet_client_addr()); RETURN NEW; END $$ LANGUAGE plpgsql;"
    "DROP TRIGGER IF EXISTS partition_audit ON metrics.batches;"
    "CREATE TRIGGER partition_audit AFTER INSERT ON metrics.batches FOR EACH ROW EXECUTE "
    "FUNCTION public.partition_audit_fn();";

}  // namespace

int64_t WallNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

namespace {

// "2026-12-03T14:31:22.959+00:00 ..." (spdlog's UTC time stamp) in ns since the epoch; 0 if the
// line has none.
int64_t LogTimeNs(const std::string& line) {
  std::tm tm{};
  int ms = 0;
  if (line.size() < 23 ||
      std::sscanf(line.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d.%3d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms) != 7) {
    return 0;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<int64_t>(timegm(&tm)) * 1'000'000'000 + int64_t{ms} * 1'000'000;
}

}  // namespace

std::vector<Act> PartitionFixture::Logged(const std::string& needle) const {
  std::vector<Act> out;
  for (const char* s : kServices) {
    std::ifstream in(stack_->dir() + "/" + s + ".log");
    std::string line;
    while (std::getline(in, line)) {
      const int64_t at = LogTimeNs(line);
      if (at != 0 && line.find(needle) != std::string::npos) out.push_back({s, at, at});
    }
  }
  return out;
}

std::vector<Term> PartitionFixture::Terms(char kind) const {
  const std::string key = kind == 'r' ? "replayer" : "metricswriter";
  std::vector<Term> terms;
  for (const char* s : kServices) {
    if (s[0] != kind) continue;
    std::ifstream in(stack_->dir() + "/" + s + ".log");
    std::string line;
    Term open;
    auto close = [&](int64_t at) {
      if (open.begin_ns == 0) return;
      open.end_ns = at;
      terms.push_back(open);
      open = Term{};
    };
    while (std::getline(in, line)) {
      int64_t at = LogTimeNs(line);
      if (at == 0) continue;
      if (line.find("leads: took the " + key + " lease") != std::string::npos) {
        close(at);  // not expected: a term begins only after the last one ended
        open = Term{s, at, 0};
      } else if (line.find("lost the " + key + " lease") != std::string::npos ||
                 line.find("the lease is lost") != std::string::npos ||
                 line.find("stopping") != std::string::npos ||
                 line.find(kind == 'r' ? "replayer: replayer " : "metricswriter: metricswriter ") !=
                     std::string::npos) {  // a new process's first line
        close(at);
      }
    }
    if (open.begin_ns != 0) terms.push_back(open);
  }
  return terms;
}

std::unique_ptr<PartitionFixture> PartitionFixture::Make(std::string* why) {
  std::map<std::string, int> hosts = {{"n1", 11}, {"n2", 12}, {"n3", 13}, {"r1", 21},
                                      {"r2", 22}, {"w1", 31}, {"w2", 32}};
  auto net = Net::Make(hosts);
  if (!net) {
    *why = "network namespaces cannot be made here: " + net.error().message;
    return nullptr;
  }
  std::unique_ptr<PartitionFixture> f(new PartitionFixture());
  f->net_ = std::move(*net);
  f->nats_server_ = testsupport::NatsServerBin();  // throws when it does not run
  f->stack_ = std::make_unique<testsupport::TestStack>(std::vector<std::string>{"pg", "umami"});
  // PostgreSQL trusts loopback only; the namespaces come from 10.77.N.0/24.
  std::string hba =
      Capture("psql -XAt '" + f->stack_->Env("UMAMI_DATABASE_URL") + "' -c 'SHOW hba_file'");
  while (!hba.empty() && hba.back() == '\n') hba.pop_back();
  std::ofstream(hba, std::ios::app) << "host all all " + f->net_->Subnet0() + "/24 trust\n";
  testsupport::Query(f->stack_->Env("UMAMI_DATABASE_URL"), "SELECT pg_reload_conf()");
  std::string umami = f->stack_->Env("UMAMI_URLS");
  f->proxy_ = std::make_unique<testsupport::RecordingProxy>(umami.substr(0, umami.find(',')));

  // The production configuration (ansible/roles/nats): mutual TLS on the routes, one
  // certificate naming every node's address (scripts/lib/common.sh makes it), the default route
  // pool, and JetStream syncing every write before it acknowledges it.
  const std::string tls = f->stack_->dir() + "/route-tls";
  std::string ips;
  for (int j = 1; j <= kNodes; ++j) ips += " " + f->net_->Ip(NodeHost(j));
  int tls_rc = 0;
  std::string tls_out =
      Capture("bash -c '. \"$0\" && make_route_tls \"$@\"' '" + testsupport::SourceDir() +
                  "/scripts/lib/common.sh' '" + tls + "'" + ips + " 2>&1",
              &tls_rc);
  if (tls_rc != 0) throw std::runtime_error("route certificates: " + tls_out);
  const std::string route_tls = "tls { cert_file: \"" + tls + "/node.pem\", key_file: \"" + tls +
                                "/node-key.pem\", ca_file: \"" + tls +
                                "/ca.pem\", verify: true, timeout: 2 }";
  for (int j = 1; j <= kNodes; ++j) {
    std::string routes;
    for (int r = 1; r <= kNodes; ++r) {
      if (r != j)
        routes += (routes.empty() ? "\"" : ", \"") + std::string("nats-route://") +
                  f->net_->Ip(NodeHost(r)) + ":6222\"";
    }
    const std::string ip = f->net_->Ip(NodeHost(j));
    const std::string dir = f->stack_->dir() + "/nats-" + std::to_string(j);
    Capture("mkdir -p " + dir);
    std::ofstream(dir + ".conf") << "server_name: \"nats-" << j << "\"\nlisten: \"" << ip
                                 << ":4222\"\nhttp: \"" << ip << ":8222\"\nmax_payload: 8MB\n"
                                 << "jetstream { store_dir: \"" << dir
                                 << "\", max_memory_store: 1GB, max_file_store: 20GB, "
                                 << "sync_interval: always }\n"
                                 << "cluster { name: \"partition\", listen: \"" << ip
                                 << ":6222\", routes: [ " << routes << " ], no_advertise: true, "
                                 << route_tls << " }\n";
    f->StartNode(j);
  }
  for (int j = 1; j <= kNodes; ++j) {
    const std::string health = f->MonitorUrls()[static_cast<size_t>(j - 1)] + "/healthz";
    bool up = testsupport::WaitFor(
        [&] { return testsupport::Run("curl -sf -m 2 -o /dev/null " + health) == 0; }, 60'000);
    if (!up) throw std::runtime_error("nats-" + std::to_string(j) + " not healthy");
  }
  // Healthy nodes are not yet a cluster that places three replicas (stack::LeadsWholeMeta).
  bool formed = testsupport::WaitFor(
      [&] {
        for (const auto& m : f->MonitorUrls()) {
          if (testsupport::stack::LeadsWholeMeta(Capture("curl -s -m 2 " + m + "/jsz"), kNodes)) {
            return true;
          }
        }
        return false;
      },
      60'000);
  if (!formed) throw std::runtime_error("no node leads a meta group of all three within 60 s");
  int rc = -1;
  std::string out = Capture("NATS_URL=" + f->NodeUrls({1, 2, 3}) + " " + testsupport::BinaryDir() +
                                "/platformctl/platformctl init --replicas 3 2>&1",
                            &rc);
  if (rc != 0) throw std::runtime_error("platformctl init --replicas 3: " + out);
  for (int i = 0; i < 2; ++i) {
    f->sites.push_back(testsupport::NewUuid());
    testsupport::AddWebsite(f->stack_->Env("UMAMI_DATABASE_URL"), f->sites.back());
  }
  for (const char* s : kServices) f->StartService(s);
  // The writers create the schema at start; the audit trigger goes on its table.
  const std::string db = f->stack_->Env("DATABASE_URL");
  bool schema = testsupport::WaitFor(
      [&] {
        return testsupport::QueryInt(db,
                                     "SELECT count(*) FROM pg_tables WHERE schemaname = "
                                     "'metrics' AND tablename = 'batches'") == 1;
      },
      30'000);
  if (!schema) throw std::runtime_error("metrics.batches never appeared");
  const std::string audit = f->stack_->dir() + "/partition_audit.sql";
  std::ofstream(audit) << kAuditSql;
  int audit_rc = testsupport::Run("psql -Xq -v ON_ERROR_STOP=1 '" + db + "' -f " + audit);
  if (audit_rc != 0) {
    throw std::runtime_error("audit trigger: psql exited " + std::to_string(audit_rc));
  }
  return f;
}

PartitionFixture::~PartitionFixture() {
  services_.clear();  // before NATS and the stack they talk to
  nodes_.clear();
  proxy_.reset();
  stack_.reset();
  net_.reset();
}

std::string PartitionFixture::RootUrl(const std::string& url) const {
  std::string out = url;
  for (size_t at = out.find("127.0.0.1"); at != std::string::npos; at = out.find("127.0.0.1", at)) {
    out.replace(at, 9, net_->HostAddress());
  }
  return out;
}

std::string PartitionFixture::NodeUrls(const std::vector<int>& nodes) const {
  std::string out;
  for (int j : nodes)
    out += (out.empty() ? "" : ",") + ("nats://" + net_->Ip(NodeHost(j)) + ":4222");
  return out;
}

std::vector<std::string> PartitionFixture::MonitorUrls() const {
  std::vector<std::string> out;
  for (int j = 1; j <= kNodes; ++j) out.push_back("http://" + net_->Ip(NodeHost(j)) + ":8222");
  return out;
}

std::unique_ptr<common::NatsClient> PartitionFixture::Connect(const std::vector<int>& nodes,
                                                              const std::string& name) {
  common::CommonConfig c;
  for (int j : nodes) c.nats_urls.push_back("nats://" + net_->Ip(NodeHost(j)) + ":4222");
  common::NatsClient::Options o;
  o.client_name = name;
  o.request_timeout_ms = 2000;
  auto conn = common::NatsClient::Connect(c, o);
  if (!conn) throw std::runtime_error("connect to NATS: " + conn.error().message);
  return std::move(*conn);
}

void PartitionFixture::StartNode(int j) {
  auto argv = net_->Exec(NodeHost(j));
  const std::string base = stack_->dir() + "/nats-" + std::to_string(j);
  argv.insert(argv.end(), {nats_server_, "-c", base + ".conf"});
  nodes_[j] = std::make_unique<testsupport::ChildProcess>(
      argv, std::map<std::string, std::string>{}, base + ".log");
}

void PartitionFixture::KillNode(int j) {
  nodes_[j]->Signal(SIGKILL);
  nodes_[j]->Wait(5000);
}

pid_t PartitionFixture::NodePid(int j) {
  auto it = nodes_.find(j);
  return it != nodes_.end() && it->second->Running() ? it->second->pid() : -1;
}

pid_t PartitionFixture::ServicePid(const std::string& host) {
  auto it = services_.find(host);
  return it != services_.end() && it->second->Running() ? it->second->pid() : -1;
}

void PartitionFixture::StartService(const std::string& host) {
  const bool replayer = host[0] == 'r';
  std::map<std::string, std::string> env = {
      {"NATS_URL", NodeUrls({1, 2, 3})},
      {"INSTANCE_NAME", host},
      {"METRICS_LISTEN", net_->Ip(host) + ":" + std::to_string(kMetricsPort)},
      {"LOG_LEVEL", "info"},
  };
  if (replayer) {
    env["UMAMI_URLS"] =
        "http://" + net_->HostAddress() + ":" + proxy_->url().substr(proxy_->url().rfind(':') + 1);
    env["REPLAYER_ACK_WAIT"] = "10s";
  } else {
    env["DATABASE_URL"] = RootUrl(stack_->Env("DATABASE_URL"));
    env["METRICSWRITER_ACK_WAIT"] = "10s";
  }
  auto argv = net_->Exec(host);
  argv.push_back(testsupport::BinaryDir() +
                 (replayer ? "/replayer/replayer" : "/metricswriter/metricswriter"));
  const std::string log = stack_->dir() + "/" + host + ".log";
  services_[host] = std::make_unique<testsupport::ChildProcess>(argv, env, log);
  bool up = testsupport::WaitFor([&] { return !ScrapeService(host).empty(); }, 20'000);
  if (!up)
    throw std::runtime_error(host + " did not serve /metrics: " + Capture("tail -n 30 " + log));
}

void PartitionFixture::KillService(const std::string& host) {
  services_[host]->Signal(SIGKILL);
  services_[host]->Wait(5000);
}

bool PartitionFixture::Running(const std::string& host) {
  auto it = services_.find(host);
  return it != services_.end() && it->second->Running();
}

std::string PartitionFixture::ScrapeService(const std::string& host) {
  return testsupport::ScrapeUrl("http://" + net_->Ip(host) + ":" + std::to_string(kMetricsPort));
}

double PartitionFixture::Metric(const std::string& host, const std::string& name,
                                const std::string& labels) {
  return testsupport::MetricSum(ScrapeService(host), name, labels);
}

std::string PartitionFixture::Leader(char kind, int timeout_ms) {
  std::string leader;
  const std::string gauge = kind == 'r' ? "replayer_leader" : "metricswriter_leader";
  testsupport::WaitFor(
      [&] {
        for (const char* s : kServices) {
          if (s[0] == kind && Metric(s, gauge) == 1) {
            leader = s;
            return true;
          }
        }
        return false;
      },
      timeout_ms);
  return leader;
}

std::string PartitionFixture::OperatorView() {
  std::string out;
  for (const char* s : kServices) {
    const std::string kind = s[0] == 'r' ? "replayer" : "metricswriter";
    const std::string text = ScrapeService(s);
    const std::string health =
        Capture("curl -s -m 2 -o /dev/null -w '%{http_code}' http://" + net_->Ip(s) + ":" +
                std::to_string(kMetricsPort) + "/healthz");
    out += (out.empty() ? "" : "; ") + std::string(s) + " leader " +
           std::to_string(static_cast<int>(testsupport::MetricSum(text, kind + "_leader")));
    if (text.find(kind + "_nats_connected") != std::string::npos) {
      out +=
          " nats_connected " +
          std::to_string(static_cast<int>(testsupport::MetricSum(text, kind + "_nats_connected")));
    }
    out += " /healthz " + health;
  }
  return out;
}

int PartitionFixture::NodeOf(const std::string& host) {
  const std::string prefix = (host[0] == 'r' ? "replayer@" : "metricswriter@") + host;
  return testsupport::ConnectedNode(MonitorUrls(), prefix);
}

std::vector<Act> PartitionFixture::Sends() const {
  std::map<std::string, std::string> by_ip;
  for (const char* s : kServices) by_ip[net_->Ip(s)] = s;
  std::vector<Act> acts;
  for (const auto& r : proxy_->Requests()) {
    if (r.path != "/api/send" && r.path != "/api/batch") continue;
    auto it = by_ip.find(r.remote_addr);
    acts.push_back({it != by_ip.end() ? it->second : r.remote_addr, r.start_ns, r.end_ns});
  }
  return acts;
}

int PartitionFixture::AnsweredSends(const std::string& host, int64_t from_ns, int64_t to_ns) const {
  int n = 0;
  for (const auto& r : proxy_->Requests()) {
    if (r.remote_addr == net_->Ip(host) && r.start_ns >= from_ns && r.start_ns <= to_ns &&
        r.status / 100 == 2 && (r.path == "/api/send" || r.path == "/api/batch")) {
      ++n;
    }
  }
  return n;
}

std::vector<Act> PartitionFixture::Inserts() const {
  std::map<std::string, std::string> by_ip;
  for (const char* s : kServices) by_ip[net_->Ip(s)] = s;
  std::vector<Act> acts;
  for (const auto& row :
       testsupport::Query(stack_->Env("DATABASE_URL"),
                          "SELECT host(client), (extract(epoch FROM at) * 1e9)::bigint FROM "
                          "public.partition_audit")) {
    auto bar = row.find('|');
    if (bar == std::string::npos) continue;
    std::string ip = row.substr(0, bar);
    int64_t at = std::stoll(row.substr(bar + 1));
    auto it = by_ip.find(ip);
    acts.push_back({it != by_ip.end() ? it->second : ip, at, at});
  }
  return acts;
}

bool PartitionFixture::WaitSettled(int timeout_ms) {
  int64_t last = -1;
  auto still_since = std::chrono::steady_clock::now();
  return testsupport::WaitFor(
      [&] {
        bool idle = true;
        for (const char* s : {"r1", "r2"}) {
          std::string text = ScrapeService(s);
          idle = idle && testsupport::MetricSum(text, "replayer_held_messages") == 0 &&
                 testsupport::MetricSum(text, "replayer_sends_in_flight") == 0;
        }
        int64_t now = ledger().StoredEvents();
        if (now != last || !idle) {
          last = now;
          still_since = std::chrono::steady_clock::now();
        }
        return std::chrono::steady_clock::now() - still_since >= std::chrono::seconds(3);
      },
      timeout_ms);
}

uint64_t PartitionFixture::Held(common::NatsClient& client, const std::string& stream) {
  auto r = platformctl::nats_admin::ReadStream(client, stream);
  return r ? r->messages : ~uint64_t{0};
}

bool PartitionFixture::Drained(common::NatsClient& client, const std::string& stream) {
  auto r = platformctl::nats_admin::ReadStream(client, stream);
  return r && testsupport::judge::Drained(*r);  // what the stream holds then is left behind
}

bool PartitionFixture::WaitDrained(common::NatsClient& client, const std::string& stream,
                                   int timeout_ms) {
  return testsupport::WaitFor([&] { return Drained(client, stream); }, timeout_ms);
}

testsupport::Ledger PartitionFixture::ledger() const {
  return testsupport::Ledger(stack_->Env("UMAMI_DATABASE_URL"), stack_->Env("DATABASE_URL"));
}

std::string PartitionFixture::Report() {
  std::string out = "rules in force:\n" + net_->Rules();
  for (const char* s : kServices) {
    std::string text = ScrapeService(s);
    out += std::string(s) + (Running(s) ? " (running):" : " (exited):");
    for (const char* m : {"replayer_leader", "metricswriter_leader", "replayer_nats_connected",
                          "replayer_held_messages", "replayer_events_stored_total",
                          "metricswriter_batches_stored_total"}) {
      if (text.find(m) != std::string::npos) {
        out += " " + std::string(m) + "=" +
               std::to_string(static_cast<int64_t>(testsupport::MetricSum(text, m)));
      }
    }
    out += "\n---- " + std::string(s) + " log\n" +
           testsupport::CollapsedTail(stack_->dir() + "/" + s + ".log", 25);
  }
  for (int j = 1; j <= kNodes; ++j) {
    std::string log = stack_->dir() + "/nats-" + std::to_string(j) + ".log";
    out += "---- " + log + "\n" + Capture("grep -v '^$' " + log + " | tail -n 10");
  }
  return out;
}

}  // namespace partition_test
