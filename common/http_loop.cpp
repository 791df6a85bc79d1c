#include "common/http_loop.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

namespace common::http {

namespace {

constexpr uint64_t kListenerId = 0;
constexpr uint64_t kWakeId = 1;

std::string ErrnoText(int err) { return std::error_code(err, std::system_category()).message(); }

std::shared_ptr<const std::string> Share(std::string s) {
  return std::make_shared<const std::string>(std::move(s));
}

bool Again(int err) { return err == EAGAIN || err == EWOULDBLOCK; }

}  // namespace

Loop::Loop(UniqueFd listener, UniqueFd epoll, UniqueFd wake, Limits limits, Handlers handlers)
    : listener_(std::move(listener)),
      epoll_(std::move(epoll)),
      wake_(std::move(wake)),
      limits_(limits),
      handlers_(std::move(handlers)),
      next_id_(kWakeId + 1) {
  for (auto [fd, id] : {std::pair{listener_.get(), kListenerId}, {wake_.get(), kWakeId}}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = id;
    if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) {
      spdlog::error("metrics endpoint: epoll_ctl: {}", ErrnoText(errno));
    }
  }
  event_thread_ = std::thread([this] { Run(); });
  scrape_thread_ = std::thread([this] { Scrape(); });
}

Loop::~Loop() {
  stop_ = true;
  Wake();
  event_thread_.join();
  {
    std::lock_guard lock(mu_);
    scrape_stop_ = true;
  }
  cv_.notify_all();
  scrape_thread_.join();
}

void Loop::Wake() {
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = write(wake_.get(), &one, sizeof(one));
}

void Loop::Watch(Conn& c, uint32_t events) {
  if (c.watching == events) return;
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = c.id;
  epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, c.fd.get(), &ev);
  c.watching = events;
}

void Loop::SetDeadline(Conn& c, Clock::time_point t) {
  deadlines_.erase({c.deadline, c.id});
  c.deadline = t;
  deadlines_.insert({t, c.id});
}

void Loop::Close(uint64_t id) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  deadlines_.erase({it->second.deadline, id});
  conns_.erase(it);  // closes the socket, which leaves the epoll set with it
}

int Loop::TimeoutMs(Clock::time_point now) const {
  Clock::time_point next = now + std::chrono::seconds(1);
  if (!deadlines_.empty()) next = std::min(next, deadlines_.begin()->first);
  if (listener_paused_) next = std::min(next, resume_listener_);
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(next - now).count();
  return static_cast<int>(std::max<int64_t>(ms, 0));
}

void Loop::Run() {
  std::vector<epoll_event> events(256);
  while (!stop_) {
    int n = epoll_wait(epoll_.get(), events.data(), static_cast<int>(events.size()),
                       TimeoutMs(Clock::now()));
    if (n < 0 && errno != EINTR) {
      spdlog::critical("metrics endpoint: epoll_wait: {}; no longer serving", ErrnoText(errno));
      return;
    }
    for (int i = 0; i < n; ++i) {
      uint64_t id = events[i].data.u64;
      if (id == kListenerId) {
        Accept();
      } else if (id == kWakeId) {
        OnWake();
      } else {
        OnEvent(id, events[i].events);
      }
    }
    auto now = Clock::now();
    while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
      Close(deadlines_.begin()->second);
    }
    if (listener_paused_ && now >= resume_listener_) PauseListener(false);
  }
}

void Loop::PauseListener(bool paused) {
  listener_paused_ = paused;
  resume_listener_ = Clock::now() + std::chrono::milliseconds(100);
  epoll_event ev{};
  ev.events = paused ? 0u : static_cast<uint32_t>(EPOLLIN);
  ev.data.u64 = kListenerId;
  epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, listener_.get(), &ev);
}

void Loop::Accept() {
  // At most 256 a turn, so that the connections in hand are served between them.
  for (int i = 0; i < 256; ++i) {
    UniqueFd fd(accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd) {
      int err = errno;
      if (err == EINTR || err == ECONNABORTED) continue;
      if ((err == EMFILE || err == ENFILE) && !deadlines_.empty()) {
        Close(deadlines_.begin()->second);  // the process is out of files: make room
        continue;
      }
      if (!Again(err)) {
        // Out of files or memory with nothing of ours to close: the listener would wake us at
        // once, again and again. Look again in 100 ms.
        spdlog::debug("metrics endpoint: accept: {}", ErrnoText(err));
        PauseListener(true);
      }
      return;
    }
    // At the cap the connection nearest its deadline goes (the longest idle one, unless it is
    // being answered): a new one is more likely a scrape or a health check than an old one that
    // has not sent its request yet.
    if (conns_.size() >= limits_.max_connections) Close(deadlines_.begin()->second);
    int one = 1;
    setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    uint64_t id = next_id_++;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = id;
    if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd.get(), &ev) != 0) continue;  // fd closes
    Conn& c = conns_[id];
    c.fd = std::move(fd);
    c.id = id;
    SetDeadline(c, Clock::now() + std::chrono::milliseconds(limits_.request_timeout_ms));
  }
}

