#include "common/result.h"

namespace common {

const char* ErrorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kRetryable:
      return "retryable";
    case ErrorKind::kPermanent:
      return "permanent";
    case ErrorKind::kInvalid:
      return "invalid";
    case ErrorKind::kNotFound:
      return "not found";
  }
  return "unknown";
}

}  // namespace common
