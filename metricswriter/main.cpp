// metricswriter: wires the environment to the Writer (see writer.h and README.md).
#include <spdlog/spdlog.h>

#include <cstdio>

#include "common/config.h"
#include "common/http_server.h"
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
  mw::Writer writer(options, **nats, registry, stop);
  core::MetricsServer server(registry, [&writer] { return writer.health(); });
  if (auto s = server.Start(common.metrics_listen); !s.ok()) {
    spdlog::critical("{}", s.error().message);
    return 1;
  }
  spdlog::info("metricswriter serving /metrics and /healthz on {}", common.metrics_listen);
  auto status = writer.Run();
  server.Stop();
  if (!status.ok()) {
    spdlog::critical("{}", status.error().message);
    return 1;
  }
  return 0;
}
