#include "replayer/http_pool.h"

#include <curl/curl.h>

#include <unordered_map>

namespace replayer {
namespace {

constexpr size_t kMaxBody = 64 * 1024;

struct Transfer {
  HttpRequest request;
  std::string body;
  curl_slist* headers = nullptr;
  char error[CURL_ERROR_SIZE] = {0};
};

size_t OnData(char* ptr, size_t size, size_t nmemb, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t n = size * nmemb;
  if (t->body.size() < kMaxBody) t->body.append(ptr, std::min(n, kMaxBody - t->body.size()));
  return n;
}

struct GlobalInit {
  GlobalInit() { curl_global_init(CURL_GLOBAL_DEFAULT); }
};

}  // namespace

struct HttpPool::Impl {
  CURLM* multi = nullptr;
  std::vector<CURL*> idle;  // easy handles kept for reuse (their connections stay in the cache)
  std::unordered_map<CURL*, std::unique_ptr<Transfer>> running;
};

HttpPool::HttpPool() : impl_(std::make_unique<Impl>()) {
  static GlobalInit init;
  impl_->multi = curl_multi_init();
  curl_multi_setopt(impl_->multi, CURLMOPT_MAXCONNECTS, 512L);
}

HttpPool::~HttpPool() {
  for (auto& [easy, t] : impl_->running) {
    curl_multi_remove_handle(impl_->multi, easy);
    curl_slist_free_all(t->headers);
    curl_easy_cleanup(easy);
  }
  for (CURL* easy : impl_->idle) curl_easy_cleanup(easy);
  curl_multi_cleanup(impl_->multi);
}

void HttpPool::Submit(HttpRequest request) {
  CURL* easy = nullptr;
  if (!impl_->idle.empty()) {
    easy = impl_->idle.back();
    impl_->idle.pop_back();
    curl_easy_reset(easy);
  } else {
    easy = curl_easy_init();
  }
  auto t = std::make_unique<Transfer>();
  t->request = std::move(request);
  const HttpRequest& r = t->request;
  curl_easy_setopt(easy, CURLOPT_URL, r.url.c_str());
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, static_cast<long>(r.timeout.count()));
  curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
  curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, OnData);
  curl_easy_setopt(easy, CURLOPT_WRITEDATA, t.get());
  curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, t->error);
  curl_easy_setopt(easy, CURLOPT_PRIVATE, t.get());
  if (r.post) {
    curl_easy_setopt(easy, CURLOPT_POST, 1L);
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, r.body.data());
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE, static_cast<long>(r.body.size()));
  }
  // No "Expect: 100-continue" round trip on larger bodies.
  t->headers = curl_slist_append(t->headers, "Expect:");
  for (const auto& [k, v] : r.headers) {
    std::string line = k + ": " + v;
    t->headers = curl_slist_append(t->headers, line.c_str());
  }
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, t->headers);
  curl_multi_add_handle(impl_->multi, easy);
  impl_->running.emplace(easy, std::move(t));
  ++in_flight_;
}

std::vector<HttpResponse> HttpPool::Poll(std::chrono::milliseconds timeout) {
  int still = 0;
  curl_multi_perform(impl_->multi, &still);
  std::vector<HttpResponse> done;
  auto collect = [&] {
    int left = 0;
    while (CURLMsg* m = curl_multi_info_read(impl_->multi, &left)) {
      if (m->msg != CURLMSG_DONE) continue;
      CURL* easy = m->easy_handle;
      auto it = impl_->running.find(easy);
      if (it == impl_->running.end()) continue;
      Transfer* t = it->second.get();
      HttpResponse resp;
      resp.tag = t->request.tag;
      if (m->data.result == CURLE_OK) {
        long code = 0;
        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
        resp.status = static_cast<int>(code);
      } else {
        resp.error = t->error[0] ? t->error : curl_easy_strerror(m->data.result);
      }
      curl_easy_getinfo(easy, CURLINFO_TOTAL_TIME, &resp.seconds);
      resp.body = std::move(t->body);
      curl_multi_remove_handle(impl_->multi, easy);
      curl_slist_free_all(t->headers);
      impl_->running.erase(it);
      impl_->idle.push_back(easy);
      --in_flight_;
      done.push_back(std::move(resp));
    }
  };
  collect();
  if (!done.empty()) return done;
  curl_multi_poll(impl_->multi, nullptr, 0, static_cast<int>(timeout.count()), nullptr);
  curl_multi_perform(impl_->multi, &still);
  collect();
  return done;
}

void HttpPool::Wakeup() { curl_multi_wakeup(impl_->multi); }

}  // namespace replayer
