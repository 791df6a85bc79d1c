// platformctl init: provision the streams and buckets of docs/contract.md §2, idempotently.
//
// Single-threaded: called from platformctl's main thread.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "common/config.h"
#include "common/nats_client.h"
#include "common/topology.h"

namespace platformctl {

struct InitLine {
  std::string name;  // stream name, or "KV <bucket>"
  common::topology::StreamPlan plan;
  std::string error;   // set when applying the plan failed
  int error_code = 0;  // JetStream's err_code of that failure, when it had one
};

struct InitReport {
  int64_t max_payload = 0;          // of the server init talked to (its INFO)
  std::string server;               // that server's URL
  std::string server_version;       // its nats-server version (its INFO), e.g. "2.15.1"
  int64_t work_queue_max_size = 0;  // the work-queue streams' max_msg_size
  int64_t reserved_bytes = 0;       // the storage limits summed, per replica
  int replicas = 1;
  std::string error;  // init could not start (an unsupported server, no room in the max payload)
  std::vector<InitLine> lines;
  bool changed() const;
  bool failed() const;  // a conflict or an error
};

// Refuses a server below the supported range (common/server_version.h; report.error, nothing
// read or changed), then reads the server's max payload and each stream, plans, applies (unless
// dry_run) and reports. A
// conflicting stream is reported and left as it is. The work-queue streams get a max_msg_size
// below the max payload by dead_letter::kHeaderRoom (see topology::Desired).
InitReport Init(common::NatsClient& client, const common::TopologyConfig& config, bool dry_run);

void PrintInit(const InitReport& report, bool dry_run, std::ostream& out);

}  // namespace platformctl
