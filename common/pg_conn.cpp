#include "common/pg_conn.h"

#include <libpq-fe.h>
#include <spdlog/spdlog.h>

#include <utility>

#include "common/log.h"
#include "common/pg_error.h"

namespace common::pg {
namespace {

constexpr std::string_view kSqlStatePrefix = "SQLSTATE ";

std::string OneLine(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

Error MakeError(const std::string& sqlstate, const std::string& what, const std::string& msg) {
  std::string text = sqlstate.empty()
                         ? what + ": " + msg
                         : std::string(kSqlStatePrefix) + sqlstate + ": " + msg + " (" + what + ")";
  Error e{ClassifySqlState(sqlstate), OneLine(text)};
  e.sqlstate = sqlstate;
  return e;
}

struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using ResultPtr = std::unique_ptr<PGresult, ResultDeleter>;

}  // namespace

std::string SqlStateOf(const Error& e) { return e.sqlstate; }

PgResult::PgResult(PGresult* r) : r_(r) {}
PgResult::~PgResult() {
  if (r_ != nullptr) PQclear(r_);
}
PgResult::PgResult(PgResult&& o) noexcept : r_(std::exchange(o.r_, nullptr)) {}
PgResult& PgResult::operator=(PgResult&& o) noexcept {
  if (this != &o) {
    if (r_ != nullptr) PQclear(r_);
    r_ = std::exchange(o.r_, nullptr);
  }
  return *this;
}
int PgResult::rows() const { return PQntuples(r_); }
int PgResult::columns() const { return PQnfields(r_); }
bool PgResult::IsNull(int row, int col) const { return PQgetisnull(r_, row, col) != 0; }
std::string_view PgResult::Get(int row, int col) const {
  return {PQgetvalue(r_, row, col), static_cast<size_t>(PQgetlength(r_, row, col))};
}

namespace {

struct OptionsDeleter {
  void operator()(PQconninfoOption* o) const { PQconninfoFree(o); }
};

// libpq takes `dbname` as a whole connection string when it is a URL or holds a '='; anything
// else is a database name, with no password to hide.
bool IsConnectionString(const std::string& conninfo) {
  return conninfo.rfind("postgresql://", 0) == 0 || conninfo.rfind("postgres://", 0) == 0 ||
         conninfo.find('=') != std::string::npos;
}

}  // namespace

Result<std::unique_ptr<PgConn>> PgConn::Connect(const std::string& conninfo,
                                                const Options& options) {
  // Parsed first, apart: libpq's messages about a connection string repeat the part it refused,
  // which may be the password, and they end up in logs. The password found here is scrubbed
  // from every message this connection makes.
  std::vector<std::string> secrets;
  if (IsConnectionString(conninfo)) {
    char* why = nullptr;
    std::unique_ptr<PQconninfoOption, OptionsDeleter> parsed(
        PQconninfoParse(conninfo.c_str(), &why));
    if (!parsed) {
      std::string reason = why != nullptr ? why : "out of memory";
      PQfreemem(why);
      // Retryable like every failed connect: the caller's loop logs it and an operator fixes
      // the variable (a service cannot tell a typo from a value still being written).
      return Error::Retryable(UnparsableConninfo(reason, ConninfoSecrets(conninfo, "")));
    }
    std::string password;
    for (const PQconninfoOption* o = parsed.get(); o->keyword != nullptr; ++o) {
      if (std::string_view(o->keyword) == "password" && o->val != nullptr) password = o->val;
    }
    secrets = ConninfoSecrets(conninfo, password);
  }
  std::string timeout = std::to_string(options.connect_timeout.count());
  std::string server_options;
  if (options.statement_timeout.count() > 0) {
    // The same bound on a transaction that sits idle: the server ends it (and frees its row
    // locks) even when the client is gone without a word. A writer whose connection went
    // half-open (its RST lost on a lossy link, then the process restarted) otherwise left
    // its INSERT's locks held until the server's TCP keepalive, two hours by default, and
    // every redelivery of those batches waited on them (seen in the soak on nats-server
    // 2.15.1: API_METRICS stalled 54 minutes behind one such session).
    const std::string ms = std::to_string(options.statement_timeout.count());
    server_options = "-c statement_timeout=" + ms + " -c idle_in_transaction_session_timeout=" + ms;
  }
  // expand_dbname: `dbname` may be a whole URL; the keys after it override what it says. TCP
  // keepalives and a user timeout make a vanished server an error instead of a hang.
  const char* keys[] = {"dbname",
                        "application_name",
                        "connect_timeout",
                        "keepalives_idle",
                        "keepalives_interval",
                        "tcp_user_timeout",
                        "options",
                        nullptr};
  const char* values[] = {conninfo.c_str(),
                          options.application_name.c_str(),
                          timeout.c_str(),
                          "10",
                          "5",
                          "30000",
                          server_options.empty() ? nullptr : server_options.c_str(),
                          nullptr};
  std::unique_ptr<PgConn> c(new PgConn());
  c->secrets_ = std::move(secrets);
  c->conn_ = PQconnectdbParams(keys, values, 1);
  if (c->conn_ == nullptr) return Error::Retryable("postgres connect: out of memory");
  if (PQstatus(c->conn_) != CONNECTION_OK) {
    // libpq gives no SQLSTATE for a failed connection attempt: the server may be starting,
    // full, or gone. All of these are worth another try.
    return Error::Retryable(
        OneLine("postgres connect: " + ScrubSecrets(PQerrorMessage(c->conn_), c->secrets_)));
  }
  // Server notices ("schema already exists, skipping") go to the log, not raw to stderr.
  // A notice is the server's text and ends in a line break: escaped like any answer.
  PQsetNoticeProcessor(
      c->conn_,
      [](void*, const char* message) {
        std::string_view m(message);
        while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.remove_suffix(1);
        spdlog::debug("postgres: {}", common::log::Escaped(m, 500));
      },
      nullptr);
  return c;
}

PgConn::~PgConn() {
  if (conn_ != nullptr) PQfinish(conn_);
}

bool PgConn::Broken() const { return PQstatus(conn_) != CONNECTION_OK; }

Error PgConn::ErrorFrom(const PGresult* r, const std::string& what) const {
  const char* state = r != nullptr ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  const char* msg = r != nullptr ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : nullptr;
  std::string text = msg != nullptr ? msg : PQerrorMessage(conn_);
  if (r != nullptr) {
    if (const char* detail = PQresultErrorField(r, PG_DIAG_MESSAGE_DETAIL)) {
      text += " (" + std::string(detail) + ")";
    }
  }
  return MakeError(state != nullptr ? state : "", what, ScrubSecrets(text, secrets_));
}

Status PgConn::Exec(const std::string& sql) {
  ResultPtr r(PQexec(conn_, sql.c_str()));
  ExecStatusType st = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
  if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return Status::Ok();
  return ErrorFrom(r.get(), "exec");
}

Result<PgResult> PgConn::Query(const std::string& sql, const std::vector<Param>& params) {
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
  PGresult* raw = PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr,
                               values.data(), nullptr, nullptr, 0);
  PgResult r(raw);
  ExecStatusType st = raw ? PQresultStatus(raw) : PGRES_FATAL_ERROR;
  if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) return r;
  return ErrorFrom(raw, "query");
}

Status PgConn::CopyIn(const std::string& copy_sql, std::string_view data) {
  {
    ResultPtr r(PQexec(conn_, copy_sql.c_str()));
    if (!r || PQresultStatus(r.get()) != PGRES_COPY_IN) return ErrorFrom(r.get(), "copy start");
  }
  // Chunks of 1 MiB: libpq buffers whatever it is given, so one huge call doubles memory.
  constexpr size_t kChunk = 1 << 20;
  bool sent = true;
  for (size_t off = 0; off < data.size() && sent; off += kChunk) {
    size_t n = std::min(kChunk, data.size() - off);
    sent = PQputCopyData(conn_, data.data() + off, static_cast<int>(n)) == 1;
  }
  if (PQputCopyEnd(conn_, sent ? nullptr : "client failed to send data") != 1) sent = false;
  Status status;
  // Drain every result so the connection is ready for the next command.
  while (PGresult* raw = PQgetResult(conn_)) {
    ResultPtr r(raw);
    if (PQresultStatus(raw) != PGRES_COMMAND_OK && status.ok()) status = ErrorFrom(raw, "copy");
  }
  if (status.ok() && !sent) status = ErrorFrom(nullptr, "copy send");
  return status;
}

}  // namespace common::pg
