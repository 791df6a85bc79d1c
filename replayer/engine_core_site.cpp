// The engine core's websites Umami does not hold (docs/replayer.md, "Unknown websites").
//
// Umami answers a send for a website it does not hold with "Website not found" (2.10: 403, v3:
// 400): the answer the collection probe passes on, so Umami reached its database and the event
// is not at fault. The event goes to WEB_DLQ at that first answer, with a reason that names the
// site; the site's next events follow without a send until kSiteRecheck has passed, when one of
// them is sent again (the others wait for its answer); a replayed event is sent at once. A store
// of any event of the site ends the block. None of this counts toward the write-fault rule.
#include <string>

#include "replayer/engine_core_state.h"
#include "replayer/event_rules.h"

namespace replayer {

namespace {

std::string SiteReason(const std::string& website) {
  return "umami does not know website " + rules::Excerpt(website, 80);
}

}  // namespace

void EngineCore::State::OnSendFailed(uint64_t eid, Held& h, int status, std::string_view body,
                                     TimePoint now) {
  h.about = ClassifyAnswer(status, body);
  if (h.about == AnswerAbout::kSite) {
    OnSiteUnknown(eid, h, now);
  } else {
    OnFailed(eid, h, now);
  }
}

void EngineCore::State::OnSiteUnknown(uint64_t eid, Held& h, TimePoint now) {
  auto it = sites.find(h.ev.website);
  if (it == sites.end() && sites.size() < kMaxSiteBlocks) {
    it = sites.emplace(h.ev.website, SiteBlock{}).first;
    it->second.since = now;
    Note& n = Tell(Note::Kind::kSiteUnknown);
    n.subject = h.subject;
    n.text = rules::Excerpt(h.ev.website, 80);
    n.detail = h.last_answer;
  }
  if (it != sites.end()) {
    SiteBlock& b = it->second;
    b.answered = now;
    b.next_try = now + kSiteRecheck;
    b.answer = h.last_answer;
    b.unsent = 0;
    if (b.probe == eid) b.probe = 0;
    // The events that waited for this answer: each goes to WEB_DLQ unsent at its turn.
    for (uint64_t w : b.waiting) {
      auto e = held.find(w);
      if (e != held.end() && e->second.stage == Stage::kSiteWait) MakeReady(w, e->second);
    }
    b.waiting.clear();
  }
  DeadLetter(eid, h, SiteReason(h.ev.website), kCodeSiteUnknown, now);
}

bool EngineCore::State::HeldBySite(uint64_t eid, Held& h, TimePoint now) {
  if (sites.empty() || h.ev.website.empty()) return false;
  auto it = sites.find(h.ev.website);
  if (it == sites.end()) return false;
  SiteBlock& b = it->second;
  if (b.probe != 0 && b.probe != eid) {
    h.stage = Stage::kSiteWait;
    ++h.gen;
    b.waiting.push_back(eid);
    return true;
  }
  if (now < b.next_try && !h.replayed) {
    ++b.unsent;
    auto ago = std::chrono::duration_cast<std::chrono::seconds>(now - b.answered).count();
    h.last_answer = "not sent: umami answered a send of this website " + std::to_string(ago) +
                    " s ago: " + b.answer;
    DeadLetter(eid, h, SiteReason(h.ev.website), kCodeSiteUnknown, now);
    return true;
  }
  b.probe = eid;  // this send finds out whether Umami holds the site now
  return false;
}

void EngineCore::State::SiteStored(const Held& h, TimePoint now) {
  if (sites.empty()) return;
  auto it = sites.find(h.ev.website);
  if (it == sites.end()) return;
  for (uint64_t w : it->second.waiting) {
    auto e = held.find(w);
    if (e != held.end() && e->second.stage == Stage::kSiteWait) MakeReady(w, e->second);
  }
  Note& n = Tell(Note::Kind::kSiteKnown);
  n.subject = h.subject;
  n.text = rules::Excerpt(h.ev.website, 80);
  n.seconds = std::chrono::duration<double>(now - it->second.since).count();
  sites.erase(it);
}

void EngineCore::State::SiteForget(uint64_t eid, const Held& h, TimePoint now) {
  if (sites.empty()) return;
  auto it = sites.find(h.ev.website);
  if (it == sites.end()) return;
  SiteBlock& b = it->second;
  std::erase(b.waiting, eid);
  if (b.probe != eid) return;
  // Ended without an answer about the site (dead-lettered for another cause): the next waiting
  // event goes instead.
  b.probe = 0;
  if (b.next_try > now) b.next_try = now;
  for (uint64_t w : b.waiting) {
    auto e = held.find(w);
    if (e != held.end() && e->second.stage == Stage::kSiteWait) MakeReady(w, e->second);
  }
  b.waiting.clear();
}

}  // namespace replayer
