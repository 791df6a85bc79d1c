#include "platformctl/init.h"

#include <chrono>
#include <cstdio>

#include "common/dead_letter.h"
#include "common/js_error.h"
#include "common/server_probe.h"
#include "platformctl/nats_admin.h"

namespace platformctl {

using common::topology::StreamPlan;

namespace {

// 13557039104 -> "12.63GiB"; an exact unit stays exact ("4GiB").
std::string Human(int64_t bytes) {
  const std::string exact = common::FormatSize(bytes);
  if (bytes < (int64_t{1} << 20) || exact.find("GiB") != std::string::npos) return exact;
  const bool gib = bytes >= (int64_t{1} << 30);
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f%s",
                static_cast<double>(bytes) / static_cast<double>(int64_t{1} << (gib ? 30 : 20)),
                gib ? "GiB" : "MiB");
  return buf;
}

}  // namespace

bool InitReport::changed() const {
  for (const auto& l : lines) {
    if (l.plan.action == StreamPlan::Action::kCreate ||
        l.plan.action == StreamPlan::Action::kUpdate) {
      return true;
    }
  }
  return false;
}

bool InitReport::failed() const {
  if (!error.empty()) return true;
  for (const auto& l : lines) {
    if (!l.error.empty() || l.plan.action == StreamPlan::Action::kConflict) return true;
  }
  return false;
}

InitReport Init(common::NatsClient& client, const common::TopologyConfig& config, bool dry_run) {
  InitReport report;
  report.server = client.ConnectedUrl();
  // The JetStream API an older server speaks differs from what the tests prove (docs/contract.md
  // §1): refuse before anything is created.
  auto version = common::ConnectedServerVersion(
      client, std::chrono::milliseconds(client.request_timeout_ms()));
  if (!version) {
    report.error = "cannot confirm that the server is supported: " + version.error().message +
                   "; nothing was read or changed";
    return report;
  }
  report.server_version = version->text;
  if (!common::server_version::Supported(*version)) {
    report.error =
        common::server_version::Refusal(*version, report.server) + "; nothing was read or changed";
    return report;
  }
  report.max_payload = platformctl::nats_admin::MaxPayload(client);
  report.work_queue_max_size = common::topology::WorkQueueMaxMsgSize(report.max_payload);
  if (report.work_queue_max_size <= 0) {
    report.error = "the server's max payload (" + std::to_string(report.max_payload) +
                   " bytes) leaves no room for the " +
                   std::to_string(common::dead_letter::kHeaderRoom) +
                   " bytes of dead-letter headers: raise max_payload in its configuration";
    return report;
  }
  const auto desired = common::topology::Desired(config, report.max_payload);
  report.reserved_bytes = common::topology::ReservedBytes(desired);
  report.replicas = config.replicas;
  for (const auto& want : desired) {
    InitLine line;
    line.name = want.bucket.empty() ? want.name : "KV " + want.bucket;
    auto have = platformctl::nats_admin::ReadSettings(client, want.name);
    if (!have) {
      line.error = have.error().message;
      report.lines.push_back(std::move(line));
      continue;
    }
    int64_t held_bytes = 0;
    if (*have && common::topology::LowersMaxBytes(want, **have)) {
      // A limit below what the stream holds would make JetStream delete its oldest messages.
      auto state = platformctl::nats_admin::ReadState(client, want.name);
      if (!state) {
        line.error = state.error().message;
        report.lines.push_back(std::move(line));
        continue;
      }
      held_bytes = static_cast<int64_t>(state->bytes);
    }
    line.plan = common::topology::PlanStream(want, *have, held_bytes);
    if (!dry_run) {
      common::Status s;
      if (line.plan.action == StreamPlan::Action::kCreate)
        s = platformctl::nats_admin::Create(client, want);
      if (line.plan.action == StreamPlan::Action::kUpdate)
        s = platformctl::nats_admin::Update(client, want);
      if (!s) {
        line.error = s.error().message;
        line.error_code = s.error().code;
      }
    }
    report.lines.push_back(std::move(line));
  }
  return report;
}

void PrintInit(const InitReport& report, bool dry_run, std::ostream& out) {
  if (!report.error.empty()) {
    out << "init: " << report.error << "\n";
    return;
  }
  out << "max payload " << report.max_payload << " bytes (nats-server " << report.server_version
      << " at " << report.server << "): work-queue streams take messages up to "
      << report.work_queue_max_size << " bytes, leaving " << common::dead_letter::kHeaderRoom
      << " for the headers of their dead-letter copy\n";
  const int64_t all_replicas = report.reserved_bytes * report.replicas;
  out << "storage limits reserve " << report.reserved_bytes << " bytes ("
      << Human(report.reserved_bytes) << ") per replica, " << all_replicas << " ("
      << Human(all_replicas) << ") with " << report.replicas << " replica"
      << (report.replicas == 1 ? "" : "s")
      << ": the JetStream account's max_file must be at least that\n";
  for (const auto& l : report.lines) {
    out << l.name << ": ";
    if (!l.error.empty()) {
      out << "FAILED: " << l.error;
      // 10047 "insufficient storage resources available", 10023 "insufficient resources".
      if (l.error_code == common::js_error::kStorageExceeded ||
          l.error_code == common::js_error::kInsufficientResources) {
        out << " (the account's or a server's JetStream storage is smaller than the limits "
               "above reserve)";
      }
      out << "\n";
      continue;
    }
    if (dry_run && l.plan.action == StreamPlan::Action::kCreate)
      out << "would be created";
    else if (dry_run && l.plan.action == StreamPlan::Action::kUpdate)
      out << "would be updated";
    else
      out << common::topology::ActionName(l.plan.action);
    std::string sep = l.plan.action == StreamPlan::Action::kConflict ? ", left as it is: " : ": ";
    for (size_t i = 0; i < l.plan.changes.size(); ++i) {
      out << (i == 0 ? sep : "; ") << l.plan.changes[i];
    }
    out << "\n";
  }
  if (report.failed()) {
    out << "init incomplete: fix the streams marked CONFLICT or FAILED above (a conflicting "
           "stream is never recreated automatically; it may hold messages)\n";
  } else if (!report.changed()) {
    out << "no change: every stream and bucket is as configured\n";
  }
}

}  // namespace platformctl
