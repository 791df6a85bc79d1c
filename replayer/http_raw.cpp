#include "replayer/http_raw.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "replayer/http_check.h"
#include "replayer/http_parse.h"

namespace replayer {
namespace {

using std::chrono::milliseconds;
constexpr milliseconds kIdleMax{4000};  // below Node's default keep-alive timeout of 5 s
constexpr milliseconds kConnectTimeout{2000};
constexpr std::chrono::seconds kResolveTtl{60};

std::string Errno(const char* what, int err) { return std::string(what) + ": " + strerror(err); }

}  // namespace

struct RawHttp::Origin {
  std::string host;         // without brackets
  std::string port;         // decimal
  std::string host_header;  // as the URL wrote it
  sockaddr_storage addr{};
  socklen_t addrlen = 0;
  bool literal = false;  // an IP address: never resolved again
  TimePoint resolved_at{};
  std::vector<Conn*> idle;  // newest last
};

struct RawHttp::Transfer {
  HttpRequest request;
  Origin* origin = nullptr;
  std::string wire;  // the request as sent
  TimePoint start{};
  TimePoint deadline{};
  bool retried = false;
};

struct RawHttp::Conn {
  int fd = -1;
  Origin* origin = nullptr;
  bool connected = false;
  bool reused = false;  // answered before: the server may have closed it while idle
  bool want_write = false;
  std::unique_ptr<Transfer> t;  // the request on it; none while idle
  size_t out_off = 0;
  TimePoint connect_deadline{};
  TimePoint idle_since{};
  uint64_t arm = 0;  // its entry in dues_; 0: none
  HttpResponseParser parser;
};

RawHttp::RawHttp(int epfd) : epfd_(epfd) {}

RawHttp::~RawHttp() {
  for (auto& [fd, c] : conns_) {
    epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, nullptr);
    close(fd);
  }
}

RawHttp::Origin* RawHttp::Target(const std::string& url, std::string& path, std::string& error) {
  if (auto it = targets_.find(url); it != targets_.end()) {
    path = it->second.second;
    return it->second.first;
  }
  constexpr std::string_view kScheme = "http://";
  if (url.compare(0, kScheme.size(), kScheme) != 0) {
    error = "not an http:// URL: " + url;
    return nullptr;
  }
  std::string rest = url.substr(kScheme.size());
  size_t slash = rest.find_first_of("/?");
  std::string authority = rest.substr(0, slash);
  path = slash == std::string::npos ? "/" : rest.substr(slash);
  if (path[0] == '?') path = "/" + path;
  if (authority.empty() || authority.find('@') != std::string::npos) {
    error = "unsupported URL authority: " + url;
    return nullptr;
  }
  std::string host, port = "80";
  if (authority[0] == '[') {
    size_t close_bracket = authority.find(']');
    if (close_bracket == std::string::npos) {
      error = "bad IPv6 address in URL: " + url;
      return nullptr;
    }
    host = authority.substr(1, close_bracket - 1);
    if (close_bracket + 1 < authority.size() && authority[close_bracket + 1] == ':')
      port = authority.substr(close_bracket + 2);
  } else {
    size_t colon = authority.rfind(':');
    host = authority.substr(0, colon);
    if (colon != std::string::npos) port = authority.substr(colon + 1);
  }
  std::string key = host + "|" + port;
  auto& o = origins_[key];
  if (!o) {
    o = std::make_unique<Origin>();
    o->host = host;
    o->port = port;
    o->host_header = authority;
  }
  targets_[url] = {o.get(), path};
  return o.get();
}

void RawHttp::Submit(HttpRequest request, TimePoint now) {
  auto t = std::make_unique<Transfer>();
  t->start = now;
  t->deadline = now + request.timeout;
  t->request = std::move(request);
  ++running_;
  if (auto st = CheckRequest(t->request); !st) {
    Answer(*t, 0, "", st.error().message, now);
    return;
  }
  std::string path, error;
  t->origin = Target(t->request.url, path, error);
  if (t->origin == nullptr) {
    Answer(*t, 0, "", error, now);
    return;
  }
  const HttpRequest& r = t->request;
  std::string& w = t->wire;
  w.reserve(r.body.size() + 512);
  w += r.post ? "POST " : "GET ";
  w += path;
  w += " HTTP/1.1\r\nHost: ";
  w += t->origin->host_header;
  w += "\r\n";
  for (const auto& [k, v] : r.headers) {
    w += k;
    w += ": ";
    w += v;
    w += "\r\n";
  }
  if (r.post) {
    w += "Content-Length: ";
    w += std::to_string(r.body.size());
    w += "\r\n";
  }
  w += "\r\n";
  if (r.post) w += r.body;
  Start(std::move(t), now);
}

