#include "replayer/http_curl.h"

#include <curl/curl.h>
#include <sys/epoll.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <string>

#include "replayer/http_check.h"
#include "replayer/http_parse.h"

namespace replayer {
namespace {

constexpr size_t kMaxBody = 64 * 1024;
constexpr long kConnectTimeoutMs = 2000;
constexpr long kIdleMaxSeconds = 4;  // below Node's default keep-alive timeout of 5 s

// curl sends its own "Expect: 100-continue" (a round trip on larger bodies) and "Accept: */*"
// unless told not to: an empty value removes a header curl would add. Mutable because
// curl_slist holds a char*; curl never writes through it.
char kNoExpect[] = "Expect:";
char kNoAccept[] = "Accept:";

struct GlobalInit {
  GlobalInit() { curl_global_init(CURL_GLOBAL_DEFAULT); }
};

// One per easy handle, reused with it: the strings and vectors keep their capacity, so a
// request whose headers fit what an earlier one used allocates nothing here.
struct Transfer {
  CURL* easy = nullptr;
  HttpRequest request;
  std::string body;
  std::vector<std::string> lines;  // "Name: value", the storage the header list points into
  std::vector<curl_slist> nodes;   // our own list (curl only reads it)
  std::string url_set;             // what the handle holds now: set again only when it changes
  long timeout_set = -1;
  CurlHttp::TimePoint start{};
  char error[CURL_ERROR_SIZE] = {0};
  // The response head as curl hands it over, line by line, checked with the shared rules.
  enum class Head { kStatus, kFields, kTrailers } head = Head::kStatus;
  bool interim = false;
  ResponseHead fields;
  std::string head_error;  // why a line was refused: the transfer's error

  void Restart() {
    body.clear();
    error[0] = 0;
    head = Head::kStatus;
    interim = false;
    fields.Reset();
    head_error.clear();
  }
};

size_t OnData(char* ptr, size_t size, size_t nmemb, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t n = size * nmemb;
  if (t->body.size() < kMaxBody) t->body.append(ptr, std::min(n, kMaxBody - t->body.size()));
  return n;
}

// Every line of every response head (1xx ones too, and trailers), CRLF included. A line the
// shared rules refuse ends the transfer (returning less than `n` makes curl stop).
size_t OnHeader(char* ptr, size_t size, size_t nmemb, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t n = size * nmemb;
  std::string_view line(ptr, n);
  auto fail = [&](std::string why) -> size_t {
    t->head_error = std::move(why);
    return 0;
  };
  if (line.size() < 2 || line.substr(line.size() - 2) != "\r\n" ||
      line.substr(0, line.size() - 2).find_first_of("\r\n") != std::string_view::npos) {
    return fail("a response line does not end with CRLF");
  }
  line.remove_suffix(2);
  switch (t->head) {
    case Transfer::Head::kStatus: {
      auto status = ParseStatusLine(line);
      if (!status) return fail("the answer is not an HTTP/1.0 or 1.1 status line");
      if (status->code == 101) return fail("unexpected 101 Switching Protocols");
      t->interim = status->code < 200;
      t->fields.Reset();
      t->head = Transfer::Head::kFields;
      return n;
    }
    case Transfer::Head::kFields:
      if (!line.empty()) return t->fields.AddField(line) ? n : fail(t->fields.error());
      if (!t->fields.Finish()) return fail(t->fields.error());
      t->head = t->interim ? Transfer::Head::kStatus : Transfer::Head::kTrailers;
      return n;
    case Transfer::Head::kTrailers:
      return line.empty() || IsValidFieldLine(line) ? n : fail("a trailer field is malformed");
  }
  return n;
}

}  // namespace

struct CurlHttp::Impl {
  int epfd;
  CURLM* multi = nullptr;
  std::optional<TimePoint> timer;                // curl's timer, when set
  std::vector<std::unique_ptr<Transfer>> owned;  // every handle made, idle or running
  std::vector<Transfer*> idle;
  size_t running = 0;
  std::vector<HttpResponse> done;
  std::string ca_file;

  Impl(int fd, std::string ca) : epfd(fd), ca_file(std::move(ca)) {}
  void Collect(TimePoint now);
  void Answer(Transfer& t, int status, std::string error, TimePoint now);
  Transfer* Take();

