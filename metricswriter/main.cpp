// metricswriter: wires the environment to the Writer (see writer.h and README.md).
#include <spdlog/spdlog.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <utility>

#include "common/config.h"
#include "common/http_server.h"
#include "common/leader_terms.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/nats_client.h"
#include "common/service_cli.h"
#include "common/stop_signal.h"
#include "common/version.h"
#include "metricswriter/config.h"
#include "metricswriter/writer.h"
#include "metricswriter/writer_metrics.h"

namespace {

common::ServiceUsage Usage() {
  common::ServiceUsage u;
  u.name = "metricswriter";
  u.description =
      "metricswriter: drains the API_METRICS stream (OTLP metric batches) into PostgreSQL, each "
      "batch exactly once or dead-lettered to API_DLQ with its reason; serves /metrics and "
      "/healthz.";
  u.read_config = [](common::ConfigReader& r) { mw::ReadServiceConfig(r); };
  u.exit_codes =
      "Exit codes: 0 stopped by SIGTERM or SIGINT; 1 the writer stopped on an error it cannot "
      "retry (e.g. a failed migration); 2 usage or configuration error (also a METRICS_LISTEN "
      "that cannot be bound, a TLS file that cannot be loaded).";
  return u;
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything holds a secret: no core file may carry one (common/service_cli.h).
  if (!common::DisableCoreDumps()) std::perror("metricswriter: cannot turn core dumps off");
  if (auto rc = common::HandleServiceArguments(argc, argv, Usage(), common::Version())) return *rc;
  common::StopSignal stop;  // first: blocks SIGTERM/SIGINT before any other thread exists
  common::NatsLibraryGuard nats_library;
  common::CommonConfig common;
  mw::WriterOptions options;
  try {
    auto reader = common::ConfigReader::FromProcess();
    mw::ServiceConfig all = mw::ReadServiceConfig(reader);
    common = std::move(all.common);
    options = std::move(all.writer);
    reader.Finish();
  } catch (const common::ConfigError& e) {
    std::fprintf(stderr, "metricswriter: %s\n", e.what());
    return 2;
  }
  common::SetUpLogging("metricswriter", common.log_level, common.log_format);

  common::metrics::Registry registry;
  // Registered now, not when this instance first leads: every series is there from the start,
  // at 0 (a follower's too); each leadership term's Writer takes the same families.
  const mw::WriterMetrics at_start(registry);
  common::LeaseKeeper::RegisterMetrics(registry, "metricswriter");
  common::metrics::AddProcessMetrics(registry);
  // /healthz answers from the start, 503 until NATS is reached. The slot is declared before
  // the server, so the server (and its health callback) goes first.
  common::ConnectionSlot connected;
  // The writer of the current leadership term, for /healthz; null while following.
  std::mutex writer_mu;
  mw::Writer* writer = nullptr;
  common::MetricsServer server(registry, [&] {
    std::lock_guard lock(writer_mu);
    if (writer != nullptr) return writer->health();
    common::Health h;
    h.ok = connected.Connected();
    h.detail = h.ok ? "follower: waiting for the metricswriter lease\n" : "nats: not connected\n";
    return h;
  });
  if (auto s = server.Start(common.metrics_listen); !s.ok()) {
    spdlog::critical("{}", s.error().message);
    return 2;
  }
  spdlog::info("metricswriter {} serving /metrics and /healthz on {}", common::Version(),
               common.metrics_listen);

  common::NatsClient::Options nats_options;
  nats_options.client_name = "metricswriter@" + common.instance;
  options.instance = common.instance;
  nats_options.retry_until_stopped = &stop;
  // Only the holder of the `metricswriter` lease consumes. A term ends on SIGTERM or the moment
  // the lease is lost: the writer finishes the transaction under way, releases the rest and
  // returns.
  auto end = common::RunLeaderTerms(
      common, nats_options, stop, connected, registry, "metricswriter",
      [&](common::NatsClient& nats, common::LeaseKeeper&, common::StopFlag& term) {
        mw::Writer w(options, nats, registry, term);
        {
          std::lock_guard lock(writer_mu);
          writer = &w;
        }
        common::Status status = w.Run();
        std::lock_guard lock(writer_mu);
        writer = nullptr;
        return status;
      });
  if (end.kind == common::TermsEnd::Kind::kConnectFailed) {
    spdlog::critical("cannot connect to NATS: {}", end.error.message);  // a TLS file
    return 2;
  }
  server.Stop();
  if (end.kind == common::TermsEnd::Kind::kTermFailed) {
    spdlog::critical("{}", end.error.message);
    return 1;
  }
  return 0;
}