void Loop::OnEvent(uint64_t id, uint32_t events) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;  // closed earlier in this turn
  Conn& c = it->second;
  if ((events & EPOLLERR) != 0) return Close(id);
  switch (c.state) {
    case State::kReading:
      return Read(c);
    case State::kWriting:
      return Write(c);
    case State::kLingering:
      return Linger(c);
    case State::kScraping:
      if ((events & EPOLLHUP) != 0) Close(id);
      return;
  }
}

void Loop::Read(Conn& c) {
  char buf[4096];
  while (true) {
    // One byte past the cap tells a head that is too large.
    size_t room = std::min(sizeof(buf), limits_.max_head_bytes + 1 - c.in.size());
    ssize_t n = recv(c.fd.get(), buf, room, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && Again(errno)) return;
    if (n <= 0) return Close(c.id);  // gone before its request was whole
    c.in.append(buf, static_cast<size_t>(n));
    if (size_t end = HeadEnd(c.in); end != std::string::npos) {
      return Dispatch(c, Parse(std::string_view(c.in).substr(0, end)));
    }
    if (c.in.size() > limits_.max_head_bytes) return Reply(c, Share(ErrorAnswer(431)));
  }
}

void Loop::Dispatch(Conn& c, Request r) {
  c.head_only = r.head_only;
  std::string().swap(c.in);
  switch (r.route) {
    case Route::kHealth:
      return Reply(c, Share(handlers_.health(r.head_only)));
    case Route::kMetrics:
      c.state = State::kScraping;
      Watch(c, 0);  // a hang-up still shows (EPOLLHUP)
      SetDeadline(c, Clock::now() + std::chrono::milliseconds(limits_.scrape_timeout_ms));
      next_waiters_.push_back(c.id);
      if (!scraping_) StartScrape();
      return;
    case Route::kNotFound:
      return Reply(c, Share(ErrorAnswer(404, r.head_only)));
    case Route::kBadMethod:
      return Reply(c, Share(ErrorAnswer(405)));
    case Route::kBadRequest:
      return Reply(c, Share(ErrorAnswer(400)));
  }
}

void Loop::Reply(Conn& c, AnswerPtr out) {
  c.state = State::kWriting;
  c.out = std::move(out);
  c.sent = 0;
  SetDeadline(c, Clock::now() + std::chrono::milliseconds(limits_.request_timeout_ms));
  Write(c);
}

void Loop::Write(Conn& c) {
  while (c.sent < c.out->size()) {
    ssize_t n = send(c.fd.get(), c.out->data() + c.sent, c.out->size() - c.sent, MSG_NOSIGNAL);
    if (n > 0) {
      c.sent += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && Again(errno)) {
      return Watch(c, EPOLLOUT);
    } else {
      return Close(c.id);
    }
  }
  // All sent. Closing now would reset the connection if the client sent more than its head (a
  // body we did not read), and a reset can lose the answer on its way: shut our side, and close
  // when the client does (or at the deadline).
  shutdown(c.fd.get(), SHUT_WR);
  c.out.reset();
  c.state = State::kLingering;
  Watch(c, EPOLLIN);
}

void Loop::Linger(Conn& c) {
  char buf[4096];
  while (true) {
    ssize_t n = recv(c.fd.get(), buf, sizeof(buf), 0);
    if (n > 0 || (n < 0 && errno == EINTR)) continue;
    if (n < 0 && Again(errno)) return;
    return Close(c.id);
  }
}

void Loop::StartScrape() {
  scraping_ = true;
  waiters_.swap(next_waiters_);
  next_waiters_.clear();
  {
    std::lock_guard lock(mu_);
    scrape_wanted_ = true;
  }
  cv_.notify_one();
}

void Loop::OnWake() {
  uint64_t count = 0;
  [[maybe_unused]] ssize_t n = read(wake_.get(), &count, sizeof(count));
  std::optional<std::string> body;
  {
    std::lock_guard lock(mu_);
    if (!scrape_done_) return;  // the destructor's wake: Run() sees stop_
    scrape_done_ = false;
    body = std::move(scrape_result_);
  }
  AnswerPtr get, head;
  for (uint64_t id : waiters_) {
    auto it = conns_.find(id);
    if (it == conns_.end() || it->second.state != State::kScraping) continue;  // timed out
    bool head_only = it->second.head_only;
    AnswerPtr& a = head_only ? head : get;
    if (!a) {
      a = Share(body ? Answer(200, "text/plain; version=0.0.4; charset=utf-8", *body, head_only)
                     : ErrorAnswer(500, head_only));
    }
    Reply(it->second, a);
  }
  waiters_.clear();
  scraping_ = false;
  if (!next_waiters_.empty()) StartScrape();
}

void Loop::Scrape() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return scrape_wanted_ || scrape_stop_; });
    if (scrape_stop_) return;
    scrape_wanted_ = false;
    lock.unlock();
    std::optional<std::string> body = handlers_.scrape();
    lock.lock();
    scrape_result_ = std::move(body);
    scrape_done_ = true;
    Wake();
  }
}

}  // namespace common::http
