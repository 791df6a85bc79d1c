#include "platformctl/erase_match.h"

#include <nlohmann/json.hpp>

namespace platformctl::erase {
namespace {

std::optional<std::string> StringField(const nlohmann::json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

}  // namespace

Match Matches(const Request& r, std::string_view key, std::string_view payload) {
  if (!r.web()) return key == r.tenant ? Match::kYes : Match::kNo;
  const bool under_key = key == r.site;
  if (under_key && !r.visitor) return Match::kYes;  // no need to read the payload
  auto doc = nlohmann::json::parse(payload.begin(), payload.end(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    return under_key ? Match::kUnreadable : Match::kNo;
  }
  const bool of_site = under_key || StringField(doc, "website") == r.site;
  if (!of_site) return Match::kNo;
  if (!r.visitor) return Match::kYes;
  return StringField(doc, "visitor") == *r.visitor ? Match::kYes : Match::kNo;
}

}  // namespace platformctl::erase
