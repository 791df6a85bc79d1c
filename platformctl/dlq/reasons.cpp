#include "platformctl/dlq/reasons.h"

#include <algorithm>

namespace platformctl {

std::optional<DlqReasonTally::Range> DlqReasonTally::Plan(uint64_t first_seq, uint64_t last_seq,
                                                          uint64_t messages, uint64_t cap) {
  if (messages == 0 || last_seq == 0) {
    seen_.clear();
    cursor_ = std::max(cursor_, last_seq + 1);
    return std::nullopt;
  }
  seen_.erase(seen_.begin(), seen_.lower_bound(first_seq));  // expired or erased at the front
  if (seen_.size() > messages) {
    // Erased in the middle (dlq purge, erase, a replay): which ones is not known. Start again.
    seen_.clear();
    cursor_ = first_seq;
  }
  cursor_ = std::max(cursor_, first_seq);
  if (cursor_ > last_seq || cap == 0) return std::nullopt;
  return Range{cursor_, std::min(last_seq, cursor_ + cap - 1)};
}

void DlqReasonTally::Add(uint64_t seq, const std::optional<std::string>& reason) {
  seen_[seq] = Index(reason ? Label(*reason) : "none");
}

void DlqReasonTally::Walked(uint64_t to) { cursor_ = std::max(cursor_, to + 1); }

std::map<std::string, uint64_t> DlqReasonTally::Counts() const {
  std::map<std::string, uint64_t> out;
  for (const auto& l : labels_) out[l] = 0;
  for (const auto& [seq, i] : seen_) ++out[labels_[i]];
  return out;
}

uint64_t DlqReasonTally::Unread(uint64_t messages) const {
  return messages > seen_.size() ? messages - seen_.size() : 0;
}

std::string DlqReasonTally::Label(std::string_view reason) {
  reason = reason.substr(0, reason.find(':'));
  std::string out;
  for (char c : reason) {
    if (out.size() >= 64) break;
    out += c >= 0x20 && c < 0x7f ? c : '?';
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out.empty() ? "none" : out;
}

uint16_t DlqReasonTally::Index(const std::string& label) {
  auto it = std::find(labels_.begin(), labels_.end(), label);
  if (it != labels_.end()) return static_cast<uint16_t>(it - labels_.begin());
  if (labels_.size() >= kMaxReasons) {
    auto other = std::find(labels_.begin(), labels_.end(), "other");
    if (other != labels_.end()) return static_cast<uint16_t>(other - labels_.begin());
  }
  labels_.push_back(labels_.size() >= kMaxReasons ? "other" : label);
  return static_cast<uint16_t>(labels_.size() - 1);
}

}  // namespace platformctl
