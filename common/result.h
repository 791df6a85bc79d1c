// Result<T>: the value of an I/O call, or an Error with a kind that tells the caller what to do.
//
// Every call that can fail returns one of these; exceptions are kept for start-up errors and
// bugs and never cross a thread or a C callback. Header-only, no I/O, safe from any thread (a
// Result is a plain value).
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace common {

enum class ErrorKind {
  kRetryable,  // the other side is down or busy: the same call may succeed later
  kPermanent,  // the other side refused this for good (bad request, conflict)
  kInvalid,    // our input is malformed: retrying cannot help
  kNotFound,   // the thing asked for does not exist (a stream, a key, a message)
};

const char* ErrorKindName(ErrorKind kind);

struct Error {
  ErrorKind kind = ErrorKind::kPermanent;
  std::string message;
  // JetStream's err_code when the server refused with one (10054: message too large, 10167: too
  // many requests; common/js_error.h), else 0. Callers judge by this field, never by the message.
  int code = 0;
  // The client library's own status when it gave the error (nats.c's natsStatus as an int, read
  // only by the adapter files), else 0.
  int client_status = 0;
  // PostgreSQL's SQLSTATE when the server gave one ("23505": a unique violation; pg_error.h),
  // else empty. Callers read it through pg::SqlStateOf.
  std::string sqlstate = {};

  static Error Retryable(std::string m) { return {ErrorKind::kRetryable, std::move(m)}; }
  static Error Permanent(std::string m) { return {ErrorKind::kPermanent, std::move(m)}; }
  static Error Invalid(std::string m) { return {ErrorKind::kInvalid, std::move(m)}; }
  static Error NotFound(std::string m) { return {ErrorKind::kNotFound, std::move(m)}; }
  // The same error with another message (context added), its kind and codes kept.
  Error Retold(std::string m) const {
    Error e = *this;
    e.message = std::move(m);
    return e;
  }
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
  Result(Error error) : v_(std::move(error)) {}  // NOLINT: implicit by design

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  const T& value() const& { return std::get<0>(v_); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

// Status: a Result with no value.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT: implicit by design
  static Status Ok() { return Status(); }

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const { return error_; }

 private:
  Error error_;
  bool ok_ = true;
};

}  // namespace common
