#include "platformctl/dlq/list.h"

#include <algorithm>
#include <iomanip>
#include <utility>

#include <nlohmann/json.hpp>

#include "common/timefmt.h"
#include "platformctl/json_out.h"

namespace platformctl::dlq {
namespace {

std::string Origin(const Entry& e) {
  std::string s = e.stream.empty() ? "?" : Printable(e.stream);
  return s + "#" + (e.stream_seq ? std::to_string(*e.stream_seq) : "?");
}

std::vector<std::pair<std::string, uint64_t>> Largest(const std::map<std::string, uint64_t>& m) {
  std::vector<std::pair<std::string, uint64_t>> v(m.begin(), m.end());
  std::stable_sort(v.begin(), v.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  return v;
}

}  // namespace

void PrintListText(const std::vector<Entry>& entries, const QueueInfo& q, std::ostream& out) {
  struct Row {
    std::string seq, time, key, origin, subject, size, reason, detail;
  };
  std::vector<Row> rows;
  rows.reserve(entries.size() + 1);
  rows.push_back({"SEQ", "DEAD-LETTERED", q.key_name == "site" ? "SITE" : "TENANT", "ORIGIN",
                  "SUBJECT", "SIZE", "REASON", ""});
  for (const auto& e : entries) {
    rows.push_back({std::to_string(e.seq), common::FormatRfc3339(e.time_ns), Printable(e.key),
                    Origin(e), Printable(e.subject.empty() ? "?" : e.subject),
                    std::to_string(e.size), Printable(e.reason.empty() ? "?" : e.reason),
                    Printable(e.detail)});
  }
  size_t w[6] = {};
  for (const auto& r : rows) {
    const std::string* cols[6] = {&r.seq, &r.time, &r.key, &r.origin, &r.subject, &r.size};
    for (int i = 0; i < 6; ++i) w[i] = std::max(w[i], cols[i]->size());
  }
  for (const auto& r : rows) {
    out << std::right << std::setw(static_cast<int>(w[0])) << r.seq << "  " << std::left
        << std::setw(static_cast<int>(w[1])) << r.time << "  " << std::setw(static_cast<int>(w[2]))
        << r.key << "  " << std::setw(static_cast<int>(w[3])) << r.origin << "  "
        << std::setw(static_cast<int>(w[4])) << r.subject << "  " << std::right
        << std::setw(static_cast<int>(w[5])) << r.size << "  " << r.reason << "\n";
    // The evidence on a line of its own, under the row: Umami's answer, who moved it and why.
    if (!r.detail.empty()) out << std::string(w[0] + 2, ' ') << "detail: " << r.detail << "\n";
  }
  out << std::left << entries.size() << " message" << (entries.size() == 1 ? "" : "s") << " in "
      << q.dlq_stream << " selected\n";
}

void PrintListJson(const std::vector<Entry>& entries, const QueueInfo& q, std::ostream& out) {
  nlohmann::json j;
  j["queue"] = q.name;
  j["stream"] = q.dlq_stream;
  j["count"] = entries.size();
  auto msgs = nlohmann::json::array();
  for (const auto& e : entries) {
    msgs.push_back({{"seq", e.seq},
                    {"time", common::FormatRfc3339(e.time_ns)},
                    {"time_unix_ns", e.time_ns},
                    {"key", e.key},
                    {"stream", e.stream},
                    {"stream_seq", e.stream_seq ? nlohmann::json(*e.stream_seq) : nullptr},
                    {"subject", e.subject},
                    {"size", e.size},
                    {"reason", e.reason},
                    {"detail", e.detail}});
  }
  j["messages"] = std::move(msgs);
  out << platformctl::DumpJson(j) << "\n";
}

void ListSummary::Add(const Entry& e) {
  if (count_ == 0) {
    first_seq_ = e.seq;
    first_ns_ = e.time_ns;
  }
  ++count_;
  bytes_ += e.size;
  last_seq_ = e.seq;
  last_ns_ = e.time_ns;
  ++by_reason_[e.reason];
  ++by_key_[e.key];
}

void ListSummary::PrintText(const QueueInfo& q, std::ostream& out, size_t max_keys) const {
  out << q.dlq_stream << ": " << count_ << " message" << (count_ == 1 ? "" : "s") << " selected, "
      << bytes_ << " payload bytes";
  if (count_ == 0) {
    out << "\n";
    return;
  }
  out << ", seq " << first_seq_ << ".." << last_seq_ << ", dead-lettered "
      << common::FormatRfc3339(first_ns_) << " .. " << common::FormatRfc3339(last_ns_) << "\n";
  out << "by reason:\n";
  for (const auto& [reason, n] : Largest(by_reason_)) {
    out << std::right << std::setw(9) << n << "  " << Printable(reason.empty() ? "?" : reason)
        << "\n";
  }
  out << "by " << q.key_name << " (" << by_key_.size() << "):\n";
  auto keys = Largest(by_key_);
  uint64_t rest = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i < max_keys) {
      out << std::right << std::setw(9) << keys[i].second << "  " << Printable(keys[i].first)
          << "\n";
    } else {
      rest += keys[i].second;
    }
  }
  if (keys.size() > max_keys) {
    out << std::right << std::setw(9) << rest << "  (" << keys.size() - max_keys << " more "
        << q.key_name << "s; --json lists all)\n";
  }
  out << std::left;
}

void ListSummary::PrintJson(const QueueInfo& q, std::ostream& out) const {
  nlohmann::json j;
  j["queue"] = q.name;
  j["stream"] = q.dlq_stream;
  j["count"] = count_;
  j["bytes"] = bytes_;
  j["first_seq"] = count_ ? nlohmann::json(first_seq_) : nullptr;
  j["last_seq"] = count_ ? nlohmann::json(last_seq_) : nullptr;
  j["first_time"] = count_ ? nlohmann::json(common::FormatRfc3339(first_ns_)) : nullptr;
  j["last_time"] = count_ ? nlohmann::json(common::FormatRfc3339(last_ns_)) : nullptr;
  auto reasons = nlohmann::json::array();
  for (const auto& [r, n] : Largest(by_reason_)) reasons.push_back({{"reason", r}, {"count", n}});
  auto keys = nlohmann::json::array();
  for (const auto& [k, n] : Largest(by_key_)) keys.push_back({{"key", k}, {"count", n}});
  j["by_reason"] = std::move(reasons);
  j["by_key"] = std::move(keys);
  out << platformctl::DumpJson(j) << "\n";
}

}  // namespace platformctl::dlq
