#include "replayer/http_pool.h"

#include <curl/curl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <stdexcept>

#include "replayer/http_raw.h"

namespace replayer {
namespace {

constexpr size_t kMaxBody = 64 * 1024;
constexpr int kMaxEvents = 256;

// One per easy handle, reused with it: the buffers keep their capacity between requests.
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

// One epoll set for both clients: http:// requests go to RawHttp, https:// ones to libcurl's
// socket interface (curl is told exactly which connection is ready, so a completion costs its
// own reads and writes and not a pass over every running transfer).
struct HttpPool::Impl {
  CURLM* multi = nullptr;
  int epfd = -1;
  int wakefd = -1;                        // eventfd: Wakeup() from other threads
  std::atomic<bool> wake_pending{false};  // one eventfd write per Poll, however many Wakeup()s
  long timer_ms = -1;                     // curl's timer: -1 none, else ms from timer_set
  std::chrono::steady_clock::time_point timer_set{};
  std::vector<std::pair<CURL*, std::unique_ptr<Transfer>>> idle;  // handle + its buffers
  std::vector<std::pair<CURL*, std::unique_ptr<Transfer>>> running;
  std::unique_ptr<RawHttp> raw;

  void Collect(std::vector<HttpResponse>& done);
  void SubmitCurl(HttpRequest request);

  static int OnSocket(CURL*, curl_socket_t fd, int what, void* user, void*) {
    auto* self = static_cast<Impl*>(user);
    if (what == CURL_POLL_REMOVE) {
      epoll_ctl(self->epfd, EPOLL_CTL_DEL, fd, nullptr);
      return 0;
    }
    epoll_event ev{};
    ev.data.u64 = static_cast<uint32_t>(fd);
    if (what == CURL_POLL_IN || what == CURL_POLL_INOUT) ev.events |= EPOLLIN;
    if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT) ev.events |= EPOLLOUT;
    if (epoll_ctl(self->epfd, EPOLL_CTL_MOD, fd, &ev) != 0 && errno == ENOENT) {
      epoll_ctl(self->epfd, EPOLL_CTL_ADD, fd, &ev);
    }
    return 0;
  }

  static int OnTimer(CURLM*, long timeout_ms, void* user) {
    auto* self = static_cast<Impl*>(user);
    self->timer_ms = timeout_ms;
    self->timer_set = std::chrono::steady_clock::now();
    return 0;
  }

  // Milliseconds until curl's timer is due: -1 none, 0 due now.
  long TimerDue() const {
    if (timer_ms < 0) return -1;
    auto passed = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - timer_set)
                      .count();
    return std::max<long>(0, timer_ms - static_cast<long>(passed));
  }
};

HttpPool::HttpPool() : impl_(std::make_unique<Impl>()) {
  static GlobalInit init;
  impl_->epfd = epoll_create1(EPOLL_CLOEXEC);
  impl_->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (impl_->epfd < 0 || impl_->wakefd < 0) throw std::runtime_error("http pool: epoll/eventfd");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = static_cast<uint32_t>(impl_->wakefd);
  epoll_ctl(impl_->epfd, EPOLL_CTL_ADD, impl_->wakefd, &ev);
  impl_->raw = std::make_unique<RawHttp>(impl_->epfd);
  impl_->multi = curl_multi_init();
  curl_multi_setopt(impl_->multi, CURLMOPT_MAXCONNECTS, 512L);
  curl_multi_setopt(impl_->multi, CURLMOPT_SOCKETFUNCTION, &Impl::OnSocket);
  curl_multi_setopt(impl_->multi, CURLMOPT_SOCKETDATA, impl_.get());
  curl_multi_setopt(impl_->multi, CURLMOPT_TIMERFUNCTION, &Impl::OnTimer);
  curl_multi_setopt(impl_->multi, CURLMOPT_TIMERDATA, impl_.get());
}

HttpPool::~HttpPool() {
  for (auto& [easy, t] : impl_->running) {
    curl_multi_remove_handle(impl_->multi, easy);
    curl_slist_free_all(t->headers);
    curl_easy_cleanup(easy);
  }
  for (auto& [easy, t] : impl_->idle) curl_easy_cleanup(easy);
  curl_multi_cleanup(impl_->multi);
  impl_->raw.reset();
  close(impl_->wakefd);
  close(impl_->epfd);
}

void HttpPool::Submit(HttpRequest request) {
  ++in_flight_;
  if (request.url.compare(0, 7, "http://") == 0) {
    impl_->raw->Submit(std::move(request), std::chrono::steady_clock::now());
  } else {
    impl_->SubmitCurl(std::move(request));
  }
}

