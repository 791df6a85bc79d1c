#include "tests/metricswriter/harness.h"

#include <chrono>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <thread>

#include <nats/nats.h>

#include "common/nats_stream.h"
#include "common/timefmt.h"
#include "platformctl/nats_admin.h"
#include "tests/support/metrics_scrape.h"
#include "tests/support/queue_judge.h"

namespace mwtest {

using testsupport::BinaryDir;

int64_t NowNs() { return common::NowUnixNs(); }

void Sleep(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

Harness::Harness() : stack_({"nats", "pg"}) {
  std::string init = "NATS_URL=" + stack_.Env("NATS_URL") + " " + BinaryDir() +
                     "/platformctl/platformctl init >" + stack_.dir() + "/init.log 2>&1";
  if (testsupport::Run(init) != 0) throw std::runtime_error("platformctl init failed");
  common::CommonConfig c;
  c.nats_urls = {stack_.Env("NATS_URL")};
  common::NatsClient::Options o;
  o.client_name = "metricswriter-test";
  auto n = common::NatsClient::Connect(c, o);
  if (!n.ok()) throw std::runtime_error("nats: " + n.error().message);
  nats_ = std::move(*n);
}

Harness::~Harness() {
  if (std::uncaught_exceptions() == 0) return;
  for (int i : writers_) {
    std::fprintf(stderr, "--- %s (its last lines)\n%s", log_path(i).c_str(),
                 testsupport::CollapsedTail(log_path(i), 30).c_str());
  }
}

std::string Harness::log_path(int index) const {
  return stack_.dir() + "/metricswriter-" + std::to_string(index) + ".log";
}

std::unique_ptr<testsupport::ChildProcess> Harness::StartWriter(
    int index, const std::map<std::string, std::string>& extra) {
  std::map<std::string, std::string> env = {
      {"NATS_URL", stack_.Env("NATS_URL")},
      {"DATABASE_URL", stack_.Env("DATABASE_URL")},
      {"METRICS_LISTEN", "127.0.0.1:" + std::to_string(metrics_port(index))},
      // Short, so the tests prove in seconds that held batches are kept alive past it.
      {"METRICSWRITER_ACK_WAIT", "4s"},
      {"METRICSWRITER_RETRY_MAX", "1s"},
      {"METRICSWRITER_GROUP_LINGER", "20ms"},
      {"LOG_LEVEL", "info"},
  };
  for (const auto& [k, v] : extra) env[k] = v;
  writers_.insert(index);
  auto child = std::make_unique<testsupport::ChildProcess>(
      std::vector<std::string>{BinaryDir() + "/metricswriter/metricswriter"}, env, log_path(index));
  testsupport::WaitFor([&] { return !Scrape(index).empty(); }, 10'000);
  return child;
}

std::string Harness::Scrape(int index) const { return testsupport::Scrape(metrics_port(index)); }

double Harness::Metric(int index, const std::string& name, const std::string& labels) const {
  return testsupport::MetricSum(Scrape(index), name, labels);
}

int Harness::Platformctl(const std::string& args, const std::string& database_url,
                         std::string* output) const {
  std::string env = "NATS_URL=" + stack_.Env("NATS_URL");
  if (!database_url.empty()) env += " DATABASE_URL='" + database_url + "'";
  int rc = -1;
  *output = testsupport::Capture("env -u DATABASE_URL " + env + " " + BinaryDir() +
                                     "/platformctl/platformctl " + args + " 2>&1",
                                 &rc);
  return rc;
}

void Harness::Publish(const std::string& tenant, const std::string& body,
                      const std::optional<std::string>& msg_id,
                      const std::optional<std::string>& content_type) {
  common::OutMessage m;
  m.subject = "api.metrics." + tenant;
  m.data = body;
  if (msg_id) m.msg_id = *msg_id;
  if (content_type) m.headers.emplace_back("Content-Type", *content_type);
  auto r = common::PublishSync(*nats_, m);
  if (!r.ok()) throw std::runtime_error("publish: " + r.error().message);
}

std::vector<DlqMessage> Harness::ReadDlq() {
  common::ConsumerSpec spec;
  spec.stream = "API_DLQ";
  spec.durable = "test-reader-" + std::to_string(++dlq_readers_);
  spec.filter_subject = "dlq.api.*";
  auto c = common::PullConsumer::Bind(*nats_, spec);
  if (!c.ok()) throw std::runtime_error("dlq reader: " + c.error().message);
  std::vector<DlqMessage> out;
  while (true) {
    auto msgs = (*c)->Fetch(100, std::chrono::milliseconds(300));
    if (!msgs.ok() || msgs->empty()) break;
    for (auto& m : *msgs) {
      DlqMessage d;
      d.seq = m.stream_seq();
      d.subject = std::string(m.subject());
      d.reason = m.Header("Sa-Dlq-Reason").value_or("");
      d.origin_seq = m.Header("Sa-Dlq-Stream-Seq").value_or("");
      d.msg_id = m.Header("Sa-Dlq-Msg-Id").value_or("");
      d.detail = m.Header("Sa-Dlq-Detail").value_or("");
      out.push_back(d);
      (void)m.Ack();
    }
  }
  return out;
}

uint64_t Harness::StreamMessages(const std::string& stream) {
  auto r = platformctl::nats_admin::ReadStream(*nats_, stream);
  if (!r.ok()) throw std::runtime_error("stream " + stream + ": " + r.error().message);
  return r->messages;
}

bool Harness::WaitDrained(const std::string& stream, int timeout_ms, std::string* judgement) {
  std::string last;
  const bool done = testsupport::WaitFor(
      [&] {
        auto r = platformctl::nats_admin::ReadStream(*nats_, stream);
        if (!r.ok()) {
          last = "stream " + stream + ": " + r.error().message;
          return false;
        }
        last = testsupport::judge::Describe(*r);
        return testsupport::judge::Drained(*r) && testsupport::judge::LeftBehind(*r) == 0;
      },
      timeout_ms);
  if (judgement != nullptr) *judgement = last;
  return done;
}

void Harness::SetMaxMsgSize(const std::string& stream, int32_t bytes) {
  jsStreamInfo* info = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  if (js_GetStreamInfo(&info, nats_->js(), stream.c_str(), nullptr, &jerr) != NATS_OK) {
    throw std::runtime_error("stream info " + stream);
  }
  info->Config->MaxMsgSize = bytes;
  jsStreamInfo* updated = nullptr;
  natsStatus s = js_UpdateStream(&updated, nats_->js(), info->Config, nullptr, &jerr);
  jsStreamInfo_Destroy(info);
  jsStreamInfo_Destroy(updated);
  if (s != NATS_OK) throw std::runtime_error("update " + stream + ": " + natsStatus_GetText(s));
}

void Harness::DeleteStream(const std::string& stream) {
  jsErrCode jerr = static_cast<jsErrCode>(0);
  if (js_DeleteStream(nats_->js(), stream.c_str(), nullptr, &jerr) != NATS_OK) {
    throw std::runtime_error("delete " + stream);
  }
}

common::pg::PgConn& Harness::pg() {
  if (!pg_ || pg_->Broken()) {
    auto c = common::pg::PgConn::Connect(stack_.Env("DATABASE_URL"), {});
    if (!c.ok()) throw std::runtime_error("pg: " + c.error().message);
    pg_ = std::move(*c);
  }
  return *pg_;
}

int64_t Harness::Count(const std::string& sql, const std::vector<common::pg::Param>& params) {
  auto r = pg().Query(sql, params);
  if (!r.ok()) {
    // The schema may not exist yet (the writer has not started): nothing stored.
    if (common::pg::SqlStateOf(r.error()) == "42P01" ||
        common::pg::SqlStateOf(r.error()) == "3F000") {
      return 0;
    }
    pg_.reset();
    throw std::runtime_error("query: " + r.error().message);
  }
  return r->rows() == 0 || r->IsNull(0, 0) ? 0 : std::stoll(std::string(r->Get(0, 0)));
}

int64_t Harness::WaitCount(const std::string& sql, int64_t want, int timeout_ms) {
  int64_t last = -1;
  testsupport::WaitFor(
      [&] {
        try {
          last = Count(sql);
        } catch (const std::exception&) {
          last = -1;
        }
        return last == want;
      },
      timeout_ms);
  return last;
}

std::string JsonBatch(int points, int64_t time_ns, double value0) {
  std::string t = "\"" + std::to_string(time_ns) + "\"";
  std::string s =
      R"({"resourceMetrics":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"bench"}}]},"scopeMetrics":[{"scope":{"name":"gen"},"metrics":[{"name":"load","unit":"1","gauge":{"dataPoints":[)";
  for (int i = 0; i < points; ++i) {
    if (i > 0) s += ',';
    s += R"({"attributes":[{"key":"cpu","value":{"intValue":)" + std::to_string(i) +
         R"(}}],"startTimeUnixNano":)" + t + R"(,"timeUnixNano":)" + t + R"(,"asDouble":)" +
         std::to_string(value0 + i) + "}";
  }
  return s + "]}}]}]}]}";
}

}  // namespace mwtest
