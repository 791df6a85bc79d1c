#include "platformctl/app.h"

#include "common/stop_signal.h"

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>

#include "common/config.h"
#include "common/log.h"
#include "common/nats_client.h"
#include "common/service_cli.h"
#include "common/timefmt.h"
#include "platformctl/dlq/cli.h"
#include "platformctl/exporter.h"
#include "platformctl/init.h"
#include "platformctl/leaders.h"
#include "platformctl/migrate.h"
#include "platformctl/queue_move.h"
#include "platformctl/streams.h"

namespace platformctl {
namespace {

constexpr const char* kExitCodes =
    "Exit codes: 0 done; 1 partly done (a conflict, a skipped or failed message); "
    "2 usage or configuration error; 3 cannot reach NATS; 4 dlq purge without --yes (it only "
    "said what it would erase); 5 cannot reach the database (migrate).";

struct Shared {
  common::CommonConfig common;
  common::TopologyConfig topology;
  std::string database_url;  // migrate
};

// Everything platformctl reads from the environment: what --help lists and what it runs with
// (tests/integration/config_agree.py holds README's table to the same list). No METRICS_LISTEN:
// `streams --serve` takes its address as an argument.
void ReadEnvironment(common::ConfigReader& reader, Shared& shared) {
  shared.common = common::ReadCommonConfig(reader, "");
  shared.topology = common::ReadTopologyConfig(reader);
  shared.database_url = reader.Optional("DATABASE_URL").value_or("");
}

// Configuration errors are usage errors: print every bad variable and exit 2.
bool ReadConfig(Shared& shared, int replicas_override) {
  auto reader = common::ConfigReader::FromProcess();
  ReadEnvironment(reader, shared);
  if (replicas_override > 0) shared.topology.replicas = replicas_override;
  try {
    reader.Finish();
  } catch (const common::ConfigError& e) {
    std::cerr << "platformctl: " << e.what() << "\n";
    return false;
  }
  common::SetUpLogging("platformctl",
                       shared.common.log_level == "info" ? "warn" : shared.common.log_level,
                       shared.common.log_format);
  return true;
}

// request_timeout_ms: one try of a request; what a cluster retries is tried again within
// nats_admin::kClusterPatience.
common::Result<std::unique_ptr<common::NatsClient>> Connect(const Shared& shared,
                                                            int64_t request_timeout_ms = 5000) {
  common::NatsClient::Options o;
  o.client_name = "platformctl";
  o.request_timeout_ms = request_timeout_ms;
  return common::NatsClient::Connect(shared.common, o);
}

// A TLS file nats.c cannot load is a configuration error; anything else: NATS not reachable.
int ConnectFailed(const common::Error& e) {
  std::cerr << "platformctl: " << e.message << "\n";
  return e.kind == common::ErrorKind::kInvalid ? kExitUsage : kExitNoNats;
}

}  // namespace

int Main(int argc, char** argv, const std::string& version) {
  common::NatsLibraryGuard nats_guard;
  CLI::App app{"platformctl: provisioning, stream backlog and DLQ tools for the core workers"};
  app.set_version_flag("--version", "platformctl " + version);
  app.footer(common::VariablesHelp([](common::ConfigReader& r) {
               Shared ignored;
               ReadEnvironment(r, ignored);
             }) +
             kExitCodes);
  app.require_subcommand(1);

  int replicas = 0;
  bool dry_run = false;
  auto* init = app.add_subcommand(
      "init",
      "Create or update the streams, DLQs and KV buckets (idempotent; a conflicting "
      "stream is reported, never recreated)");
  init->add_option("--replicas", replicas, "Replica count (overrides STREAM_REPLICAS)")
      ->check(CLI::Range(1, 5));
  init->add_flag("--dry-run", dry_run, "Say what would change, change nothing");

  StreamsOptions streams_options;
  bool json = false;
  std::string interval = "2s";
  auto* streams = app.add_subcommand(
      "streams",
      "Per stream: messages held, bytes, oldest message and its age, in/out rates and "
      "time-to-clear; per consumer: pending (not delivered) and unacked (delivered, "
      "not acked) kept apart, redeliveries, ack activity");
  streams->add_option("--stream", streams_options.only, "Only these streams (repeatable)");
  streams->add_option("--interval", interval,
                      "Time between the two readings the rates come from; 0 = one reading, no "
                      "rates (default 2s)");
  streams->add_flag("--json", json, "One JSON object with a streams array");
  std::vector<std::string> watch;
  auto* watch_opt = streams->add_option(
      "--watch", watch,
      "Read again every SECONDS (default 5) until Ctrl-C, each reading printed with the rates "
      "in and out and the time to clear since the one before (--json: one object per line)");
  watch_opt->expected(0, 1);
  bool dlq_reasons = false;
  streams->add_flag("--dlq-reasons", dlq_reasons,
                    "With --serve: also count WEB_DLQ's and API_DLQ's messages by reason "
                    "(jetstream_dlq_messages), reading the new dead letters' headers at each "
                    "reading (its NATS user needs a consumer on the DLQs)");
  std::string serve;
  streams->add_option("--serve", serve,
                      "Run as a Prometheus exporter on HOST:PORT (/metrics, /healthz) until "
                      "SIGTERM; --interval is then the time between readings (default 10s; 0 = "
                      "read on every scrape)");

  bool leaders_json = false;
  auto* leaders = app.add_subcommand(
      "leaders",
      "Which instance leads the replayer and the metricswriter (KV bucket locks), since when");
  leaders->add_flag("--json", leaders_json, "One JSON object with a leaders array");

  DlqCommands dlq_commands(app);  // dlq list|replay|purge, erase

  std::string move_queue;
  queue::MoveRequest move;
  auto* queue_cmd = app.add_subcommand("queue", "Work queues (WEB_EVENTS, API_METRICS)");
  queue_cmd->require_subcommand(1);
  auto* queue_move = queue_cmd->add_subcommand(
      "move",
      "Move one held message out of its work queue into its DLQ, for whatever no rule of the "
      "services catches: a dead letter with the reason \"moved out of its work queue by an "
      "operator\" and who, when and why in its detail (dlq list shows it; dlq replay puts it "
      "back). Copied first, erased from the queue only once the DLQ has the copy. A service "
      "holding the message may still store it: stop it first, or check with dlq list");
  queue_move->add_option("--queue", move_queue, "web (WEB_EVENTS) or api (API_METRICS)")
      ->required();
  queue_move->add_option("--seq", move.seq, "The message's stream sequence")->required();
  queue_move->add_option("--why", move.why, "Why it is moved (one line; recorded)")->required();

  auto* migrate = app.add_subcommand(
      "migrate",
      "Apply the metrics schema migrations to DATABASE_URL under the advisory lock "
      "(as the metricswriter does at start); a second run changes nothing");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }

