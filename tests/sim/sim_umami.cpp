// The simulated Umami processes (2.10.0 and 3.1.0, as Umami's send route and schema make them
// answer) and the HTTP between them and the replayer.
#include <cstdio>
#include <unordered_set>

#include "replayer/classifier.h"
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

void World::AnswerSend(int inst, uint64_t epoch, uint64_t id, uint64_t sent_seq, TimePoint t,
                       UmamiAnswer a) {
  At(t, [this, inst, epoch, id, sent_seq, a = std::move(a)] {
    Instance& I = *inst_[inst];
    if (I.alive && I.epoch == epoch) {
      auto s = I.sends.find(id);
      if (s != I.sends.end()) {
        std::vector<uint64_t> seqs = std::move(s->second);
        I.sends.erase(s);
        const EventRecord& r = events_[msgs_[seqs.front() - 1]->index];
        if (--I.lane_sends[r.lane] == 0) I.lane_sends.erase(r.lane);
        if (replayer::ClassifyAnswer(a.status, a.body) == replayer::AnswerAbout::kSite) {
          I.site_unknown_until[r.site] = now_ + replayer::kSiteRecheck;
        }
        if (a.status >= 200 && a.status < 300 && I.core) {
          for (size_t i = 0; i < seqs.size(); ++i) {
            bool row = a.rows.empty() ? a.row : i < a.rows.size() && a.rows[i];
            if (!row) continue;
            ++events_[msgs_[seqs[i] - 1]->index].ok_rows;
            I.finishing.insert(seqs[i]);
          }
        }
      }
    }
    Note(a.status == 0 ? "send: no answer" : "send answered", sent_seq, a.status, inst);
    Feed(inst, epoch, [this, id, a](replayer::EngineCore& c) {
      c.OnSendAnswer(id, replayer::HttpAnswer{a.status, a.body, a.error, 0.01}, now_);
    });
  });
}

UmamiAnswer World::Judge(const EventRecord& rec, int p, const std::string& tok) {
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
  } else if (rec.kind == Kind::kUnknownSite && tok.empty()) {
    // Umami looks the website up (a read: it works read-only too) and does not hold it.
    std::string id = "0000000" + std::to_string(rec.site) + "-aaaa-4bbb-8ccc-000000000000";
    a = v31 ? UmamiAnswer{400,
                          R"({"error":{"message":"Website not found.","code":"bad-request",)"
                          R"("status":400}})",
                          "", false}
            : UmamiAnswer{403, "Website not found: " + id + ".", "", false};
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
  } else {
    a = {500, "unexpected", "", false};
  }
  return a;
}

std::string World::StoredToken(const EventRecord& r, const std::string& tok) const {
  if (sc_.version != Version::k3_1) return Token('s', Mix(r.site, r.visitor));
  // 3.1: the visit from the token, else from the session and the event's hour.
  uint64_t session = Mix(Mix(r.site, r.visitor), r.accepted_ms / (30LL * 24 * 60 * kMinute));
  uint64_t visit = 0;
  if (!TokenId(tok, 'v', &visit)) visit = Mix(session, r.accepted_ms / (60 * kMinute));
  return Token('v', visit);
}

