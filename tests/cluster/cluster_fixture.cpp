#include "tests/cluster/cluster_fixture.h"

#include <catch2/catch.hpp>
#include <chrono>

#include "platformctl/nats_admin.h"
#include "tests/metricswriter/harness.h"
#include "tests/support/ledger.h"
#include "tests/support/metrics_scrape.h"
#include "tests/support/nats_cluster.h"
#include "tests/support/queue_judge.h"
#include "tests/support/web_events.h"

namespace cluster_test {

using testsupport::Capture;
using Clock = std::chrono::steady_clock;

double Service::Metric(const std::string& name, const std::string& labels) const {
  return testsupport::MetricSum(testsupport::Scrape(port), name, labels);
}

ClusterFixture::ClusterFixture(int site_count)
    : stack({"nats", "pg", "umami"}, testsupport::StackOptions{.nats_nodes = 3}) {
  int rc = -1;
  std::string out = Capture("NATS_URL=" + stack.Env("NATS_URL") + " " + testsupport::BinaryDir() +
                                "/platformctl/platformctl init --replicas 3 2>&1",
                            &rc);
  if (rc != 0) FAIL("platformctl init --replicas 3: " << out);
  client = Connect(AllNodes(), "cluster-test");
  for (int i = 0; i < site_count; ++i) {
    sites.push_back(testsupport::NewUuid());
    testsupport::AddWebsite(stack.Env("UMAMI_DATABASE_URL"), sites.back());
  }
}

ClusterFixture::~ClusterFixture() {
  // The services first: their exits must not wait on a stack that is going away.
  replayer.proc.reset();
  writer.proc.reset();
}

std::vector<int> ClusterFixture::AllNodes() const {
  std::vector<int> nodes;
  for (int j = 1; j <= stack.nats_nodes(); ++j) nodes.push_back(j);
  return nodes;
}

std::string ClusterFixture::Urls(const std::vector<int>& nodes) const {
  std::string out;
  for (int j : nodes) out += (out.empty() ? "" : ",") + stack.NatsUrl(j);
  return out;
}

std::unique_ptr<common::NatsClient> ClusterFixture::Connect(const std::vector<int>& nodes,
                                                            const std::string& name) {
  common::CommonConfig c;
  for (int j : nodes) c.nats_urls.push_back(stack.NatsUrl(j));
  common::NatsClient::Options o;
  o.client_name = name;
  o.request_timeout_ms = 2000;  // a publish into an election is retried, not waited out
  auto conn = common::NatsClient::Connect(c, o);
  if (!conn) FAIL("connect to NATS: " << conn.error().message);
  return std::move(*conn);
}

namespace {

void StartService(Service& s, const std::string& binary, std::map<std::string, std::string> env,
                  const std::string& log) {
  if (s.port == 0) s.port = testsupport::FreePortRange(1);
  s.log = log;
  env["METRICS_LISTEN"] = "127.0.0.1:" + std::to_string(s.port);
  env.emplace("LOG_LEVEL", "info");
  s.proc = std::make_unique<testsupport::ChildProcess>(std::vector<std::string>{binary}, env, log);
  bool up = testsupport::WaitFor([&] { return !testsupport::Scrape(s.port).empty(); }, 20'000);
  if (!up) FAIL(binary << " did not serve /metrics: " << Capture("tail -n 50 " + log));
}

}  // namespace

void ClusterFixture::StartReplayer(const std::string& nats_url,
                                   const std::map<std::string, std::string>& extra) {
  std::map<std::string, std::string> env = {
      {"NATS_URL", nats_url},
      {"UMAMI_URLS", stack.Env("UMAMI_URLS")},
      {"INSTANCE_NAME", "cluster-test"},
  };
  for (const auto& [k, v] : extra) env[k] = v;
  // Two instances (leadership tests) differ by INSTANCE_NAME and keep their own logs.
  StartService(replayer, testsupport::BinaryDir() + "/replayer/replayer", env,
               stack.dir() + "/" + env["INSTANCE_NAME"] + "-replayer.log");
}

void ClusterFixture::StartWriter(const std::string& nats_url,
                                 const std::map<std::string, std::string>& extra) {
  std::map<std::string, std::string> env = {
      {"NATS_URL", nats_url},
      {"DATABASE_URL", stack.Env("DATABASE_URL")},
      {"INSTANCE_NAME", "cluster-test"},
  };
  for (const auto& [k, v] : extra) env[k] = v;
  StartService(writer, testsupport::BinaryDir() + "/metricswriter/metricswriter", env,
               stack.dir() + "/" + env["INSTANCE_NAME"] + "-metricswriter.log");
}

platformctl::backlog::StreamReading ClusterFixture::Read(const std::string& stream) {
  auto deadline = Clock::now() + std::chrono::seconds(30);
  while (true) {
    auto r = platformctl::nats_admin::ReadStream(*client, stream);
    if (r) return *r;
    if (Clock::now() >= deadline) FAIL("read " << stream << ": " << r.error().message);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

bool ClusterFixture::WaitDrained(const std::string& stream, int timeout_ms) {
  // Drained, and nothing left behind: these tests run on supported servers, which remove what
  // was acked, so a message left is a failure here (tests/support/queue_judge.h).
  auto done = [](const platformctl::backlog::StreamReading& r) {
    return testsupport::judge::Drained(r) && testsupport::judge::LeftBehind(r) == 0;
  };
  if (testsupport::WaitFor([&] { return done(Read(stream)); }, timeout_ms)) return true;
  auto r = Read(stream);
  std::string state = testsupport::judge::Describe(r);
  auto ago = [&](int64_t ns) {
    return ns <= 0 ? std::string("never")
                   : std::to_string((r.read_at_ns - ns) / 1'000'000'000) + " s ago";
  };
  // Enough to tell a consumer nobody pulls from (no waiting pulls, nothing delivered lately)
  // from one whose deliveries are never acked.
  for (const auto& c : r.consumers) {
    state += "; consumer " + c.name + " redelivered " + std::to_string(c.redelivered) +
             ", waiting pulls " + std::to_string(c.waiting_pulls) + ", last delivery " +
             ago(c.last_delivered_ns) + ", last ack " + ago(c.last_acked_ns);
  }
  WARN("not drained with nothing left behind: " << state << "\n" << ServiceState() << Logs());
  return false;
}

std::string ClusterFixture::ServiceState() {
  std::string out;
  auto add = [&](const Service& s, const char* name, std::initializer_list<const char*> metrics) {
    if (!s.proc) return;
    std::string text = testsupport::Scrape(s.port);
    out += std::string(name) + (s.Running() ? " (running):" : " (exited):");
    for (const char* m : metrics) {
      out += " " + std::string(m) + "=" +
             std::to_string(static_cast<int64_t>(testsupport::MetricSum(text, m, "")));
    }
    out += "\n";
  };
  add(replayer, "replayer",
      {"replayer_leader", "replayer_nats_connected", "replayer_held_messages",
       "replayer_sends_in_flight", "replayer_messages_fetched_total",
       "replayer_events_stored_total", "replayer_duplicates_skipped_total",
       "replayer_umami_process_up"});
  add(writer, "metricswriter", {"metricswriter_leader", "metricswriter_batches_stored_total"});
  out += "routes: " + testsupport::RouteMap(stack) + "\nleaders:";
  for (const testsupport::RaftAsset& a :
       {testsupport::RaftAsset{"WEB_EVENTS", ""}, testsupport::RaftAsset{"WEB_EVENTS", "replayer"},
        testsupport::RaftAsset{"KV_locks", ""}, testsupport::RaftAsset{"KV_replayer_stored", ""},
        testsupport::RaftAsset{"KV_visit_state", ""}}) {
    out += " " + a.Name() + "=nats-" + std::to_string(testsupport::LeaderOf(*client, a));
  }
  return out + "\n";
}

bool ClusterFixture::WaitSettled(int timeout_ms) {
  int64_t last = -1;
  auto still_since = Clock::now();
  bool settled = testsupport::WaitFor(
      [&] {
        std::string text = testsupport::Scrape(replayer.port);
        bool idle = testsupport::MetricSum(text, "replayer_held_messages") == 0 &&
                    testsupport::MetricSum(text, "replayer_sends_in_flight") == 0;
        int64_t now = StoredEvents();
        if (now != last || !idle) {
          last = now;
          still_since = Clock::now();
        }
        return Clock::now() - still_since >= std::chrono::seconds(3);
      },
      timeout_ms);
  if (!settled) WARN("not settled: Umami holds " << last << " events\n" << Logs());
  return settled;
}

int64_t ClusterFixture::StoredEvents(const std::string& id_prefix) {
  return Stores().StoredEvents(id_prefix);
}

std::vector<std::string> ClusterFixture::MissingEvents(const std::vector<std::string>& ids) {
  return Stores().MissingEvents(ids);
}

int64_t ClusterFixture::DuplicateEvents() { return Stores().DuplicateEvents(); }

int64_t ClusterFixture::StoredBatches() { return Stores().StoredBatches(); }

int64_t ClusterFixture::StoredPoints() { return Stores().StoredPoints(); }

std::vector<std::string> ClusterFixture::MissingBatches(const std::vector<std::string>& ids) {
  return Stores().MissingBatches(ids);
}

testsupport::Ledger ClusterFixture::Stores() const {
  return testsupport::Ledger(stack.Env("UMAMI_DATABASE_URL"), stack.Env("DATABASE_URL"));
}

std::string ClusterFixture::Logs() const {
  std::string out;
  for (const auto* s : {&replayer, &writer}) {
    if (s->log.empty()) continue;
    out += "---- " + s->log + " (lines that differ only in numbers collapsed)\n" +
           testsupport::CollapsedTail(s->log, 40);
  }
  for (int j = 1; j <= stack.nats_nodes(); ++j) {
    std::string log = stack.dir() + "/" + stack.NatsNode(j) + ".log";
    out += "---- " + log + "\n" + Capture("grep -v '^$' " + log + " | tail -n 15");
  }
  return out;
}

Load::Load(common::NatsClient& client, std::vector<std::string> sites, Plan plan)
    : client_(client), sites_(std::move(sites)), plan_(std::move(plan)) {
  thread_ = std::thread([this] { Run(); });
}

Load::~Load() { Join(); }

void Load::Join() {
  if (thread_.joinable()) thread_.join();
}

void Load::Run() {
  constexpr int kVisitors = 100;
  constexpr int kPublishTimeoutMs = 60'000;
  const int total = plan_.events + plan_.batches;
  const auto start = Clock::now();
  int events = 0;
  int batches = 0;
  for (int k = 0; k < total; ++k) {
    // Even pacing; the two kinds interleaved in proportion.
    auto due = start + std::chrono::microseconds(
                           static_cast<int64_t>(plan_.seconds * 1e6 * k / std::max(1, total)));
    std::this_thread::sleep_until(due);
    bool event = false;
    if (events >= plan_.events) {
      event = false;
    } else if (batches >= plan_.batches) {
      event = true;
    } else {
      event = int64_t{events} * plan_.batches <= int64_t{batches} * plan_.events;
    }
    common::OutMessage m;
    if (event) {
      testsupport::TestEvent e;
      e.visitor = events % kVisitors;
      e.site = sites_[static_cast<size_t>(e.visitor) % sites_.size()];
      e.seq = events / kVisitors;
      e.id = plan_.prefix + "-" + std::to_string(events);
      e.url = "/" + e.id;
      m = testsupport::EventMessage(e);
      event_ids_.push_back(e.id);
      ++events;
    } else {
      m.subject = "api.metrics.t1";
      m.data = mwtest::JsonBatch(plan_.points, mwtest::NowNs(), batches);
      m.msg_id = plan_.prefix + "-b" + std::to_string(batches);
      m.headers.emplace_back("Content-Type", "application/json");
      batch_ids_.push_back(m.msg_id);
      ++batches;
    }
    auto t0 = Clock::now();
    int tries = 0;
    auto ack = testsupport::PublishUntilAcked(client_, m, kPublishTimeoutMs, &tries);
    auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
    longest_ms_ = std::max<int64_t>(longest_ms_, took);
    if (tries > 1) ++retried_;
    if (!ack) {
      failures_.push_back(m.msg_id + ": " + ack.error().message);
      unacknowledged_ids_.insert(m.msg_id);
    }
    published_.fetch_add(1);
  }
}

}  // namespace cluster_test