  Shared shared;
  if (!ReadConfig(shared, replicas)) return kExitUsage;

  if (*init) {
    auto client = Connect(shared);
    if (!client) return ConnectFailed(client.error());
    auto report = Init(**client, shared.topology, dry_run);
    PrintInit(report, dry_run, std::cout);
    return report.failed() ? kExitPartial : kExitOk;
  }
  if (*leaders) {
    // A direct get lost to a paused replica is asked again: a short try keeps that quick.
    auto client = Connect(shared, 2000);
    if (!client) return ConnectFailed(client.error());
    auto views = ReadLeaders(**client);
    if (!views) {
      std::cerr << "platformctl: " << views.error().message << "\n";
      return views.error().kind == common::ErrorKind::kRetryable ? kExitNoNats : kExitPartial;
    }
    int64_t now_ms = common::NowUnixNs() / 1'000'000;
    if (leaders_json)
      PrintLeadersJson(*views, now_ms, std::cout);
    else
      PrintLeadersText(*views, now_ms, std::cout);
    return kExitOk;
  }
  if (dlq_commands.Chosen()) return dlq_commands.Run(shared.common);
  if (*queue_move) {
    auto q = dlq::ParseQueue(move_queue);
    if (!q) {
      std::cerr << "platformctl: --queue must be web or api\n";
      return kExitUsage;
    }
    move.queue = *q;
    const char* login = std::getenv("USER");
    move.operator_ = queue::Operator(shared.common.nats_user, login != nullptr ? login : "",
                                     shared.common.instance);
    if (auto st = queue::CheckRequest(move); !st.ok()) {
      std::cerr << "platformctl: " << st.error().message << "\n";
      return kExitUsage;
    }
    auto client = Connect(shared);
    if (!client) return ConnectFailed(client.error());
    return queue::RunQueueMove(**client, move, std::cout, std::cerr);
  }
  if (*migrate) {
    if (shared.database_url.empty()) {
      std::cerr << "platformctl: DATABASE_URL is required (a libpq URL or conninfo)\n";
      return kExitUsage;
    }
    return Migrate(shared.database_url, std::cout, std::cerr);
  }
  if (*streams) {
    auto d = common::ParseDuration(interval);
    if (interval == "0") d = common::Millis(0);
    if (!d || *d > std::chrono::minutes(10)) {
      std::cerr << "platformctl: --interval '" << interval
                << "' is not a duration up to 10m (examples: 0, 500ms, 2s, 1m)\n";
      return kExitUsage;
    }
    streams_options.interval = *d;
    if (!serve.empty()) {
      ExporterOptions e{serve, streams_options.only, std::chrono::seconds(10)};
      if (streams->count("--interval") > 0) e.interval = *d;
      e.dlq_reasons = dlq_reasons;
      return ServeStreams(shared.common, e);
    }
    if (watch_opt->count() > 0) {
      double seconds = 5;
      // CLI11 2.1 gives "--watch" without a value as one empty value: the default.
      if (!watch.empty() && !watch[0].empty()) {
        char* end = nullptr;
        seconds = std::strtod(watch[0].c_str(), &end);
        if (end == watch[0].c_str() || *end != '\0' || !(seconds >= 0.5 && seconds <= 3600)) {
          std::cerr << "platformctl: --watch '" << watch[0]
                    << "' is not a number of seconds from 0.5 to 3600\n";
          return kExitUsage;
        }
      }
      common::StopSignal stop;  // before the connection's threads: they inherit the mask
      auto client = Connect(shared);
      if (!client) return ConnectFailed(client.error());
      return WatchStreams(**client, streams_options,
                          common::Millis(static_cast<int64_t>(seconds * 1000)), stop, json,
                          std::cout, std::cerr);
    }
    auto client = Connect(shared);
    if (!client) return ConnectFailed(client.error());
    auto views = CollectStreams(**client, streams_options);
    if (!views) {
      std::cerr << "platformctl: " << views.error().message << "\n";
      return views.error().kind == common::ErrorKind::kRetryable ? kExitNoNats : kExitPartial;
    }
    if (json)
      PrintStreamsJson(*views, std::cout);
    else
      PrintStreamsText(*views, std::cout);
    return kExitOk;
  }
  return kExitUsage;
}

}  // namespace platformctl