void RawHttp::Start(std::unique_ptr<Transfer> t, TimePoint now) {
  Origin& o = *t->origin;
  Conn* c = nullptr;
  while (!o.idle.empty() && c == nullptr) {
    Conn* cand = o.idle.back();
    o.idle.pop_back();
    if (now - cand->idle_since < kIdleMax)
      c = cand;
    else
      Close(*cand);
  }
  std::string error;
  if (c == nullptr) c = Connect(o, error);
  if (c == nullptr) {
    Answer(*t, 0, "", error, now);
    return;
  }
  c->t = std::move(t);
  c->out_off = 0;
  c->parser.Reset();
  if (c->connected) {
    Arm(*c, c->t->deadline);
    Write(*c, now);
  } else {
    c->connect_deadline = now + kConnectTimeout;
    Arm(*c, std::min(c->t->deadline, c->connect_deadline));
  }
}

void RawHttp::Arm(Conn& c, TimePoint due) {
  c.arm = ++next_arm_;
  dues_.push_back(Due{due, c.fd, c.arm});
  std::push_heap(dues_.begin(), dues_.end(), std::greater<>());
  if (dues_.size() > 2 * running_ + 1024) {
    std::erase_if(dues_, [this](const Due& d) { return !Current(d); });
    std::make_heap(dues_.begin(), dues_.end(), std::greater<>());
  }
}

bool RawHttp::Current(const Due& d) const {
  auto it = conns_.find(d.fd);
  return it != conns_.end() && it->second->t && it->second->arm == d.arm;
}

RawHttp::Conn* RawHttp::Connect(Origin& o, std::string& error) {
  auto now = std::chrono::steady_clock::now();
  if (o.addrlen == 0 || (!o.literal && now - o.resolved_at >= kResolveTtl)) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV | AI_NUMERICHOST;
    addrinfo* res = nullptr;
    int rc = getaddrinfo(o.host.c_str(), o.port.c_str(), &hints, &res);
    o.literal = rc == 0;
    if (rc != 0) {
      // A name: resolved here, on the engine thread, once a minute (blocking, but rare).
      hints.ai_flags = AI_NUMERICSERV;
      rc = getaddrinfo(o.host.c_str(), o.port.c_str(), &hints, &res);
    }
    if (rc == 0) {
      std::memcpy(&o.addr, res->ai_addr, res->ai_addrlen);
      o.addrlen = static_cast<socklen_t>(res->ai_addrlen);
      o.resolved_at = now;
      freeaddrinfo(res);
    } else if (o.addrlen == 0) {
      error = "cannot resolve " + o.host + ": " + gai_strerror(rc);
      return nullptr;
    }  // else: keep the last address that resolved
  }
  int fd = socket(o.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error = Errno("socket", errno);
    return nullptr;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  int rc = connect(fd, reinterpret_cast<const sockaddr*>(&o.addr), o.addrlen);
  if (rc != 0 && errno != EINPROGRESS) {
    error = Errno(("connect to " + o.host_header).c_str(), errno);
    close(fd);
    return nullptr;
  }
  auto c = std::make_unique<Conn>();
  c->fd = fd;
  c->origin = &o;
  c->connected = rc == 0;
  c->want_write = !c->connected;
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP | (c->want_write ? uint32_t{EPOLLOUT} : 0U);
  ev.data.u64 = kEpollTag | static_cast<uint32_t>(fd);
  epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev);
  Conn* raw = c.get();
  conns_[fd] = std::move(c);
  return raw;
}

void RawHttp::SetWantWrite(Conn& c, bool want) {
  if (c.want_write == want) return;
  c.want_write = want;
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP | (want ? uint32_t{EPOLLOUT} : 0U);
  ev.data.u64 = kEpollTag | static_cast<uint32_t>(c.fd);
  epoll_ctl(epfd_, EPOLL_CTL_MOD, c.fd, &ev);
}

bool RawHttp::Write(Conn& c, TimePoint now) {
  const std::string& w = c.t->wire;
  while (c.out_off < w.size()) {
    ssize_t n = send(c.fd, w.data() + c.out_off, w.size() - c.out_off, MSG_NOSIGNAL);
    if (n > 0) {
      c.out_off += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      SetWantWrite(c, true);
      return true;
    } else {
      Failed(c, Errno("send", errno), now);  // c is gone
      return false;
    }
  }
  SetWantWrite(c, false);
  return true;
}

