// metricswriter: wires the environment to the Writer (see writer.h and README.md).
#include <spdlog/spdlog.h>

#include <cstdio>
#include <mutex>

#include "common/config.h"
#include "common/http_server.h"
#include "common/lease_keeper.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/nats_client.h"
#include "common/stop_signal.h"
#include "metricswriter/config.h"
#include "metricswriter/writer.h"

int main() {
  core::StopSignal stop;  // first: blocks SIGTERM/SIGINT before any other thread exists
  core::NatsLibraryGuard nats_library;
  core::CommonConfig common;
  mw::WriterOptions options;
  try {
    auto reader = core::ConfigReader::FromProcess();
    common = core::ReadCommonConfig(reader, mw::kDefaultMetricsListen);
    options = mw::ReadWriterOptions(reader);
    reader.Finish();
  } catch (const core::ConfigError& e) {
    std::fprintf(stderr, "metricswriter: %s\n", e.what());
    return 2;
  }
  core::SetUpLogging("metricswriter", common.log_level, common.log_format);

  core::NatsClient::Options nats_options;
  nats_options.client_name = "metricswriter@" + common.instance;
  nats_options.retry_first_connect = true;
  auto nats = core::NatsClient::Connect(common, nats_options);
  if (!nats.ok()) {
    spdlog::critical("cannot connect to NATS: {}", nats.error().message);
    return 1;
  }
  core::metrics::Registry registry;
  // The writer of the current leadership term, for /healthz; null while following.
  std::mutex writer_mu;
  mw::Writer* writer = nullptr;
  core::MetricsServer server(registry, [&] {
    std::lock_guard lock(writer_mu);
    if (writer != nullptr) return writer->health();
    core::Health h;
    h.ok = (*nats)->Connected();
    h.detail = h.ok ? "follower: waiting for the metricswriter lease\n" : "nats: not connected\n";
    return h;
  });
  if (auto s = server.Start(common.metrics_listen); !s.ok()) {
    spdlog::critical("{}", s.error().message);
    return 1;
  }
  spdlog::info("metricswriter serving /metrics and /healthz on {}", common.metrics_listen);
  // Only the holder of the `metricswriter` lease consumes. A term ends on SIGTERM or the moment
  // the lease is lost: the writer finishes the transaction under way, releases the rest and
  // returns, and this instance waits for the lease again.
  core::LeaseKeeper lease(**nats, "metricswriter", core::ThisProcessHolder(common.instance),
                          registry);
  lease.Start();
  core::Status status = core::Status::Ok();
  while (status.ok() && lease.WaitForLeadership(stop)) {
    core::StopFlag term(&stop);
    lease.BindTerm(&term);
    {
      mw::Writer w(options, **nats, registry, term);
      {
        std::lock_guard lock(writer_mu);
        writer = &w;
      }
      status = w.Run();
      std::lock_guard lock(writer_mu);
      writer = nullptr;
    }
    lease.BindTerm(nullptr);
    if (status.ok() && !stop.stopping()) spdlog::info("waiting for the metricswriter lease again");
  }
  server.Stop();
  if (!status.ok()) {
    spdlog::critical("{}", status.error().message);
    return 1;
  }
  return 0;
}
