// How many bytes of batches the writer holds at once (METRICSWRITER_MAX_BYTES_IN_FLIGHT): what
// the intake may fetch and when it may decode. Pure; the caller passes the bytes it holds.
//
// A held message is charged its size as received while it waits to be decoded, then that plus
// its decoded batch (Batch::MemoryBytes() and the series fingerprints) until it is acknowledged,
// dead-lettered or handed back. The decoded size is not known before decoding, so the budget
// learns how much bigger than its message a batch decodes (the expansion: about 3 for
// protobuf, under 1 for JSON) and asks the server only for as many bytes as fit once decoded.
// A fetched message is decoded only when its estimated charge fits; with nothing held it is
// decoded whatever its size, so a message bigger than the whole budget is stored alone and
// never wedges the writer. The bound is therefore the limit, exceeded only by a message that
// decodes bigger than estimated (at most that message) or one that is bigger than the limit.
// Thread-safety: none; the intake thread owns it.
#pragma once

#include <cstdint>

namespace mw {

class ByteBudget {
 public:
  explicit ByteBudget(int64_t limit) : limit_(limit) {}

  struct Fetch {
    bool fetch = false;     // false: wait until held batches are released
    int64_t max_bytes = 0;  // of the next pull request; 0 = no byte limit (with batch 1)
    bool alone = false;     // fetch one message without a byte limit: it did not fit before
  };
  // What the next fetch may ask for while `held` bytes are charged.
  Fetch NextFetch(int64_t held) const;

  // The server refused to hand out its next message because it exceeds the request's bytes:
  // it is fetched alone once nothing else is held.
  void NextTooLarge() { next_too_large_ = true; }
  // A fetch came back (after NextFetch said alone, or with messages).
  void Fetched() { next_too_large_ = false; }

  // Whether a fetched message of `bytes` may be decoded now, `held` bytes charged (its own
  // undecoded bytes included).
  bool MayDecode(int64_t held, int64_t bytes) const;

  // A message of `bytes` decoded to a batch of `decoded` bytes: learns the expansion. Rises at
  // once, falls slowly, so a mix of small JSON and big protobuf batches stays within the limit.
  void Decoded(int64_t bytes, int64_t decoded);

  // The charge a message of `bytes` is expected to have once decoded.
  int64_t Estimate(int64_t bytes) const;

  int64_t limit() const { return limit_; }
  double expansion() const { return expansion_; }

  // Smallest request worth making: below it the intake waits for releases instead.
  static constexpr int64_t kMinFetchBytes = 64 * 1024;

 private:
  int64_t limit_;
  double expansion_ = 4.0;  // decoded bytes per message byte; a safe start (protobuf ~2.2)
  bool next_too_large_ = false;
};

}  // namespace mw
