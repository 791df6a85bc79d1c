#include "tests/replayer/fixture.h"

#include <nats/nats.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <csignal>
#include <sstream>

#include "common/dead_letter.h"
#include "platformctl/nats_admin.h"
#include "tests/support/queue_judge.h"
#include "tests/support/wait.h"

namespace replayer_test {

using testsupport::Capture;

Fixture::Fixture(int umami_processes, int site_count)
    : stack(umami_processes > 0 ? std::vector<std::string>{"nats", "pg", "umami"}
                                : std::vector<std::string>{"nats"},
            std::max(1, umami_processes)) {
  int rc = -1;
  std::string out = Capture("NATS_URL=" + stack.Env("NATS_URL") + " " + testsupport::BinaryDir() +
                                "/platformctl/platformctl init 2>&1",
                            &rc);
  if (rc != 0) FAIL("platformctl init: " << out);
  common::CommonConfig c;
  c.nats_urls = {stack.Env("NATS_URL")};
  auto conn = common::NatsClient::Connect(c, {});
  if (!conn) FAIL(conn.error().message);
  client = std::move(*conn);
  for (int i = 0; i < site_count; ++i) {
    sites.push_back(testsupport::NewUuid());
    if (umami_processes > 0) testsupport::AddWebsite(UmamiDb(), sites.back());
  }
  log_path = stack.dir() + "/replayer.log";
}

Fixture::~Fixture() {
  if (replayer) replayer.reset();
  if (std::getenv("SHOW_REPLAYER_LOG") != nullptr) {
    std::fprintf(stderr, "%s\n", Capture("tail -n 200 " + log_path).c_str());
  }
}

void Fixture::StartReplayer(const std::map<std::string, std::string>& extra_env) {
  if (metrics_port == 0) metrics_port = testsupport::FreePortRange(1);
  std::map<std::string, std::string> env = {
      {"NATS_URL", stack.Env("NATS_URL")},
      {"UMAMI_URLS", stack.Env("UMAMI_URLS")},
      {"METRICS_LISTEN", "127.0.0.1:" + std::to_string(metrics_port)},
      // debug: every health check's result and duration is a line, so a test that does not
      // drain shows whether the checks went on and what Umami answered them.
      {"LOG_LEVEL", "debug"},
  };
  for (const auto& [k, v] : extra_env) env[k] = v;
  replayer = std::make_unique<testsupport::ChildProcess>(
      std::vector<std::string>{testsupport::BinaryDir() + "/replayer/replayer"}, env, log_path);
  bool up = testsupport::WaitFor(
      [&] { return Metrics().find("replayer_held_messages") != std::string::npos; }, 15000);
  if (!up) FAIL("replayer did not serve /metrics: " << Capture("tail -n 50 " + log_path));
}

void Fixture::KillReplayer() {
  if (!replayer) return;
  replayer->Signal(SIGKILL);
  replayer->Wait(5000);
  replayer.reset();
}

int Fixture::StopReplayer(int timeout_ms) {
  if (!replayer) return -1;
  replayer->Signal(SIGTERM);
  int rc = replayer->Wait(timeout_ms);
  replayer.reset();
  return rc;
}

platformctl::backlog::StreamReading Fixture::Read(const std::string& stream) {
  auto r = platformctl::nats_admin::ReadStream(*client, stream);
  if (!r) FAIL(r.error().message);
  return *r;
}

bool Fixture::WaitDrained(int stall_ms) {
  // Drained, and nothing left behind: these tests expect the stream empty (a supported server
  // removes what was acked), so a message left is a failure here (tests/support/queue_judge.h).
  // Progress is what the work queue removed (an ack removes one): what it ever stored less what
  // it holds, which publishes meanwhile do not move.
  platformctl::backlog::StreamReading r;
  const std::string why = testsupport::WaitProgressing(
      [&] {
        r = Read("WEB_EVENTS");
        return testsupport::judge::Drained(r) && testsupport::judge::LeftBehind(r) == 0;
      },
      [&] { return static_cast<int64_t>(r.last_seq - std::min(r.messages, r.last_seq)); },
      "WEB_EVENTS drained with nothing left behind", stall_ms, kDrainCapMs);
  const bool drained = why.empty();
  if (!drained) {
    WARN(why << ": " << testsupport::judge::Describe(Read("WEB_EVENTS")) << "\nreplayer metrics:\n"
             << Capture("curl -s --max-time 2 http://127.0.0.1:" + std::to_string(metrics_port) +
                        "/metrics | grep -v '^#' | grep -v _bucket")
             << "\nreplayer log (no per-send or per-check lines):\n"
             << Capture("grep -v 'moved to the dlq\\|health check of\\| debug ' " + log_path +
                        " | tail -n 40")
             << "\nthe last health checks:\n"
             << Capture("grep 'health check of' " + log_path + " | tail -n 12")
             << "\nUmami asked directly, now (not through the replayer):\n"
             << DirectUmamiCheck() << "\nUmami's log:\n"
             << Capture("tail -n 30 " + stack.dir() + "/umami-*.log"));
  }
  return drained;
}

std::string Fixture::DirectUmamiCheck() {
  // Whether Umami itself answers, so a failure says which side was stuck: the heartbeat needs no
  // database; a send (of a test site, a fresh visitor) does.
  std::string out;
  std::string urls = stack.Env("UMAMI_URLS");
  std::istringstream in(urls);
  std::string url;
  while (std::getline(in, url, ',')) {
    const std::string body = "{\"type\":\"event\",\"payload\":{\"website\":\"" + sites.front() +
                             "\",\"hostname\":\"example.com\",\"url\":\"/diagnostic\"," +
                             "\"language\":\"en-US\",\"screen\":\"1920x1080\"}}";
    out += url + ": heartbeat " +
           Capture("curl -s -o /dev/null -m 10 -w '%{http_code} in %{time_total} s' " + url +
                   "/api/heartbeat") +
           "; a send " +
           Capture(std::string("curl -s -o /dev/null -m 30 -w '%{http_code} in %{time_total} s' ") +
                   "-X POST -H 'Content-Type: application/json' -H 'User-Agent: Mozilla/5.0 " +
                   "(X11; Linux x86_64) diagnostic' -d '" + body + "' " + url + "/api/send") +
           " (000: no answer)\n";
  }
  return out;
}

std::vector<std::string> Fixture::DlqReasons() {
  std::vector<std::string> out;
  auto r = Read("WEB_DLQ");
  for (uint64_t seq = r.first_seq; r.messages > 0 && seq <= r.last_seq; ++seq) {
    natsMsg* msg = nullptr;
    if (js_GetMsg(&msg, client->js(), "WEB_DLQ", seq, nullptr, nullptr) != NATS_OK) continue;
    const char* reason = nullptr;
    natsMsgHeader_Get(msg, common::dead_letter::kReason, &reason);
    out.push_back(reason ? reason : "");
    natsMsg_Destroy(msg);
  }
  return out;
}

std::string Fixture::Metrics() {
  return Capture("curl -s --max-time 2 http://127.0.0.1:" + std::to_string(metrics_port) +
                 "/metrics");
}

double Fixture::Metric(const std::string& sample) {
  std::istringstream in(Metrics());
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(sample + " ", 0) == 0) return std::stod(line.substr(sample.size() + 1));
  }
  return 0;
}

int64_t Fixture::StoredEvents(const std::string& where) {
  return testsupport::QueryInt(UmamiDb(), "SELECT count(*) FROM website_event WHERE " + where);
}

void Fixture::Publish(const testsupport::TestEvent& e) {
  auto st = testsupport::PublishEvent(*client, e);
  if (!st) FAIL(st.error().message);
}

}  // namespace replayer_test
