#include "replayer/http_pool.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <string_view>

#include "replayer/http_curl.h"
#include "replayer/http_raw.h"

namespace replayer {
namespace {

constexpr int kMaxEvents = 256;
constexpr uint64_t kFdMask = 0xffffffffU;

}  // namespace

HttpClient HttpClientFromEnv() {
  const char* v = std::getenv("REPLAYER_HTTP_CLIENT");
  if (v == nullptr || *v == 0 || std::string_view(v) == "raw") return HttpClient::kRaw;
  if (std::string_view(v) == "curl") return HttpClient::kCurl;
  throw std::invalid_argument(std::string("REPLAYER_HTTP_CLIENT: '") + v +
                              "' is neither raw nor curl");
}

struct HttpPool::Impl {
  HttpClient http_client = HttpClient::kRaw;
  int epfd = -1;
  int wakefd = -1;                        // eventfd: Wakeup() from other threads
  std::atomic<bool> wake_pending{false};  // one eventfd write per Poll, however many Wakeup()s
  std::unique_ptr<RawHttp> raw;
  std::unique_ptr<CurlHttp> curl;

  void Expire(std::chrono::steady_clock::time_point now, std::vector<HttpResponse>& done) {
    raw->Expire(now);
    curl->Expire(now);
    raw->TakeDone(done);
    curl->TakeDone(done);
  }
};

HttpPool::HttpPool() : HttpPool(HttpPoolOptions{HttpClientFromEnv(), ""}) {}

HttpPool::HttpPool(HttpPoolOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->http_client = options.http_client;
  impl_->epfd = epoll_create1(EPOLL_CLOEXEC);
  impl_->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (impl_->epfd < 0 || impl_->wakefd < 0) throw std::runtime_error("http pool: epoll/eventfd");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = static_cast<uint32_t>(impl_->wakefd);
  epoll_ctl(impl_->epfd, EPOLL_CTL_ADD, impl_->wakefd, &ev);
  impl_->raw = std::make_unique<RawHttp>(impl_->epfd);
  impl_->curl = std::make_unique<CurlHttp>(impl_->epfd, std::move(options.ca_file));
}

HttpPool::~HttpPool() {
  impl_->raw.reset();
  impl_->curl.reset();
  close(impl_->wakefd);
  close(impl_->epfd);
}

void HttpPool::Submit(HttpRequest request) {
  ++in_flight_;
  auto now = std::chrono::steady_clock::now();
  if (impl_->http_client == HttpClient::kRaw && request.url.compare(0, 7, "http://") == 0) {
    impl_->raw->Submit(std::move(request), now);
  } else {
    impl_->curl->Submit(std::move(request), now);
  }
}

std::vector<HttpResponse> HttpPool::Poll(std::chrono::milliseconds timeout) {
  std::vector<HttpResponse> done;
  auto& im = *impl_;
  auto now = std::chrono::steady_clock::now();
  im.Expire(now, done);
  int wait = done.empty() ? static_cast<int>(timeout.count()) : 0;
  for (auto next : {im.raw->NextDeadline(), im.curl->NextDeadline()}) {
    if (!next) continue;
    auto ms = std::chrono::ceil<std::chrono::milliseconds>(*next - now).count();
    wait = std::min<int>(wait, static_cast<int>(std::max<int64_t>(0, ms)));
  }
  epoll_event events[kMaxEvents];
  int n = epoll_wait(im.epfd, events, kMaxEvents, wait);
  now = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    uint64_t data = events[i].data.u64;
    int fd = static_cast<int>(data & kFdMask);
    if (data & RawHttp::kEpollTag) {
      im.raw->OnEvent(fd, events[i].events, now);
    } else if (data & CurlHttp::kEpollTag) {
      im.curl->OnEvent(fd, events[i].events, now);
    } else if (fd == im.wakefd) {
      uint64_t v = 0;
      (void)!read(im.wakefd, &v, sizeof v);
      im.wake_pending.store(false);  // before the caller drains its inbox: see Wakeup()
    }
  }
  im.Expire(now, done);
  in_flight_ = im.raw->running() + im.curl->running();
  return done;
}

void HttpPool::Wakeup() {
  // A write only when none is pending: Poll() clears the flag before the caller drains what the
  // waker queued, so nothing queued before a skipped write is missed.
  if (impl_->wake_pending.exchange(true)) return;
  uint64_t one = 1;
  (void)!write(impl_->wakefd, &one, sizeof one);
}

}  // namespace replayer
