#include "tests/support/recording_proxy.h"

#include "tests/support/http_background.h"

#include <chrono>
#include <stdexcept>
#include <thread>

namespace testsupport {

namespace {

int64_t WallNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

struct RecordingProxy::Impl {
  std::string upstream;
  std::unique_ptr<BackgroundServer> server;
  mutable std::mutex mu;
  std::vector<RecordedRequest> requests;

  void Forward(const httplib::Request& req, httplib::Response& res) {
    httplib::Client client(upstream);
    client.set_read_timeout(30, 0);
    httplib::Headers headers;
    for (const char* h : {"User-Agent", "X-Forwarded-For", "x-umami-cache"}) {
      if (req.has_header(h)) headers.emplace(h, req.get_header_value(h));
    }
    RecordedRequest r = Record(req);
    r.start_ns = WallNs();
    auto answer = req.method == "POST" ? client.Post(req.path, headers, req.body,
                                                     req.get_header_value("Content-Type"))
                                       : client.Get(req.path, headers);
    if (answer) {
      res.status = answer->status;
      res.set_content(answer->body, answer->get_header_value("Content-Type"));
      r.status = answer->status;
    } else {
      res.status = 502;
    }
    r.end_ns = WallNs();
    std::lock_guard lock(mu);
    requests.push_back(std::move(r));
  }
};

RecordingProxy::RecordingProxy(const std::string& upstream) : impl_(std::make_unique<Impl>()) {
  impl_->upstream = upstream;
  impl_->server = std::make_unique<BackgroundServer>(
      [this](const httplib::Request& req, httplib::Response& res) { impl_->Forward(req, res); },
      "recording proxy");
}

RecordingProxy::~RecordingProxy() { impl_->server.reset(); }  // before what its handler uses

std::string RecordingProxy::url() const { return impl_->server->url(); }

std::vector<RecordedRequest> RecordingProxy::Requests() const {
  std::lock_guard lock(impl_->mu);
  return impl_->requests;
}

}  // namespace testsupport
