// Test support: web events as the edge publishes them, and reading Umami's tables back.
// Not thread-safe; test main thread only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/nats_client.h"
#include "common/nats_stream.h"
#include "common/result.h"

namespace testsupport {

struct TestEvent {
  std::string id;
  std::string site;
  int visitor = 0;  // visitor number: its key, IP and user agent derive from it
  int seq = 0;      // the visitor's n-th event, in publish order
  std::string url;  // default /v<visitor>/<seq>
  std::string type = "event";
  std::string data_json = R"({"plan":"pro"})";
  std::string user_agent;  // default: a browser agent unique to the visitor
};

std::string VisitorKey(int visitor);
std::string VisitorIp(int visitor);
std::string VisitorAgent(int visitor);
std::string EventJson(const TestEvent& e, int64_t accepted_at_ms);
// The message the edge would publish: web.events.<site>, Nats-Msg-Id = id, accepted now.
common::OutMessage EventMessage(const TestEvent& e);
// Publishes to web.events.<site> with Nats-Msg-Id = id and waits for the stream's ack.
common::Status PublishEvent(common::NatsClient& client, const TestEvent& e);
// A raw body, for malformed messages.
common::Status PublishRaw(common::NatsClient& client, const std::string& subject,
                          const std::string& body, const std::string& msg_id);

// Registers a website in Umami's database.
void AddWebsite(const std::string& umami_db_url, const std::string& website_id);
// psql -At: one line per row, columns separated by '|'.
std::vector<std::string> Query(const std::string& db_url, const std::string& sql);
int64_t QueryInt(const std::string& db_url, const std::string& sql);

// A fresh v4-looking UUID.
std::string NewUuid();

}  // namespace testsupport
