// The replayer service: configuration, NATS, /metrics and the engine wired together.
// Called from main() on the main thread with its arguments (--help, --version) and the build's
// version; returns the process exit code.
#pragma once

#include <string>

#include "common/config.h"
#include "replayer/engine.h"
#include "replayer/http_pool.h"

namespace replayer {

inline constexpr const char* kDefaultMetricsListen = "0.0.0.0:9464";

// Everything the replayer reads from the environment. The one reader of its configuration:
// --help lists what it reads (with the defaults), the service runs with what it returns, and
// tests/integration/config_agree.py holds README's table to the same list.
struct ServiceConfig {
  common::CommonConfig common;
  ReplayerConfig replayer;
  HttpPoolOptions http;  // read again by the engine's HttpPool; checked here at start
};
ServiceConfig ReadServiceConfig(common::ConfigReader& r);

int RunService(int argc, char** argv, const std::string& version);

}  // namespace replayer