  static int OnSocket(CURL*, curl_socket_t fd, int what, void* user, void*) {
    auto* self = static_cast<Impl*>(user);
    if (what == CURL_POLL_REMOVE) {
      epoll_ctl(self->epfd, EPOLL_CTL_DEL, fd, nullptr);
      return 0;
    }
    epoll_event ev{};
    ev.data.u64 = kEpollTag | static_cast<uint32_t>(fd);
    if (what == CURL_POLL_IN || what == CURL_POLL_INOUT) ev.events |= EPOLLIN;
    if (what == CURL_POLL_OUT || what == CURL_POLL_INOUT) ev.events |= EPOLLOUT;
    if (epoll_ctl(self->epfd, EPOLL_CTL_MOD, fd, &ev) != 0 && errno == ENOENT) {
      epoll_ctl(self->epfd, EPOLL_CTL_ADD, fd, &ev);
    }
    return 0;
  }

  static int OnTimer(CURLM*, long timeout_ms, void* user) {
    auto* self = static_cast<Impl*>(user);
    if (timeout_ms < 0)
      self->timer.reset();
    else
      self->timer = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    return 0;
  }
};

CurlHttp::CurlHttp(int epfd, std::string ca_file)
    : impl_(std::make_unique<Impl>(epfd, std::move(ca_file))) {
  static GlobalInit init;
  CURLM* m = curl_multi_init();
  if (m == nullptr) throw std::runtime_error("curl_multi_init failed");
  impl_->multi = m;
  curl_multi_setopt(m, CURLMOPT_MAXCONNECTS, 512L);
  curl_multi_setopt(m, CURLMOPT_SOCKETFUNCTION, &Impl::OnSocket);
  curl_multi_setopt(m, CURLMOPT_SOCKETDATA, impl_.get());
  curl_multi_setopt(m, CURLMOPT_TIMERFUNCTION, &Impl::OnTimer);
  curl_multi_setopt(m, CURLMOPT_TIMERDATA, impl_.get());
}

CurlHttp::~CurlHttp() {
  auto& im = *impl_;
  for (auto& t : im.owned) {
    curl_multi_remove_handle(im.multi, t->easy);  // a no-op for an idle handle
    curl_easy_cleanup(t->easy);
  }
  curl_multi_cleanup(im.multi);
}

size_t CurlHttp::running() const { return impl_->running; }

Transfer* CurlHttp::Impl::Take() {
  if (!idle.empty()) {
    Transfer* t = idle.back();
    idle.pop_back();
    t->Restart();
    return t;
  }
  CURL* easy = curl_easy_init();
  if (easy == nullptr) return nullptr;
  Transfer* t = owned.emplace_back(std::make_unique<Transfer>()).get();
  t->easy = easy;
  // Set once per handle: they survive between requests (no curl_easy_reset).
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, kConnectTimeoutMs);
  curl_easy_setopt(easy, CURLOPT_MAXAGE_CONN, kIdleMaxSeconds);
  curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, OnData);
  curl_easy_setopt(easy, CURLOPT_WRITEDATA, t);
  curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(easy, CURLOPT_HEADERDATA, t);
  // HTTP/1.1 on both schemes, as the hand-written client speaks it: one set of head rules.
  curl_easy_setopt(easy, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1));
  // A proxy's CONNECT answer is not the response: its lines are not handed to OnHeader.
  curl_easy_setopt(easy, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1L);
  curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, t->error);
  curl_easy_setopt(easy, CURLOPT_PRIVATE, t);
  if (!ca_file.empty()) curl_easy_setopt(easy, CURLOPT_CAINFO, ca_file.c_str());
  return t;
}

