#include "tests/support/umami_standin.h"

#include "tests/support/http_background.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <thread>

namespace testsupport {
namespace {

using nlohmann::json;

// Tokens in a JWT's shape that carry the visit id, readable by this stand-in alone.
std::string Token(const std::string& visit) {
  std::string mid;
  for (char c : visit) mid += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return "eyJhbGciOiJIUzI1NiJ9.v" + mid + ".c2lnbmF0dXJl";
}

std::string VisitOf(const std::string& token) {
  size_t a = token.find('.');
  size_t b = token.rfind('.');
  if (a == std::string::npos || b <= a + 2 || token[a + 1] != 'v') return "";
  return token.substr(a + 2, b - a - 2);
}

bool IsBot(std::string ua) {
  std::transform(ua.begin(), ua.end(), ua.begin(), [](unsigned char c) { return std::tolower(c); });
  return ua.find("bot") != std::string::npos || ua.find("spider") != std::string::npos;
}

json Error(int status, const std::string& message) {
  return {{"error", {{"message", message}, {"code", "bad-request"}, {"status", status}}}};
}

}  // namespace

struct UmamiStandIn::Impl {
  std::set<std::string> websites;
  std::unique_ptr<BackgroundServer> server;
  mutable std::mutex mu;
  bool batch_route = true;
  std::vector<RecordedRequest> requests;
  std::vector<Stored> stored;

  // 3.1's send handler for one body under the request's headers: status and JSON answer.
  std::pair<int, json> Send(const json& body, const httplib::Request& req) {
    if (!body.is_object() || !body.contains("payload") || !body["payload"].is_object()) {
      return {400, Error(400, "Bad request")};
    }
    std::string type = body.value("type", "");
    if (type != "event" && type != "identify" && type != "performance") {
      return {400, Error(400, "Bad request")};
    }
    const json& p = body["payload"];
    std::string website = p.value("website", "");
    std::string name = p.value("name", "");
    if (name.size() > 50)
      return {400, Error(400, "Too big: expected string to have <=50 characters")};
    std::string visit = VisitOf(req.get_header_value("x-umami-cache"));
    if (visit.empty() && websites.count(website) == 0) {
      return {400, Error(400, "Website not found.")};
    }
    std::string ua = p.value("userAgent", req.get_header_value("User-Agent"));
    if (IsBot(ua)) return {200, json{{"beep", "boop"}}};
    std::string ip = p.value("ip", req.get_header_value("X-Forwarded-For"));
    int64_t ts = p.value("timestamp", int64_t{0});
    std::string session = std::to_string(std::hash<std::string>{}(
        website + "|" + ip + "|" + ua + "|" + std::to_string(ts / (30 * 86400))));
    if (visit.empty()) visit = session + "h" + std::to_string(ts / 3600);
    Stored s;
    s.website = website;
    s.url = p.value("url", "");
    s.name = name;
    s.visit = visit;
    s.timestamp = ts;
    stored.push_back(std::move(s));
    return {200, json{{"cache", Token(visit)}, {"sessionId", session}, {"visitId", visit}}};
  }

  void Handle(const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lock(mu);
    RecordedRequest r = Record(req);
    json answer;
    if (req.method == "GET" && req.path == "/api/heartbeat") {
      res.status = 200;
      answer = {{"ok", true}};
    } else if (req.method == "POST" && req.path == "/api/send") {
      auto [status, a] = Send(json::parse(req.body, nullptr, false), req);
      res.status = status;
      answer = std::move(a);
    } else if (req.method == "POST" && req.path == "/api/batch" && batch_route) {
      json body = json::parse(req.body, nullptr, false);
      if (!body.is_array()) {
        res.status = 400;
        answer = Error(400, "Bad request");
      } else {
        json details = json::array();
        json cache = nullptr;
        for (size_t i = 0; i < body.size(); ++i) {
          auto [status, a] = Send(body[i], req);
          if (status != 200) {
            details.push_back({{"index", i}, {"response", a}});
          } else if (cache.is_null() && a.contains("cache")) {
            cache = a["cache"];
          }
        }
        res.status = 200;
        answer = {{"size", body.size()},
                  {"processed", body.size() - details.size()},
                  {"errors", details.size()},
                  {"details", details},
                  {"cache", cache}};
      }
    } else {
      res.status = 404;
      res.set_content("<!DOCTYPE html><title>404: This page could not be found.</title>",
                      "text/html");
      r.status = 404;
      requests.push_back(std::move(r));
      return;
    }
    res.set_content(answer.dump(), "application/json");
    r.status = res.status;
    requests.push_back(std::move(r));
  }
};

UmamiStandIn::UmamiStandIn(std::vector<std::string> websites) : impl_(std::make_unique<Impl>()) {
  impl_->websites.insert(websites.begin(), websites.end());
  impl_->server = std::make_unique<BackgroundServer>(
      [this](const httplib::Request& req, httplib::Response& res) { impl_->Handle(req, res); },
      "umami stand-in");
}

UmamiStandIn::~UmamiStandIn() { impl_->server.reset(); }  // before what its handler uses

std::string UmamiStandIn::url() const { return impl_->server->url(); }

void UmamiStandIn::SetBatchRoute(bool present) {
  std::lock_guard lock(impl_->mu);
  impl_->batch_route = present;
}

std::vector<RecordedRequest> UmamiStandIn::Requests() const {
  std::lock_guard lock(impl_->mu);
  return impl_->requests;
}

std::vector<UmamiStandIn::Stored> UmamiStandIn::StoredEvents() const {
  std::lock_guard lock(impl_->mu);
  return impl_->stored;
}

}  // namespace testsupport
