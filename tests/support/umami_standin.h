// Test support: a stand-in for Umami 3.1.0's collection routes, for wire-level tests of what CI
// cannot run (CI runs a real Umami 2.10; 3.x needs a build from source). It answers as 3.1.0
// answered when probed by hand (docs/replayer.md, "Umami 2.10 and 3.1"):
//   GET  /api/heartbeat  200 {"ok":true}
//   POST /api/send       200 {"cache":<token>,"sessionId","visitId"} for a stored event;
//                        200 {"beep":"boop"} for a bot user agent (payload userAgent, else the
//                        header), nothing stored; 400 {"error":{...}} for an unknown website
//                        (without a token) or an event name over 50 characters
//   POST /api/batch      a JSON array of send bodies, each run through the send handler in
//                        order with the outer request's headers, going on after a failure;
//                        200 {"size","processed","errors","details":[{"index","response"}],
//                        "cache"} (cache: the first stored element's token, else null);
//                        404 while SetBatchRoute(false) (2.10, or a downgraded process)
// Visits as 3.1 makes them: the token's visit, else one derived from the session (site, ip,
// agent) and the hour of the payload's timestamp. Every request and stored event is recorded.
// Ownership: owns its server thread. Thread-safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tests/support/recording_proxy.h"

namespace testsupport {

class UmamiStandIn {
 public:
  struct Stored {
    std::string website, url, name, visit;
    int64_t timestamp = 0;  // payload timestamp (seconds)
  };

  // Listens on 127.0.0.1 (a free port); `websites` are the sites it holds.
  explicit UmamiStandIn(std::vector<std::string> websites);
  ~UmamiStandIn();
  UmamiStandIn(const UmamiStandIn&) = delete;
  UmamiStandIn& operator=(const UmamiStandIn&) = delete;

  std::string url() const;
  void SetBatchRoute(bool present);
  std::vector<RecordedRequest> Requests() const;
  std::vector<Stored> StoredEvents() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace testsupport
