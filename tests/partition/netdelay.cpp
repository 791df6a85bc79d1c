// netdelay: holds every packet of one NFQUEUE queue for a fixed delay, then lets it through.
// The partition tests' stand-in for `tc netem delay` on kernels built without sch_netem (the
// CI machine's is one): an iptables rule sends a namespace's traffic to the queue
// (`-j NFQUEUE --queue-num N`), this process, run inside that namespace, gives each packet its
// verdict `delay` ms after it arrived, in arrival order. Loss is an iptables rule of its own
// (`-m statistic --mode random --probability p -j DROP`), placed before the queue's.
//
//   netdelay QUEUE DELAY_MS      runs until SIGTERM/SIGINT; prints "ready" once bound
//
// The queue fails open (NFQA_CFG_F_FAIL_OPEN): packets that do not fit the queue pass at once
// rather than being dropped, so the process never adds loss the test did not ask for.
// Single-threaded: the callback and the verdicts run on main's thread.
#include <arpa/inet.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>
#include <poll.h>
#include <signal.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <string>

namespace {

using Clock = std::chrono::steady_clock;

struct Held {
  uint32_t id;
  Clock::time_point due;
};

struct State {
  std::chrono::milliseconds delay{0};
  std::deque<Held> held;  // arrival order = due order (one fixed delay)
};

volatile sig_atomic_t g_stop = 0;
void OnSignal(int) { g_stop = 1; }

int OnPacket(nfq_q_handle*, nfgenmsg*, nfq_data* nfa, void* data) {
  auto* state = static_cast<State*>(data);
  nfqnl_msg_packet_hdr* ph = nfq_get_msg_packet_hdr(nfa);
  if (ph == nullptr) return 0;
  state->held.push_back({ntohl(ph->packet_id), Clock::now() + state->delay});
  return 0;
}

struct HandleCloser {
  void operator()(nfq_handle* h) const { nfq_close(h); }
};
struct QueueCloser {
  void operator()(nfq_q_handle* q) const { nfq_destroy_queue(q); }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: netdelay QUEUE DELAY_MS\n");
    return 2;
  }
  const int queue = std::atoi(argv[1]);
  State state;
  state.delay = std::chrono::milliseconds(std::atoi(argv[2]));
  std::unique_ptr<nfq_handle, HandleCloser> h(nfq_open());
  if (!h) {
    std::perror("netdelay: nfq_open");
    return 1;
  }
  std::unique_ptr<nfq_q_handle, QueueCloser> q(
      nfq_create_queue(h.get(), static_cast<uint16_t>(queue), &OnPacket, &state));
  if (!q) {
    std::perror("netdelay: nfq_create_queue");
    return 1;
  }
  // Metadata only: the verdict needs the packet id, not its bytes.
  if (nfq_set_mode(q.get(), NFQNL_COPY_META, 0) < 0 || nfq_set_queue_maxlen(q.get(), 65536) < 0 ||
      nfq_set_queue_flags(q.get(), NFQA_CFG_F_FAIL_OPEN, NFQA_CFG_F_FAIL_OPEN) < 0) {
    std::perror("netdelay: queue settings");
    return 1;
  }
  signal(SIGTERM, OnSignal);
  signal(SIGINT, OnSignal);
  const int fd = nfq_fd(h.get());
  std::printf("ready\n");
  std::fflush(stdout);
  char buf[65536];
  while (g_stop == 0) {
    int timeout_ms = 100;
    if (!state.held.empty()) {
      auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(state.held.front().due -
                                                                        Clock::now());
      timeout_ms = static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(100, wait.count())));
    }
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) > 0) {
      ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n > 0) nfq_handle_packet(h.get(), buf, static_cast<int>(n));
      // ENOBUFS: the kernel dropped queue messages it could not hand over; with fail-open
      // the packets behind them passed, so there is nothing to do.
    }
    auto now = Clock::now();
    while (!state.held.empty() && state.held.front().due <= now) {
      nfq_set_verdict(q.get(), state.held.front().id, NF_ACCEPT, 0, nullptr);
      state.held.pop_front();
    }
  }
  // Whatever is still held passes: stopping the delay must not drop packets.
  for (const Held& p : state.held) nfq_set_verdict(q.get(), p.id, NF_ACCEPT, 0, nullptr);
  return 0;
}
