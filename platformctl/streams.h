// platformctl streams: backlog, ages, pending vs unacknowledged, rates and time-to-clear.
//
// Rates come from two readings of JetStream taken `interval` apart by this command (not from
// the services' counters), so they exist even when no service runs. Rendering is pure and
// separate from collection so tests can render readings they built.
// Single-threaded: called from platformctl's main thread.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "common/nats_client.h"
#include "common/result.h"
#include "common/stop_signal.h"
#include "platformctl/backlog.h"
#include "platformctl/nats_admin_request.h"

namespace platformctl {

struct StreamsOptions {
  std::vector<std::string> only;  // stream names; empty = every stream on the server
  common::Millis interval{2000};  // 0 = one reading, no rates
};

common::Result<std::vector<platformctl::backlog::StreamView>> CollectStreams(
    common::NatsClient& client, const StreamsOptions& options);

// One reading of the named streams (empty = every stream on the server), ours first. Also used
// by the exporter (exporter.h), with no patience: one try per request, so a scrape is answered.
common::Result<std::vector<platformctl::backlog::StreamReading>> ReadStreams(
    common::NatsClient& client, const std::vector<std::string>& only,
    common::Millis patience = platformctl::nats_admin::kClusterPatience);

// `streams --watch`: a reading every `every`, each printed with the rates since the one before
// (text: a table per reading; json: one object per line), until `stop`. A reading that fails is
// said on `err` and tried again at the next one. Returns 0, or 3 when the first reading fails.
int WatchStreams(common::NatsClient& client, const StreamsOptions& options, common::Millis every,
                 common::StopFlag& stop, bool json, std::ostream& out, std::ostream& err);

void PrintStreamsText(const std::vector<platformctl::backlog::StreamView>& views,
                      std::ostream& out);
void PrintStreamsJson(const std::vector<platformctl::backlog::StreamView>& views,
                      std::ostream& out);

}  // namespace platformctl
