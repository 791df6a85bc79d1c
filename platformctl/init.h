// platformctl init: provision the streams and buckets of SPEC §2, idempotently.
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
  core::topology::StreamPlan plan;
  std::string error;  // set when applying the plan failed
};

struct InitReport {
  std::vector<InitLine> lines;
  bool changed() const;
  bool failed() const;  // a conflict or an error
};

// Reads each stream, plans, applies (unless dry_run) and reports. A conflicting stream is
// reported and left as it is.
InitReport Init(core::NatsClient& client, const core::TopologyConfig& config, bool dry_run);

void PrintInit(const InitReport& report, bool dry_run, std::ostream& out);

}  // namespace platformctl
