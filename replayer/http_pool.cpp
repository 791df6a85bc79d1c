#include "replayer/http_pool.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <string_view>

#include "common/config.h"
#include "replayer/http_curl.h"
#include "replayer/http_raw.h"
#include "replayer/http_transport.h"

namespace replayer {
namespace {

constexpr int kMaxEvents = 256;
constexpr uint64_t kFdMask = 0xffffffffU;

}  // namespace

HttpPoolOptions ReadHttpPoolOptions(common::ConfigReader& reader) {
  HttpPoolOptions o;
  if (reader.OneOf("REPLAYER_HTTP_CLIENT", "raw", {"raw", "curl"}) == "curl")
    o.http_client = HttpClient::kCurl;
  o.ca_file = reader.String("UMAMI_CA_FILE", "");
  if (!o.ca_file.empty() && access(o.ca_file.c_str(), R_OK) != 0)
    reader.Fail("UMAMI_CA_FILE", "'" + o.ca_file + "' is not a readable file");
  return o;
}

struct HttpPool::Impl {
  int epfd = -1;
  int wakefd = -1;                        // eventfd: Wakeup() from other threads
  std::atomic<bool> wake_pending{false};  // one eventfd write per Poll, however many Wakeup()s
  std::unique_ptr<CurlHttp> curl;         // https://, and http:// with HttpClient::kCurl
  std::unique_ptr<RawHttp> raw;           // http:// with HttpClient::kRaw
  HttpTransport* plain = nullptr;         // the one that carries http://
  std::vector<HttpTransport*> all;

  void Expire(std::chrono::steady_clock::time_point now, std::vector<HttpResponse>& done) {
    for (HttpTransport* t : all) {
      t->Expire(now);
      t->TakeDone(done);
    }
  }
};

namespace {

HttpPoolOptions FromProcess() {
  auto reader = common::ConfigReader::FromProcess();
  HttpPoolOptions o = ReadHttpPoolOptions(reader);
  reader.Finish();  // a bad value was reported at start-up already (service.cpp)
  return o;
}

}  // namespace

HttpPool::HttpPool() : HttpPool(FromProcess()) {}

HttpPool::HttpPool(HttpPoolOptions options) : impl_(std::make_unique<Impl>()) {
  auto& im = *impl_;
  im.epfd = epoll_create1(EPOLL_CLOEXEC);
  im.wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (im.epfd < 0 || im.wakefd < 0) throw std::runtime_error("http pool: epoll/eventfd");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = static_cast<uint32_t>(im.wakefd);
  epoll_ctl(im.epfd, EPOLL_CTL_ADD, im.wakefd, &ev);
  im.curl = std::make_unique<CurlHttp>(im.epfd, std::move(options.ca_file));
  im.all.push_back(im.curl.get());
  im.plain = im.curl.get();
  if (options.http_client == HttpClient::kRaw) {
    im.raw = std::make_unique<RawHttp>(im.epfd);
    im.all.push_back(im.raw.get());
    im.plain = im.raw.get();
  }
}

HttpPool::~HttpPool() {
  impl_->all.clear();
  impl_->raw.reset();
  impl_->curl.reset();
  close(impl_->wakefd);
  close(impl_->epfd);
}

void HttpPool::Submit(HttpRequest request) {
  ++in_flight_;
  auto now = std::chrono::steady_clock::now();
  HttpTransport* t = request.url.compare(0, 7, "http://") == 0 ? impl_->plain : impl_->curl.get();
  t->Submit(std::move(request), now);
}

void HttpPool::Poll(std::chrono::milliseconds timeout, std::vector<HttpResponse>& done) {
  auto& im = *impl_;
  size_t before = done.size();
  auto now = std::chrono::steady_clock::now();
  im.Expire(now, done);
  int wait = done.size() == before ? static_cast<int>(timeout.count()) : 0;
  for (HttpTransport* t : im.all) {
    auto next = t->NextDeadline();
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
    if (fd == im.wakefd && (data & ~kFdMask) == 0) {
      uint64_t v = 0;
      (void)!read(im.wakefd, &v, sizeof v);
      im.wake_pending.store(false);  // before the caller drains its inbox: see Wakeup()
      continue;
    }
    for (HttpTransport* t : im.all) {
      if (data & t->epoll_tag()) {
        t->OnEvent(fd, events[i].events, now);
        break;
      }
    }
  }
  im.Expire(now, done);
  in_flight_ = 0;
  for (HttpTransport* t : im.all) in_flight_ += t->running();
}

void HttpPool::Wakeup() {
  // A write only when none is pending: Poll() clears the flag before the caller drains what the
  // waker queued, so nothing queued before a skipped write is missed.
  if (impl_->wake_pending.exchange(true)) return;
  uint64_t one = 1;
  (void)!write(impl_->wakefd, &one, sizeof one);
}

}  // namespace replayer
