// nats-server versions: the supported range (docs/contract.md §1) and the reading of a server's
// self-declared version from the INFO line it sends each new connection. Pure: safe from any
// thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace common::server_version {

struct Version {
  int major = 0;
  int minor = 0;
  int patch = 0;
  bool prerelease = false;  // "2.11.0-RC.1": before 2.11.0, after every 2.10.x
  std::string text;         // as the server wrote it, e.g. "2.11.0-RC.1"
};

// The oldest nats-server the project supports: the oldest one its tests run on (Debian 13's
// 2.10.27). docs/contract.md §1 states the range; `platformctl init` refuses a server below it.
inline constexpr int kMinMajor = 2;
inline constexpr int kMinMinor = 10;
inline constexpr int kMinPatch = 27;
inline constexpr std::string_view kMinText = "2.10.27";
inline constexpr std::string_view kRangeStatedIn = "docs/contract.md §1";

// "2.10.27", "v2.15.1", "2.11.0-RC.1", "2.12.0+build": nullopt for anything else (empty, a
// number out of range, text after the triple other than -pre or +build, ...).
std::optional<Version> Parse(std::string_view text);

// a < b, semver order: the triple first; a pre-release is below its release. Two pre-releases
// of the same triple compare as equal (their order is of no use here).
bool Less(const Version& a, const Version& b);

Version Minimum();
bool Supported(const Version& v);

// The "version" of a NATS INFO line ("INFO {...json...}\r\n"), or nullopt when the line is not
// an INFO line, its JSON does not parse or holds no version string.
std::optional<std::string> FromInfoLine(std::string_view line);

// The operator's sentence for a server below the minimum, e.g. "nats-server 2.9.10 at
// nats://a:4222 is older than 2.10.27, the oldest this release supports (docs/contract.md §1)".
std::string Refusal(const Version& found, std::string_view where);

}  // namespace common::server_version

namespace common::server_version {

struct Endpoint {
  std::string host;  // without brackets for IPv6
  std::string port;
};
// The host and port of a server URL as nats.c reports it ("nats://[user:pass@]host:port",
// "tls://[::1]:4222"); nullopt when it has no port.
std::optional<Endpoint> EndpointOf(std::string_view url);

}  // namespace common::server_version
