// Test support for the platformctl dlq / erase tests: dead letters as the services write them
// (common/dead_letter), published straight to the DLQ streams, and platformctl runs with their
// stdout and stderr kept apart.
//
// Use from the test's main thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/nats_client.h"
#include "common/nats_stream.h"
#include "tests/support/nats_cluster.h"
#include "tests/support/test_stack.h"

namespace dlqtest {

// The marker every seeded payload carries; no platformctl output may contain it.
inline constexpr const char* kMarker = "PAYLOAD-MARKER-7f3a";

struct Seed {
  bool web = true;
  std::string key;      // site id (web) or tenant id (api)
  std::string visitor;  // web: the event's visitor key
  std::string reason;
  uint64_t origin_seq = 1;
  std::string msg_id;          // the origin's Nats-Msg-Id ("" = none)
  std::string subject_header;  // overrides Sa-Dlq-Subject (a foreign origin subject)
  std::string marker = kMarker;
  std::string website;      // web: the event's "website" field (default: key)
  std::string raw_payload;  // when set: the payload as it is (e.g. not JSON)
  // The previous system's shape (docs/contract.md §3.3): only the four Sa-Dlq-* headers of the
  // reason, origin subject, stream and sequence, the copy's own Nats-Msg-Id being the origin's
  // (msg_id).
  bool legacy = false;
};

// A web event (docs/contract.md §3.1) or, for api, an opaque body; both contain seed.marker.
std::string Payload(const Seed& seed);
// The DLQ message the replayer / metricswriter would publish for it (or, with seed.legacy, the
// one the previous system wrote).
common::OutMessage DeadLetter(const Seed& seed);
// Publishes all and waits until the DLQ stream acknowledged every one (fails the test if not).
void PublishAll(common::NatsClient& client, const std::vector<common::OutMessage>& messages);

// n web dead letters (WEB_DLQ seq order = i): site-<i % 4>, original id <tag>-<i>, a
// four-failures reason; published with PublishAll.
void SeedWeb(common::NatsClient& client, int n, const std::string& tag);

// Sequences held by a stream now (any retention), in order, with their subject and headers.
struct Held {
  uint64_t seq = 0;
  std::string subject;
  std::string msg_id;
  std::string replay_header;
  std::string data;
};
std::vector<Held> ReadAll(common::NatsClient& client, const std::string& stream);
uint64_t Count(common::NatsClient& client, const std::string& stream);

struct CtlRun {
  int rc = -1;
  std::string out;  // stdout
  std::string err;  // stderr (logs included)
};
// Runs platformctl with NATS_URL of the stack (plus `env`, "K=V ..."), stdin from /dev/null.
CtlRun Ctl(const testsupport::TestStack& stack, const std::string& args,
           const std::string& env = "");
// Every platformctl output of the test so far, for the payload check.
const std::string& AllOutput();

// The task `name` in the output of `platformctl dlq task list --json`; a record with the state
// "absent" (nothing replayed, no runner gone) while it is not there yet.
nlohmann::json TaskOf(const std::string& list_json, const std::string& name);

// `platformctl init` on the stack; fails the test unless it succeeds.
void Init(const testsupport::TestStack& stack);

}  // namespace dlqtest
