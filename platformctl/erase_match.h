// Which DLQ messages an erasure request covers (`platformctl erase`).
//
// A site's messages are those under its DLQ key (dlq.web.<site>) and those whose event names the
// site in its "website" field (an event whose subject key was unusable sits under
// dlq.web._invalid). A visitor's messages are the site's messages whose event has that
// "visitor" key; a message of the site that is not readable JSON cannot be matched to a visitor
// and is reported, never guessed. A tenant's messages are those under dlq.api.<tenant>.
//
// Pure: no I/O; the payload is read, never kept or printed. Safe from any thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace platformctl::erase {

enum class Match {
  kYes,
  kNo,
  kUnreadable,  // belongs to the site, but its payload is not JSON: the visitor is unknown
};

struct Request {
  std::string site;                    // web: required unless tenant is set
  std::optional<std::string> visitor;  // web: only this visitor's events
  std::string tenant;                  // api
  bool web() const { return tenant.empty(); }
};

// key: the message's DLQ subject key; payload: its body.
Match Matches(const Request& r, std::string_view key, std::string_view payload);

}  // namespace platformctl::erase
