// Dead letters and redrive task records under libFuzzer: the dead letter the services build
// from a hostile message (common/dead_letter.h), and what platformctl reads back from a DLQ
// message's headers and from KV dlq_tasks (platformctl/dlq/select.h, dlq/task.h). The first byte
// picks the reader. Checks: a dead letter's own headers are one line each and within their
// bounds, a DLQ copy is never more than MaxGrowth() bytes bigger than its origin, what is shown to
// an operator is printable, and a task record read back encodes and reads again to the same.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/dead_letter.h"
#include "platformctl/dlq/select.h"
#include "platformctl/dlq/task.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

namespace dl = common::dead_letter;

// "Name: value" lines (the first ": " splits); the first line is the subject, the rest the body.
std::vector<std::string_view> Lines(std::string_view in) {
  std::vector<std::string_view> out;
  while (!in.empty()) {
    const size_t nl = in.find('\n');
    out.push_back(in.substr(0, nl));
    if (nl == std::string_view::npos) break;
    in.remove_prefix(nl + 1);
  }
  return out;
}

void DeadLetter(std::string_view in) {
  const auto lines = Lines(in);
  dl::Origin o;
  o.subject = lines.empty() ? "" : std::string(lines[0]);
  o.stream = "WEB_EVENTS";
  o.stream_seq = in.size();
  std::string reason, detail;
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t colon = lines[i].find(": ");
    if (colon == std::string_view::npos) {
      o.payload.append(lines[i]);
      continue;
    }
    std::string k(lines[i].substr(0, colon)), v(lines[i].substr(colon + 2));
    if (k == "reason") {
      reason = v;
    } else if (k == "detail") {
      detail = v;
    } else {
      o.headers.emplace_back(std::move(k), std::move(v));
    }
  }
  const common::OutMessage m = dl::Build(o, reason, detail);
  for (const auto& [k, v] : m.headers) {
    if (k == dl::kReason) fuzz::Check(v.size() <= dl::kMaxReasonBytes && fuzz::HeaderSafe(v));
    if (k == dl::kDetail) fuzz::Check(v.size() <= dl::kMaxDetailBytes && fuzz::HeaderSafe(v));
    if (k == dl::kSubject) fuzz::Check(v.size() <= dl::kMaxSubjectBytes);
  }
  fuzz::Check(dl::PublishedSize(m) - dl::ReceivedSize(o.headers, o.payload.size()) <=
              dl::MaxGrowth());
}

void Entry(std::string_view in) {
  const auto lines = Lines(in);
  auto header = [&](const char* name) -> std::optional<std::string> {
    const std::string_view want(name);
    for (size_t i = 1; i < lines.size(); ++i) {
      if (lines[i].substr(0, want.size()) == want && lines[i].substr(want.size(), 2) == ": ") {
        return std::string(lines[i].substr(want.size() + 2));
      }
    }
    return std::nullopt;
  };
  const auto q = platformctl::dlq::InfoFor(platformctl::dlq::Queue::kWeb);
  const auto e =
      platformctl::dlq::MakeEntry(q, 1, 0, lines.empty() ? "" : lines[0], in.size(), header);
  fuzz::Check(fuzz::HeaderSafe(platformctl::dlq::Printable(e.reason)));
  fuzz::Check(fuzz::HeaderSafe(platformctl::dlq::Printable(e.subject)));
  fuzz::Check(fuzz::HeaderSafe(platformctl::dlq::Printable(e.key)));
  (void)platformctl::dlq::ParseBound(lines.empty() ? "" : lines[0]);
}

void Task(std::string_view in) {
  auto t = platformctl::dlq::DecodeTask(in);
  if (!t.ok()) return;
  const std::string again = platformctl::dlq::EncodeTask(*t);
  auto u = platformctl::dlq::DecodeTask(again);
  fuzz::Check(u.ok());
  fuzz::Check(platformctl::dlq::EncodeTask(*u) == again);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fuzz::Split in = fuzz::Select(data, size);
  switch (in.selector % 3) {
    case 0:
      DeadLetter(in.rest);
      break;
    case 1:
      Entry(in.rest);
      break;
    default:
      Task(in.rest);
      break;
  }
  return 0;
}