void RawHttp::OnEvent(int fd, uint32_t events, TimePoint now) {
  auto it = conns_.find(fd);
  if (it == conns_.end()) return;
  Conn& c = *it->second;
  if (!c.t) {
    // Idle: the server closed it (or sent what nobody asked for). Either way it is done.
    auto& idle = c.origin->idle;
    idle.erase(std::remove(idle.begin(), idle.end(), &c), idle.end());
    Close(c);
    return;
  }
  if (!c.connected) {
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      Failed(c, Errno(("connect to " + c.origin->host_header).c_str(), err), now);
      return;
    }
    if ((events & EPOLLOUT) == 0) return;
    c.connected = true;
    Arm(c, c.t->deadline);  // the connect timeout no longer applies
    Write(c, now);
    return;  // the answer comes with a later event
  }
  if ((events & EPOLLOUT) && c.out_off < c.t->wire.size() && !Write(c, now)) return;
  if (events & (EPOLLIN | EPOLLRDHUP | EPOLLERR | EPOLLHUP)) Read(c, now);
}

void RawHttp::Read(Conn& c, TimePoint now) {
  char buf[65536];
  while (true) {
    ssize_t n = recv(c.fd, buf, sizeof buf, 0);
    if (n > 0) {
      auto st = c.parser.Feed(std::string_view(buf, static_cast<size_t>(n)));
      if (st == HttpResponseParser::State::kDone) {
        Complete(c, now);
        return;
      }
      if (st == HttpResponseParser::State::kError) {
        Failed(c, c.parser.error(), now);
        return;
      }
      // Short read: the socket is drained; epoll reports anything that comes later.
      if (static_cast<size_t>(n) < sizeof buf) return;
    } else if (n == 0) {
      if (c.parser.Finish() == HttpResponseParser::State::kDone)
        Complete(c, now);
      else
        Failed(c, c.parser.error(), now);
      return;
    } else if (errno == EINTR) {
      continue;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return;
    } else {
      Failed(c, Errno("recv", errno), now);
      return;
    }
  }
}

void RawHttp::Failed(Conn& c, std::string error, TimePoint now) {
  std::unique_ptr<Transfer> t = std::move(c.t);
  bool retry = c.reused && !c.parser.started() && !t->retried;
  Close(c);
  if (retry) {
    t->retried = true;
    Start(std::move(t), now);
    return;
  }
  Answer(*t, 0, "", std::move(error), now);
}

void RawHttp::Complete(Conn& c, TimePoint now) {
  std::unique_ptr<Transfer> t = std::move(c.t);
  int status = c.parser.status();
  std::string body = c.parser.body();
  if (c.parser.keep_alive() && c.out_off == t->wire.size()) {
    c.reused = true;
    c.idle_since = now;
    c.origin->idle.push_back(&c);
  } else {
    Close(c);
  }
  Answer(*t, status, std::move(body), "", now);
}

void RawHttp::Answer(Transfer& t, int status, std::string body, std::string error, TimePoint now) {
  HttpResponse r;
  r.tag = t.request.tag;
  r.status = status;
  r.body = std::move(body);
  r.error = std::move(error);
  r.seconds = std::chrono::duration<double>(now - t.start).count();
  done_.push_back(std::move(r));
  --running_;
}

void RawHttp::Close(Conn& c) {
  int fd = c.fd;
  epoll_ctl(epfd_, EPOLL_CTL_DEL, fd, nullptr);
  close(fd);
  conns_.erase(fd);  // destroys c
}

void RawHttp::Expire(TimePoint now) {
  while (!dues_.empty() && (dues_.front().at <= now || !Current(dues_.front()))) {
    std::pop_heap(dues_.begin(), dues_.end(), std::greater<>());
    Due d = dues_.back();
    dues_.pop_back();
    if (!Current(d)) continue;
    Conn& c = *conns_.at(d.fd);
    std::unique_ptr<Transfer> t = std::move(c.t);
    std::string what = c.connected ? "no answer within " : "no connection within ";
    auto limit = c.connected ? t->request.timeout : kConnectTimeout;
    Close(c);
    Answer(*t, 0, "", what + std::to_string(limit.count()) + " ms", now);
  }
  if (now - last_sweep_ < std::chrono::seconds(1)) return;
  last_sweep_ = now;
  for (auto& [key, o] : origins_) {
    // Oldest first: once one is young enough, the rest are too.
    while (!o->idle.empty() && now - o->idle.front()->idle_since >= kIdleMax) {
      Conn* c = o->idle.front();
      o->idle.erase(o->idle.begin());
      Close(*c);
    }
  }
}

std::optional<RawHttp::TimePoint> RawHttp::NextDeadline() const {
  // Expire() leaves a current entry on top, or none: an earlier stale one would only wake the
  // pool early, once.
  if (dues_.empty()) return std::nullopt;
  return dues_.front().at;
}

void RawHttp::TakeDone(std::vector<HttpResponse>& out) {
  for (auto& r : done_) out.push_back(std::move(r));
  done_.clear();
}

}  // namespace replayer