void HttpPool::Impl::SubmitCurl(HttpRequest request) {
  CURL* easy = nullptr;
  std::unique_ptr<Transfer> t;
  if (!idle.empty()) {
    easy = idle.back().first;
    t = std::move(idle.back().second);
    idle.pop_back();
    t->body.clear();
    t->error[0] = 0;
  } else {
    easy = curl_easy_init();
    t = std::make_unique<Transfer>();
    // Set once per handle: they survive between requests (no curl_easy_reset).
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, OnData);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, t.get());
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, t->error);
    curl_easy_setopt(easy, CURLOPT_PRIVATE, t.get());
  }
  t->request = std::move(request);
  const HttpRequest& r = t->request;
  curl_easy_setopt(easy, CURLOPT_URL, r.url.c_str());
  curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, static_cast<long>(r.timeout.count()));
  if (r.post) {
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, r.body.data());
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE, static_cast<long>(r.body.size()));
  } else {
    curl_easy_setopt(easy, CURLOPT_HTTPGET, 1L);
  }
  // No "Expect: 100-continue" round trip on larger bodies.
  t->headers = curl_slist_append(nullptr, "Expect:");
  std::string line;
  for (const auto& [k, v] : r.headers) {
    line.assign(k).append(": ").append(v);
    t->headers = curl_slist_append(t->headers, line.c_str());
  }
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, t->headers);
  curl_multi_add_handle(multi, easy);
  running.emplace_back(easy, std::move(t));
}

std::vector<HttpResponse> HttpPool::Poll(std::chrono::milliseconds timeout) {
  std::vector<HttpResponse> done;
  auto& im = *impl_;
  int still = 0;
  auto now = std::chrono::steady_clock::now();
  long due = im.TimerDue();
  if (due == 0) {
    im.timer_ms = -1;
    curl_multi_socket_action(im.multi, CURL_SOCKET_TIMEOUT, 0, &still);
    due = im.TimerDue();
  }
  im.raw->Expire(now);
  im.Collect(done);
  im.raw->TakeDone(done);
  int wait = done.empty() ? static_cast<int>(timeout.count()) : 0;
  if (due >= 0) wait = std::min<int>(wait, static_cast<int>(due));
  if (auto next = im.raw->NextDeadline()) {
    auto ms = std::chrono::ceil<std::chrono::milliseconds>(*next - now).count();
    wait = std::min<int>(wait, static_cast<int>(std::max<int64_t>(0, ms)));
  }
  epoll_event events[kMaxEvents];
  int n = epoll_wait(im.epfd, events, kMaxEvents, wait);
  now = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) {
    uint64_t data = events[i].data.u64;
    if (data & RawHttp::kEpollTag) {
      im.raw->OnEvent(static_cast<int>(data & 0xffffffffU), events[i].events, now);
      continue;
    }
    int fd = static_cast<int>(data & 0xffffffffU);
    if (fd == im.wakefd) {
      uint64_t v = 0;
      (void)!read(im.wakefd, &v, sizeof v);
      im.wake_pending.store(false);  // before the caller drains its inbox: see Wakeup()
      continue;
    }
    int mask = 0;
    if (events[i].events & EPOLLIN) mask |= CURL_CSELECT_IN;
    if (events[i].events & EPOLLOUT) mask |= CURL_CSELECT_OUT;
    if (events[i].events & (EPOLLERR | EPOLLHUP)) mask |= CURL_CSELECT_ERR;
    curl_multi_socket_action(im.multi, fd, mask, &still);
  }
  if (im.TimerDue() == 0) {
    im.timer_ms = -1;
    curl_multi_socket_action(im.multi, CURL_SOCKET_TIMEOUT, 0, &still);
  }
  im.raw->Expire(now);
  im.Collect(done);
  im.raw->TakeDone(done);
  in_flight_ = im.running.size() + im.raw->running();
  return done;
}

void HttpPool::Impl::Collect(std::vector<HttpResponse>& done) {
  int left = 0;
  while (CURLMsg* m = curl_multi_info_read(multi, &left)) {
    if (m->msg != CURLMSG_DONE) continue;
    CURL* easy = m->easy_handle;
    auto it = std::find_if(running.begin(), running.end(),
                           [easy](const auto& e) { return e.first == easy; });
    if (it == running.end()) continue;
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
    resp.body.swap(t->body);
    curl_multi_remove_handle(multi, easy);
    curl_slist_free_all(t->headers);
    t->headers = nullptr;
    idle.emplace_back(easy, std::move(it->second));
    *it = std::move(running.back());
    running.pop_back();
    done.push_back(std::move(resp));
  }
}

void HttpPool::Wakeup() {
  // A write only when none is pending: Poll() clears the flag before the caller drains what the
  // waker queued, so nothing queued before a skipped write is missed.
  if (impl_->wake_pending.exchange(true)) return;
  uint64_t one = 1;
  (void)!write(impl_->wakefd, &one, sizeof one);
}

}  // namespace replayer
