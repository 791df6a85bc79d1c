// The simulated Umami processes (2.10.0 and 3.1.0, as Umami's send route and schema make them
// answer) and the HTTP between them and the replayer.
#include <cstdio>

#include "replayer/umami_reply.h"
#include "tests/sim/sim_internal.h"

namespace sim {
namespace {

uint64_t Mix(uint64_t a, uint64_t b) {
  uint64_t z = a * 0x9e3779b97f4a7c15ULL ^ (b + 0x7f4a7c159e3779b9ULL + (a << 6) + (a >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  return z ^ (z >> 31);
}

std::string Hex(uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// The simulated Umami's tokens carry what the real ones do (3.1: the visit; 2.10: the session),
// readable by the simulated Umami alone, in a JWT's shape.
std::string Token(char what, uint64_t id) {
  return "eyJhbGciOiJIUzI1NiJ9." + std::string(1, what) + Hex(id) + ".c2lnbmF0dXJl";
}

bool TokenId(const std::string& token, char what, uint64_t* id) {
  size_t a = token.find('.');
  if (a == std::string::npos || a + 18 > token.size() || token[a + 1] != what) return false;
  *id = std::stoull(token.substr(a + 2, 16), nullptr, 16);
  return true;
}

const std::string* HeaderOf(const replayer::SendCmd& c, const char* name) {
  for (const auto& [k, v] : c.headers) {
    if (k == name) return &v;
  }
  return nullptr;
}

}  // namespace

void World::HttpSend(int inst, uint64_t epoch, const replayer::SendCmd& cmd) {
  const Msg& m = *msgs_[cmd.stream_seq - 1];
  int index = m.index;
  const EventRecord& rec = events_[index];
  int p = cmd.process;
  ++umami_[p]->requests;
  const std::string* token = HeaderOf(cmd, "x-umami-cache");
  std::string tok = token ? *token : "";
  uint64_t sent_seq = cmd.stream_seq;
  auto answer_at = [this, inst, epoch, id = cmd.send_id, sent_seq](TimePoint t, UmamiAnswer a) {
    At(t, [this, inst, epoch, id, sent_seq, a = std::move(a)] {
      Instance& I = *inst_[inst];
      if (I.alive && I.epoch == epoch) {
        auto s = I.sends.find(id);
        if (s != I.sends.end()) {
          uint64_t seq = s->second;
          const EventRecord& r = events_[msgs_[seq - 1]->index];
          if (--I.lane_sends[r.lane] == 0) I.lane_sends.erase(r.lane);
          I.sends.erase(s);
          if (a.status >= 200 && a.status < 300 && I.core) {
            if (a.row) {
              ++events_[msgs_[seq - 1]->index].ok_rows;
              I.finishing.insert(seq);
            }
          }
        }
      }
      Note(a.status == 0 ? "send: no answer" : "send answered", sent_seq, a.status, inst);
      Feed(inst, epoch, [this, id, a](replayer::EngineCore& c) {
        c.OnSendAnswer(id, replayer::HttpAnswer{a.status, a.body, a.error, 0.01}, now_);
      });
    });
  };
  TimePoint timeout_at = now_ + cmd.timeout;
  if (FaultActive(Fault::kDown, p)) {
    answer_at(now_ + milliseconds(0), UmamiAnswer{0, "", "Couldn't connect to server", false});
    return;
  }
  if (FaultActive(Fault::kHung, p)) {
    // Some hung requests are processed much later (a lock wait): stored after the timeout.
    if (rng_.Chance(0.3)) {
      auto later = now_ + milliseconds(rng_.Int(0, 2 * cmd.timeout.count()));
      At(later, [this, index, p, tok] { Store(index, p, false, tok, -1, 0); });
    }
    // One request in five is never answered by the HTTP client at all (the core's own deadline
    // must end it); the rest time out.
    if (!rng_.Chance(0.2)) answer_at(timeout_at, UmamiAnswer{0, "", "Timeout was reached", false});
    return;
  }
  milliseconds latency(rng_.Int(2, 20));
  if (FaultActive(Fault::kSlow, p)) latency += milliseconds(rng_.Int(1000, 40'000));
  TimePoint done_at = now_ + latency;
  // What Umami does with it, at done_at (decided now; the store happens then).
  UmamiAnswer a;
  bool v31 = sc_.version == Version::k3_1;
  bool storable = rec.kind == Kind::kGood || rec.kind == Kind::kHalfWrite ||
                  (v31 && (rec.kind == Kind::kIdentify || rec.kind == Kind::kLongUrl));
  if (rec.kind == Kind::kBot) {
    a = {200, v31 ? R"({"beep":"boop"})" : "{}", "", false};
  } else if (FaultActive(Fault::kDbDown, p)) {
    a = v31 ? UmamiAnswer{500, R"({"error":"DatabaseNotReachable"})", "", false}
            : (tok.empty()
                   ? UmamiAnswer{400, "Can't reach database server at `db`:`5432`", "", false}
                   : UmamiAnswer{500, "Internal Server Error", "", false});
  } else if (rec.kind == Kind::kValidation) {
    a = {400,
         v31 ? R"({"error":{"message":"Too big: expected string to have <=50 characters"}})"
             : "name must be at most 50 characters",
         "", false};
  } else if (!v31 && rec.kind == Kind::kLongUrl) {
    a = {400, "url must be at most 500 characters", "", false};
  } else if (!v31 && rec.kind == Kind::kIdentify) {
    a = {500, "Internal Server Error", "", false};
  } else if (FaultActive(Fault::kReadOnly, p)) {
    a = {(v31 || !tok.empty()) ? 500 : 400, "cannot execute INSERT in a read-only transaction", "",
         false};
    NoteWriteFailure(p, rec.lane);
  } else if (rec.kind == Kind::kHalfWrite) {
    a = {500, "numeric field overflow", "", v31};  // 3.1 wrote the event row first
  } else if (FaultActive(Fault::kHalfWrite, p)) {
    a = {500, "Connection terminated unexpectedly", "", storable};
    NoteWriteFailure(p, rec.lane);
  } else if (storable) {
    a.status = 200;
    a.row = true;
    if (FaultActive(Fault::kOddReply, p)) {
      a.body = "<html>" + std::string(70'000, 'x') + "</html>";
    }
  } else {
    a = {500, "unexpected", "", false};
  }
  // The store (and the token it answers with) happens when Umami processes the request.
  bool row = a.row;
  int status = a.status;
  bool odd = !a.body.empty() && a.body[0] == '<';
  At(done_at, [this, index, p, tok, row, status, odd, answer_at, timeout_at, a]() mutable {
    if (row) Store(index, p, status == 200, tok, -1, 0);
    if (status == 200 && row && !odd) {
      const EventRecord& r = events_[index];
      uint64_t id = 0;
      if (sc_.version == Version::k3_1) {
        // 3.1: the visit from the token, else from the session and the event's hour.
        uint64_t session = Mix(Mix(r.site, r.visitor), r.accepted_ms / (30LL * 24 * 60 * kMinute));
        uint64_t visit = 0;
        if (!TokenId(tok, 'v', &visit)) visit = Mix(session, r.accepted_ms / (60 * kMinute));
        id = visit;
        a.body = R"({"cache":")" + Token('v', visit) + R"(","sessionId":"s","visitId":"v"})";
      } else {
        id = Mix(r.site, r.visitor);
        a.body = Token('s', id);
      }
    }
    if (now_ < timeout_at) answer_at(now_, std::move(a));  // else the client timed out
  });
  if (done_at > timeout_at) {
    // The answer comes too late: the client times out first (the store still happens).
    answer_at(timeout_at, UmamiAnswer{0, "", "Timeout was reached", false});
  }
}

void World::NoteWriteFailure(int p, const std::string& lane) {
  auto& f = write_failures_[p];
  f.emplace_back(now_, lane);
  while (!f.empty() && now_ - f.front().first > std::chrono::seconds(60)) f.pop_front();
}

void World::Store(int index, int process, bool, const std::string& token, int, uint64_t) {
  EventRecord& r = events_[index];
  ++r.rows;
  Note("umami stored a row", static_cast<uint64_t>(index) + 1, process);
  (void)process;
  if (sc_.version != Version::k3_1 || r.kind == Kind::kIdentify) return;
  uint64_t session = Mix(Mix(r.site, r.visitor), r.accepted_ms / (30LL * 24 * 60 * kMinute));
  uint64_t visit = 0;
  if (!TokenId(token, 'v', &visit)) visit = Mix(session, r.accepted_ms / (60 * kMinute));
  auto [it, fresh] = visits_.try_emplace(visit, r.accepted_ms, r.accepted_ms);
  if (!fresh) {
    it->second.first = std::min(it->second.first, r.accepted_ms);
    it->second.second = std::max(it->second.second, r.accepted_ms);
  }
}

void World::HttpCheck(int inst, uint64_t epoch, const replayer::CheckCmd& cmd) {
  int p = cmd.process;
  ++stats_.checks;
  auto answer = [this, inst, epoch, id = cmd.check_id](TimePoint t, replayer::CheckPart part,
                                                       UmamiAnswer a) {
    At(t, [this, inst, epoch, id, part, a = std::move(a)] {
      Feed(inst, epoch, [this, id, part, a](replayer::EngineCore& c) {
        c.OnCheckAnswer(id, part, replayer::HttpAnswer{a.status, a.body, a.error, 0.01}, now_);
      });
    });
  };
  bool v31 = sc_.version == Version::k3_1;
  for (auto part : {replayer::CheckPart::kHeartbeat, replayer::CheckPart::kProbe}) {
    milliseconds timeout = cmd.timeout;
    if (FaultActive(Fault::kDown, p)) {
      answer(now_, part, {0, "", "Couldn't connect to server", false});
      continue;
    }
    if (FaultActive(Fault::kHung, p)) {
      if (!rng_.Chance(0.2)) answer(now_ + timeout, part, {0, "", "Timeout was reached", false});
      continue;
    }
    milliseconds latency(rng_.Int(1, 10));
    if (FaultActive(Fault::kSlow, p)) latency += milliseconds(rng_.Int(1000, 40'000));
    if (latency > timeout) {
      answer(now_ + timeout, part, {0, "", "Timeout was reached", false});
      continue;
    }
    UmamiAnswer a;
    if (part == replayer::CheckPart::kHeartbeat) {
      a = {200, v31 ? R"({"ok":true})" : "", "", false};
    } else if (FaultActive(Fault::kDbDown, p)) {
      a = v31 ? UmamiAnswer{500, R"({"error":"DatabaseNotReachable"})", "", false}
              : UmamiAnswer{400, "Can't reach database server at `db`:`5432`", "", false};
    } else {
      a = v31 ? UmamiAnswer{400,
                            R"({"error":{"message":"Website not found.","code":"bad-request",)"
                            R"("status":400}})",
                            "", false}
              : UmamiAnswer{403, "Website not found: 00000000-0000-4000-8000-000000000000.", "",
                            false};
    }
    answer(now_ + latency, part, std::move(a));
  }
}

}  // namespace sim
