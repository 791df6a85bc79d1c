#include "common/js_error.h"

namespace common::js_error {

bool IsTooManyRequests(int status, int err_code) {
  return status == kTooManyRequestsStatus || err_code == kStreamTooManyRequests ||
         err_code == kAtomicPublishTooManyInflight || err_code == kBatchPublishTooManyInflight;
}

ErrorKind KindOf(int status, int err_code) {
  if (IsTooManyRequests(status, err_code) || err_code == kClusterNotAvailable ||
      (status == 503 && err_code == 0)) {
    return ErrorKind::kRetryable;
  }
  if (err_code == kStreamNotFound || err_code == kConsumerNotFound || err_code == kNoMessageFound ||
      status == 404) {
    return ErrorKind::kNotFound;
  }
  return ErrorKind::kPermanent;
}

}  // namespace common::js_error
