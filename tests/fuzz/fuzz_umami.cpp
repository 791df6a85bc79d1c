// Umami's answers under libFuzzer (replayer/umami_reply.h, replayer/http_parse.h): what the
// replayer reads from a process it does not control. The first byte picks the reader; the
// checks are what the replayer relies on: a token kept goes out as a header on the visitor's next
// event, an excerpt goes into a dead letter's header, failed indices address events sent.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "replayer/http_parse.h"
#include "replayer/umami_reply.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

void CheckToken(const std::string& token) {
  if (token.empty()) return;
  fuzz::Check(replayer::UsableToken(token));
  fuzz::Check(token.size() <= replayer::kMaxTokenBytes);
  fuzz::Check(fuzz::HeaderSafe(token));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const fuzz::Split in = fuzz::Select(data, size);
  switch (in.selector % 4) {
    case 0: {
      const replayer::SendReply r = replayer::ParseSendReply(in.rest);
      CheckToken(r.cache_token);
      fuzz::Check(fuzz::HeaderSafe(r.token_problem));
      break;
    }
    case 1: {
      const size_t sent = 1 + (in.selector >> 2) % 32;
      const replayer::BatchReply r = replayer::ParseBatchReply(in.rest, sent);
      CheckToken(r.cache_token);
      fuzz::Check(fuzz::HeaderSafe(r.problem));
      size_t last = 0;
      for (size_t i = 0; i < r.failed.size(); ++i) {
        fuzz::Check(r.failed[i].index < sent);
        fuzz::Check(i == 0 || r.failed[i].index > last);
        fuzz::Check(fuzz::HeaderSafe(r.failed[i].excerpt));
        last = r.failed[i].index;
      }
      break;
    }
    case 2: {
      // A response arriving in pieces of the selector's size.
      replayer::HttpResponseParser p(1024);
      const size_t piece = 1 + (in.selector >> 2);
      auto state = replayer::HttpResponseParser::State::kMore;
      for (size_t at = 0;
           at < in.rest.size() && state == replayer::HttpResponseParser::State::kMore;
           at += piece) {
        state = p.Feed(in.rest.substr(at, piece));
      }
      if (state == replayer::HttpResponseParser::State::kMore) state = p.Finish();
      fuzz::Check(p.body().size() <= 1024);
      if (state == replayer::HttpResponseParser::State::kDone) {
        fuzz::Check(p.status() >= 100 && p.status() <= 999);
      }
      break;
    }
    default: {
      const int status = 100 + (in.selector >> 2) * 7;
      const std::string excerpt = replayer::AnswerExcerpt(status, in.rest, in.rest);
      fuzz::Check(fuzz::HeaderSafe(excerpt));
      fuzz::Check(excerpt.size() <= 600);
      (void)replayer::ProbePassed(status, in.rest);
      (void)replayer::ClassifyAnswer(status, in.rest);
      break;
    }
  }
  return 0;
}
