#include "common/pg_error.h"

#include <algorithm>

namespace common::pg {

ErrorKind ClassifySqlState(std::string_view s) {
  if (s.size() != 5) return ErrorKind::kRetryable;  // no server answer: connection lost
  std::string_view cls = s.substr(0, 2);
  if (cls == "22" || cls == "23" || s == "54000") return ErrorKind::kInvalid;
  if (cls == "08" ||   // connection exception
      cls == "53" ||   // insufficient resources: disk full, out of memory, too many connections
      cls == "57" ||   // operator intervention: admin/crash shutdown, cannot connect now, canceled
      cls == "58" ||   // system error: I/O error
      cls == "40" ||   // transaction rollback: serialization failure, deadlock
      s == "25006" ||  // read-only SQL transaction (a read-only database or a standby)
      s == "55P03" ||  // lock not available
      s == "55006" ||  // object in use
      s == "XX000") {  // internal error: seen transiently during crash recovery
    return ErrorKind::kRetryable;
  }
  return ErrorKind::kPermanent;
}

namespace {

void Add(std::vector<std::string>* out, std::string_view s) {
  if (!s.empty()) out->emplace_back(s);
}

// URL form: postgresql://user:password@host/db. libpq ends the userinfo at the first '@' before
// a '/'; an operator may still have written a raw '@' (or '/') in the password, so the password
// up to the last '@' is taken as well, and its '@'-separated pieces (libpq would then echo one
// of them as part of a host name).
void AddUrlPassword(std::string_view conninfo, std::vector<std::string>* out) {
  size_t scheme = conninfo.find("://");
  if (scheme == std::string_view::npos) return;
  std::string_view rest = conninfo.substr(scheme + 3);
  size_t colon = rest.find(':');
  size_t first_at = rest.find('@');
  size_t last_at = rest.rfind('@');
  if (colon == std::string_view::npos || first_at == std::string_view::npos || colon > first_at) {
    return;
  }
  Add(out, rest.substr(colon + 1, first_at - colon - 1));
  std::string_view whole = rest.substr(colon + 1, last_at - colon - 1);
  if (last_at == first_at) return;
  Add(out, whole);
  for (size_t start = 0; start <= whole.size();) {
    size_t at = std::min(whole.find('@', start), whole.size());
    Add(out, whole.substr(start, at - start));
    start = at + 1;
  }
}

// Key/value form (password=secret, password = 'sec ret') and URL query (?password=secret&...):
// the raw value as written, quoted or not, and up to a '&' or to the next blank.
void AddKeywordPasswords(std::string_view conninfo, std::vector<std::string>* out) {
  constexpr std::string_view kKey = "password";
  for (size_t k = conninfo.find(kKey); k != std::string_view::npos;
       k = conninfo.find(kKey, k + 1)) {
    size_t i = k + kKey.size();
    while (i < conninfo.size() && conninfo[i] == ' ') ++i;
    if (i >= conninfo.size() || conninfo[i] != '=') continue;
    ++i;
    while (i < conninfo.size() && conninfo[i] == ' ') ++i;
    std::string_view value = conninfo.substr(i);
    if (!value.empty() && value[0] == '\'') {
      size_t end = 1;
      while (end < value.size() && value[end] != '\'') end += value[end] == '\\' ? 2 : 1;
      Add(out, value.substr(0, std::min(end + 1, value.size())));
      Add(out, value.substr(1, std::min(end, value.size()) - 1));
      continue;
    }
    size_t blank = std::min(value.find_first_of(" \t\n"), value.size());
    Add(out, value.substr(0, blank));
    Add(out, value.substr(0, std::min(value.find('&'), blank)));
  }
}

}  // namespace

std::vector<std::string> ConninfoSecrets(std::string_view conninfo,
                                         std::string_view parsed_password) {
  std::vector<std::string> out;
  Add(&out, parsed_password);
  AddUrlPassword(conninfo, &out);
  AddKeywordPasswords(conninfo, &out);
  if (!out.empty()) Add(&out, conninfo);
  // Longest first: a secret that holds another is replaced whole, not around the shorter one.
  std::sort(out.begin(), out.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string ScrubSecrets(std::string_view text, const std::vector<std::string>& secrets) {
  std::string out(text);
  for (const auto& s : secrets) {
    if (s.empty()) continue;
    for (size_t at = out.find(s); at != std::string::npos; at = out.find(s, at + 3)) {
      out.replace(at, s.size(), "***");
    }
  }
  return out;
}

std::string UnparsableConninfo(std::string_view reason, const std::vector<std::string>& secrets) {
  std::string text;
  // A quoted value of more than one character is what libpq refused (a single character is
  // what it looked for: 'matching "]"').
  for (size_t i = 0; i < reason.size();) {
    size_t close = reason[i] == '"' ? reason.find('"', i + 1) : std::string_view::npos;
    if (close != std::string_view::npos) {
      text += close - i > 2 ? std::string("\"***\"") : std::string(reason.substr(i, close - i + 1));
      i = close + 1;
    } else {
      text += reason[i] == '\n' || reason[i] == '\r' ? ' ' : reason[i];
      ++i;
    }
  }
  while (!text.empty() && text.back() == ' ') text.pop_back();
  return "DATABASE_URL cannot be parsed: " + ScrubSecrets(text, secrets);
}

}  // namespace common::pg