void World::HttpSend(int inst, uint64_t epoch, const replayer::SendCmd& cmd) {
  const Msg& m = *msgs_[cmd.stream_seq - 1];
  int index = m.index;
  const EventRecord& rec = events_[index];
  int p = cmd.process;
  ++umami_[p]->requests;
  const std::string* token = HeaderOf(cmd, "x-umami-cache");
  std::string tok = token ? *token : "";
  uint64_t sent_seq = cmd.stream_seq;
  if (rec.kind == Kind::kUnknownSite) {
    ++stats_.unknown_site_sends;
    const auto& until = inst_[inst]->site_unknown_until;
    if (auto b = until.find(rec.site); b != until.end() && now_ < b->second) {
      Fail("an event (seq " + std::to_string(sent_seq) +
           ") of a website Umami answered \"not found\" for was sent again within " +
           std::to_string(replayer::kSiteRecheck.count() / 1000) + " s");
      return;
    }
  }
  auto answer_at = [this, inst, epoch, id = cmd.send_id, sent_seq, p, lane = rec.lane](
                       TimePoint t, UmamiAnswer a) {
    NoteMaybeDbFailure(p, lane, a);
    AnswerSend(inst, epoch, id, sent_seq, t, std::move(a));
  };
  TimePoint timeout_at = now_ + cmd.timeout;
  if (FaultActive(Fault::kDown, p)) {
    answer_at(now_ + milliseconds(0), UmamiAnswer{0, "", "Couldn't connect to server", false});
    return;
  }
  if (FaultActive(Fault::kHung, p)) {
    // Never answered, or a timeout: a failure the core may count either way.
    NoteMaybeDbFailure(p, rec.lane, UmamiAnswer{0, "", "Timeout was reached", false});
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
  UmamiAnswer a = Judge(rec, p, tok);
  if (a.status == 200 && a.row && FaultActive(Fault::kOddReply, p)) {
    a.body = "<html>" + std::string(70'000, 'x') + "</html>";
  }
  // The store (and the token it answers with) happens when Umami processes the request.
  bool row = a.row;
  int status = a.status;
  bool odd = !a.body.empty() && a.body[0] == '<';
  At(done_at, [this, index, p, tok, row, status, odd, answer_at, timeout_at, a]() mutable {
    if (row) Store(index, p, status == 200, tok, -1, 0);
    if (status == 200 && row && !odd) {
      std::string t = StoredToken(events_[index], tok);
      a.body = sc_.version == Version::k3_1
                   ? R"({"cache":")" + t + R"(","sessionId":"s","visitId":"v"})"
                   : t;
    }
    if (now_ < timeout_at) answer_at(now_, std::move(a));  // else the client timed out
  });
  if (done_at > timeout_at) {
    // The answer comes too late: the client times out first (the store still happens).
    answer_at(timeout_at, UmamiAnswer{0, "", "Timeout was reached", false});
  }
}

void World::HttpBatch(int inst, uint64_t epoch, const replayer::SendCmd& cmd) {
  int p = cmd.process;
  ++umami_[p]->requests;
  const std::string* token = HeaderOf(cmd, "x-umami-cache");
  std::string tok = token ? *token : "";
  uint64_t id = cmd.send_id, sent_seq = cmd.stream_seq;
  std::vector<int> indexes;
  for (uint64_t seq : cmd.batch_seqs) indexes.push_back(msgs_[seq - 1]->index);
  TimePoint timeout_at = now_ + cmd.timeout;
  UmamiAnswer timed_out{0, "", "Timeout was reached", false};
  // A whole batch that fails is its head's failure (its visitor's).
  NoteMaybeDbFailure(p, events_[indexes.front()].lane, timed_out);
  if (FaultActive(Fault::kDown, p)) {
    AnswerSend(inst, epoch, id, sent_seq, now_, {0, "", "Couldn't connect to server", false});
    return;
  }
  if (FaultActive(Fault::kHung, p)) {
    // Processed much later (a lock wait), or cut off by the process's end: the first k events
    // stored after the client's timeout, the rest never.
    if (rng_.Chance(0.3)) {
      auto later = now_ + milliseconds(rng_.Int(0, 2 * cmd.timeout.count()));
      size_t k = static_cast<size_t>(rng_.Int(1, static_cast<int64_t>(indexes.size())));
      At(later, [this, indexes, k, p, tok] {
        for (size_t i = 0; i < k; ++i) Store(indexes[i], p, false, tok, -1, 0);
      });
    }
    if (!rng_.Chance(0.2)) AnswerSend(inst, epoch, id, sent_seq, timeout_at, timed_out);
    return;
  }
  milliseconds latency(rng_.Int(2, 20));
  if (FaultActive(Fault::kSlow, p)) latency += milliseconds(rng_.Int(1000, 40'000));
  if (sc_.version != Version::k3_1 || FaultActive(Fault::kNoBatch, p)) {
    // No such route (2.10, or a downgraded process): Next.js's 404 page; nothing stored.
    UmamiAnswer none{404, "<!DOCTYPE html><title>404: This page could not be found.</title>", "",
                     false};
    TimePoint at = now_ + latency;
    AnswerSend(inst, epoch, id, sent_seq, at > timeout_at ? timeout_at : at,
               at > timeout_at ? timed_out : none);
    return;
  }
  // 3.1: each element through the send handler in order, with the outer request's headers;
  // it goes on after an element fails. Decided now, stored when processed.
  std::vector<UmamiAnswer> each;
  for (int index : indexes) {
    each.push_back(Judge(events_[index], p, tok));
    NoteMaybeDbFailure(p, events_[index].lane, each.back());
    latency += milliseconds(rng_.Int(1, 10));
  }
  TimePoint done_at = now_ + latency;
  bool odd = FaultActive(Fault::kOddReply, p);
  At(done_at, [this, inst, epoch, id, sent_seq, indexes, each, p, tok, odd, timeout_at] {
    UmamiAnswer reply{200, "", "", false};
    std::string details, cache;
    size_t errors = 0;
    for (size_t i = 0; i < each.size(); ++i) {
      const UmamiAnswer& e = each[i];
      bool ok = e.status >= 200 && e.status < 300;
      if (e.row) Store(indexes[i], p, ok, tok, -1, 0);
      reply.rows.push_back(ok && e.row);
      if (!ok) {
        ++errors;
        std::string response = !e.body.empty() && e.body[0] == '{'
                                   ? e.body
                                   : R"({"error":{"message":")" + e.body + R"(","status":)" +
                                         std::to_string(e.status) + "}}";
        details += (details.empty() ? "" : ",") + std::string(R"({"index":)") + std::to_string(i) +
                   R"(,"response":)" + response + "}";
      } else if (e.row && cache.empty()) {
        cache = odd ? std::string(70'000, 'x') : StoredToken(events_[indexes[i]], tok);
      }
    }
    reply.body = R"({"size":)" + std::to_string(each.size()) + R"(,"processed":)" +
                 std::to_string(each.size() - errors) + R"(,"errors":)" + std::to_string(errors) +
                 R"(,"details":[)" + details + R"(],"cache":)" +
                 (cache.empty() ? std::string("null") : "\"" + cache + "\"") + "}";
    if (now_ < timeout_at) AnswerSend(inst, epoch, id, sent_seq, now_, std::move(reply));
  });
  if (done_at > timeout_at) AnswerSend(inst, epoch, id, sent_seq, timeout_at, timed_out);
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

namespace sim {

void World::NoteMaybeDbFailure(int process, const std::string& lane, const UmamiAnswer& a) {
  if (a.status >= 200 && a.status < 300) return;
  if (replayer::ClassifyAnswer(a.status, a.body) != replayer::AnswerAbout::kOther) return;
  if (maybe_db_failures_.size() < umami_.size()) maybe_db_failures_.resize(umami_.size());
  auto& q = maybe_db_failures_[process];
  q.emplace_back(now_, lane);
  // A write fault's run is a minute of decisions; a decision follows its answer by at most a
  // check (the send timeout and its grace): older answers can no longer matter.
  while (!q.empty() && now_ - q.front().first > milliseconds(60'000) + 2 * sc_.core.send_timeout +
                                                    milliseconds(10'000)) {
    q.pop_front();
  }
}

void World::CheckWriteFaultEvidence(int process) {
  ++stats_.invariant_checks;
  auto window = milliseconds(60'000) + 2 * sc_.core.send_timeout + milliseconds(10'000);
  std::unordered_set<std::string> lanes;
  for (size_t p = 0; p < maybe_db_failures_.size(); ++p) {
    if (process >= 0 && static_cast<int>(p) != process) continue;
    for (const auto& [at, lane] : maybe_db_failures_[p]) {
      if (now_ - at <= window) lanes.insert(lane);
    }
  }
  if (lanes.size() < replayer::WriteFaultRun::kMinVisitors) {
    Fail("a write fault was declared (process " + std::to_string(process) + ") with " +
         std::to_string(lanes.size()) +
         " visitors failed by answers that may be about the database in its window");
  }
}

}  // namespace sim
