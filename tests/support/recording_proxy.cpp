#include "tests/support/recording_proxy.h"

#include <httplib.h>

#include <chrono>
#include <stdexcept>
#include <thread>

namespace testsupport {

struct RecordingProxy::Impl {
  std::string upstream;
  httplib::Server server;
  int port = 0;
  std::thread thread;
  mutable std::mutex mu;
  std::vector<RecordedRequest> requests;

  void Forward(const httplib::Request& req, httplib::Response& res) {
    httplib::Client client(upstream);
    client.set_read_timeout(30, 0);
    httplib::Headers headers;
    for (const char* h : {"User-Agent", "X-Forwarded-For", "x-umami-cache"}) {
      if (req.has_header(h)) headers.emplace(h, req.get_header_value(h));
    }
    RecordedRequest r;
    r.method = req.method;
    r.path = req.path;
    r.body = req.body;
    r.cache_token = req.get_header_value("x-umami-cache");
    r.user_agent = req.get_header_value("User-Agent");
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
    std::lock_guard lock(mu);
    requests.push_back(std::move(r));
  }
};

RecordingProxy::RecordingProxy(const std::string& upstream) : impl_(std::make_unique<Impl>()) {
  impl_->upstream = upstream;
  auto forward = [this](const httplib::Request& req, httplib::Response& res) {
    impl_->Forward(req, res);
  };
  impl_->server.Post(".*", forward);
  impl_->server.Get(".*", forward);
  impl_->port = impl_->server.bind_to_any_port("127.0.0.1");
  if (impl_->port <= 0) throw std::runtime_error("recording proxy: cannot bind");
  impl_->thread = std::thread([this] { impl_->server.listen_after_bind(); });
  while (!impl_->server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

RecordingProxy::~RecordingProxy() {
  impl_->server.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
}

std::string RecordingProxy::url() const {
  return "http://127.0.0.1:" + std::to_string(impl_->port);
}

std::vector<RecordedRequest> RecordingProxy::Requests() const {
  std::lock_guard lock(impl_->mu);
  return impl_->requests;
}

}  // namespace testsupport