void CurlHttp::Submit(HttpRequest request, TimePoint now) {
  auto& im = *impl_;
  ++im.running;
  if (auto st = CheckRequest(request); !st) {
    Transfer t;
    t.request = std::move(request);
    t.start = now;
    im.Answer(t, 0, st.error().message, now);
    return;
  }
  Transfer* t = im.Take();
  if (!t) {
    Transfer failed;
    failed.request = std::move(request);
    failed.start = now;
    im.Answer(failed, 0, "curl_easy_init failed", now);
    return;
  }
  t->request = std::move(request);
  t->start = now;
  const HttpRequest& r = t->request;
  CURL* easy = t->easy;
  if (t->url_set != r.url) {
    t->url_set = r.url;
    curl_easy_setopt(easy, CURLOPT_URL, t->url_set.c_str());
  }
  if (long ms = static_cast<long>(r.timeout.count()); ms != t->timeout_set) {
    t->timeout_set = ms;
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, ms);
  }
  if (r.post) {
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, r.body.data());
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE, static_cast<long>(r.body.size()));
  } else {
    curl_easy_setopt(easy, CURLOPT_HTTPGET, 1L);
  }
  size_t n = r.headers.size();
  if (t->lines.size() < n) t->lines.resize(n);
  t->nodes.resize(n + 2);
  t->nodes[0].data = kNoExpect;
  t->nodes[1].data = kNoAccept;
  for (size_t i = 0; i < n; ++i) {
    const auto& [k, v] = r.headers[i];
    // "Name;" is curl's way to send a header with an empty value ("Name:" would remove it).
    t->lines[i].assign(k).append(v.empty() ? ";" : ": ").append(v);
    t->nodes[i + 2].data = t->lines[i].data();
  }
  for (size_t i = 0; i + 1 < t->nodes.size(); ++i) t->nodes[i].next = &t->nodes[i + 1];
  t->nodes.back().next = nullptr;
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, t->nodes.data());
  CURLMcode rc = curl_multi_add_handle(im.multi, easy);
  if (rc != CURLM_OK) {
    im.Answer(*t, 0, std::string("curl_multi_add_handle: ") + curl_multi_strerror(rc), now);
    im.idle.push_back(t);
  }
}

void CurlHttp::OnEvent(int fd, uint32_t events, TimePoint now) {
  int mask = 0;
  if (events & EPOLLIN) mask |= CURL_CSELECT_IN;
  if (events & EPOLLOUT) mask |= CURL_CSELECT_OUT;
  if (events & (EPOLLERR | EPOLLHUP)) mask |= CURL_CSELECT_ERR;
  int still = 0;
  curl_multi_socket_action(impl_->multi, fd, mask, &still);
  impl_->Collect(now);
}

void CurlHttp::Expire(TimePoint now) {
  auto& im = *impl_;
  if (im.timer && *im.timer <= now) {
    im.timer.reset();  // before the call: curl may set it again from inside
    int still = 0;
    curl_multi_socket_action(im.multi, CURL_SOCKET_TIMEOUT, 0, &still);
  }
  im.Collect(now);
}

std::optional<CurlHttp::TimePoint> CurlHttp::NextDeadline() const { return impl_->timer; }

void CurlHttp::Impl::Collect(TimePoint now) {
  int left = 0;
  while (CURLMsg* m = curl_multi_info_read(multi, &left)) {
    if (m->msg != CURLMSG_DONE) continue;
    CURL* easy = m->easy_handle;
    Transfer* t = nullptr;
    curl_easy_getinfo(easy, CURLINFO_PRIVATE, &t);
    CURLcode result = m->data.result;  // m is invalid once the handle is removed
    curl_multi_remove_handle(multi, easy);
    if (result == CURLE_OK && t->head != Transfer::Head::kTrailers) {
      // curl takes a connection closed inside the head for the end of it.
      Answer(*t, 0, "the connection closed in the middle of the response head", now);
    } else if (result == CURLE_OK) {
      long code = 0;
      curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &code);
      Answer(*t, static_cast<int>(code), "", now);
    } else {
      std::string why = !t->head_error.empty() ? t->head_error
                        : t->error[0]          ? std::string(t->error)
                                               : std::string(curl_easy_strerror(result));
      Answer(*t, 0, std::move(why), now);
    }
    idle.push_back(t);
  }
}

void CurlHttp::Impl::Answer(Transfer& t, int status, std::string error, TimePoint now) {
  HttpResponse r;
  r.tag = t.request.tag;
  r.status = status;
  r.body.swap(t.body);
  r.error = std::move(error);
  r.seconds = std::chrono::duration<double>(now - t.start).count();
  done.push_back(std::move(r));
  --running;
}

void CurlHttp::TakeDone(std::vector<HttpResponse>& out) {
  for (auto& r : impl_->done) out.push_back(std::move(r));
  impl_->done.clear();
}

}  // namespace replayer
