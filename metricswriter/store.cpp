#include "metricswriter/store.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <limits>
#include <map>

#include "metricswriter/decisions.h"
#include "metricswriter/migrations.h"

namespace mw {
namespace {

constexpr int64_t kNsPerDay = 86'400'000'000'000LL;

// An element of a PostgreSQL array literal, always quoted: safe for any text.
void Elem(std::string& arr, std::string_view v) {
  if (arr.size() > 1) arr += ',';
  arr += '"';
  for (char c : v) {
    if (c == '"' || c == '\\') arr += '\\';
    arr += c;
  }
  arr += '"';
}

std::string Hex(const std::string& bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\\x";
  for (unsigned char c : bytes) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

Fingerprint FromHex(std::string_view h) {
  Fingerprint f;
  auto nibble = [](char c) -> uint64_t {
    return static_cast<uint64_t>(c <= '9' ? c - '0' : c - 'a' + 10);
  };
  for (size_t i = 0; i < 16 && i < h.size(); ++i) f.hi = (f.hi << 4) | nibble(h[i]);
  for (size_t i = 16; i < 32 && i < h.size(); ++i) f.lo = (f.lo << 4) | nibble(h[i]);
  return f;
}

template <typename F>
void ForEachTime(const Batch& b, F&& f) {
  for (const auto& p : b.numbers) f(p.time);
  for (const auto& p : b.histograms) f(p.time);
  for (const auto& p : b.exp_histograms) f(p.time);
  for (const auto& p : b.summaries) f(p.time);
}

}  // namespace

std::string DayString(int64_t unix_day) {
  using namespace std::chrono;
  year_month_day ymd{sys_days{days{unix_day}}};
  char buf[16];
  std::snprintf(buf, sizeof(buf), "%04d-%02u-%02u", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()));
  return buf;
}

Store::Store(Options options) : options_(std::move(options)) {}
Store::~Store() = default;

common::Status Store::Connect() {
  if (conn_) return common::Status::Ok();
  common::pg::PgConn::Options o;
  o.application_name = "metricswriter";
  o.statement_timeout = options_.statement_timeout;
  auto c = common::pg::PgConn::Connect(options_.database_url, o);
  if (!c.ok()) return c.error();
  auto report = ApplyMigrations(**c, EmbeddedMigrations());
  if (!report.ok()) return report.error();
  for (int v : report->applied) spdlog::info("applied schema migration {}", v);
  conn_ = std::move(*c);
  days_.clear();  // partitions may have been dropped while we were away
  return common::Status::Ok();
}

common::Status Store::Fail(const common::Error& e) {
  if (e.kind == common::ErrorKind::kInvalid && conn_ && !conn_->Broken()) {
    (void)conn_->Exec("ROLLBACK");  // the connection is fine: only this data was refused
    if (!conn_->Broken()) return e;
  }
  // Anything else: start over on a new connection. A session keeps the defaults it began with
  // (a read-only database stays read-only for it after the operator switched it back), and a
  // server that restarted has cut it anyway.
  conn_.reset();
  return e;
}

common::Status Store::InsertSeries(
    std::span<const PendingBatch> batches,
    std::span<const std::pair<Fingerprint, std::pair<size_t, size_t>>> todo) {
  std::array<std::string, 13> cols;
  for (auto& c : cols) c = "{";
  for (const auto& [fp, where] : todo) {
    const PendingBatch& pb = batches[where.first];
    const SeriesView s = pb.batch.SeriesAt(where.second);
    const Scope& sc = pb.batch.scopes[s.scope];
    Elem(cols[0], Hex(fp.Bytes()));
    Elem(cols[1], pb.tenant);
    Elem(cols[2], s.name);
    Elem(cols[3], MetricTypeName(s.type));
    Elem(cols[4], s.unit);
    Elem(cols[5], s.description);
    Elem(cols[6], TemporalityName(s.temporality));
    Elem(cols[7], s.monotonic ? "t" : "f");
    Elem(cols[8], pb.batch.resources[s.resource]);
    Elem(cols[9], sc.name);
    Elem(cols[10], sc.version);
    Elem(cols[11], sc.attributes);
    Elem(cols[12], s.attributes);
  }
  for (auto& c : cols) c += '}';
  // Moved, not copied (but the fingerprints, asked for again below).
  std::vector<common::pg::Param> params;
  params.reserve(cols.size());
  params.emplace_back(cols[0]);
  for (size_t c = 1; c < cols.size(); ++c) params.emplace_back(std::move(cols[c]));
  auto ins = conn_->Query(
      "INSERT INTO metrics.series (fingerprint, tenant, name, type, unit, description, "
      "temporality, monotonic, resource, scope_name, scope_version, scope_attributes, "
      "attributes) SELECT * FROM unnest($1::bytea[], $2::text[], $3::text[], $4::text[], "
      "$5::text[], $6::text[], $7::text[], $8::boolean[], $9::jsonb[], $10::text[], $11::text[], "
      "$12::jsonb[], $13::jsonb[]) ON CONFLICT (fingerprint) DO NOTHING",
      params);
  if (!ins.ok()) return ins.error();
  params.clear();
  auto sel = conn_->Query(
      "SELECT encode(fingerprint, 'hex'), series_id FROM metrics.series "
      "WHERE fingerprint = ANY($1::bytea[])",
      {cols[0]});
  if (!sel.ok()) return sel.error();
  for (int r = 0; r < sel->rows(); ++r) {
    series_[FromHex(sel->Get(r, 0))] = std::atoll(std::string(sel->Get(r, 1)).c_str());
  }
  return common::Status::Ok();
}

common::Status Store::ResolveSeries(std::span<const PendingBatch> batches,
                                    std::vector<std::vector<int64_t>>* ids, size_t* created) {
  // Misses, once each: fingerprint -> (batch, series) that describes it.
  std::map<std::pair<uint64_t, uint64_t>, std::pair<size_t, size_t>> misses;
  for (size_t i = 0; i < batches.size(); ++i) {
    const auto& fps = batches[i].fingerprints;
    (*ids)[i].assign(fps.size(), 0);
    for (size_t s = 0; s < fps.size(); ++s) {
      auto it = series_.find(fps[s]);
      if (it != series_.end()) {
        (*ids)[i][s] = it->second;
      } else {
        misses.emplace(std::make_pair(fps[s].hi, fps[s].lo), std::make_pair(i, s));
      }
    }
  }
  if (misses.empty()) return common::Status::Ok();
  // Emptied before the inserts, so every id they return stays cached until the ids are filled
  // in below.
  if (series_.size() + misses.size() > options_.series_cache_max) series_.clear();
  // The new series go in statements of at most kSeriesStatementBytes of text (SplitByBytes).
  std::vector<std::pair<Fingerprint, std::pair<size_t, size_t>>> todo;
  std::vector<size_t> sizes;
  todo.reserve(misses.size());
  sizes.reserve(misses.size());
  for (const auto& [key, where] : misses) {
    const PendingBatch& pb = batches[where.first];
    const SeriesView s = pb.batch.SeriesAt(where.second);
    const Scope& sc = pb.batch.scopes[s.scope];
    todo.emplace_back(Fingerprint{key.first, key.second}, where);
    sizes.push_back(128 + pb.tenant.size() + s.name.size() + s.unit.size() + s.description.size() +
                    pb.batch.resources[s.resource].size() + sc.name.size() + sc.version.size() +
                    sc.attributes.size() + s.attributes.size());
  }
  size_t begin = 0;
  for (size_t end : SplitByBytes(sizes, kSeriesStatementBytes)) {
    if (auto st = InsertSeries(batches, std::span(todo).subspan(begin, end - begin)); !st.ok()) {
      return st;
    }
    begin = end;
  }
  *created += misses.size();
  for (size_t i = 0; i < batches.size(); ++i) {
    for (size_t s = 0; s < batches[i].fingerprints.size(); ++s) {
      if ((*ids)[i][s] != 0) continue;
      auto it = series_.find(batches[i].fingerprints[s]);
      if (it == series_.end()) return common::Error::Retryable("series id not found after insert");
      (*ids)[i][s] = it->second;
    }
  }
  return common::Status::Ok();
}

common::Status Store::EnsureDays(std::span<const PendingBatch> batches, int64_t now_ns) {
  // Partitions are made only for days inside the retention window (and tomorrow, for clock
  // skew): a point outside it finds no partition and PostgreSQL rejects its batch, which is
  // then dead-lettered with the reason. Anything else would store data that retention drops.
  const int64_t today = now_ns / kNsPerDay;
  std::set<int64_t> want;
  int64_t last = std::numeric_limits<int64_t>::min();  // points come in runs of the same day
  for (const auto& pb : batches) {
    ForEachTime(pb.batch, [&](int64_t t) {
      int64_t day = t / kNsPerDay;
      if (day == last) return;
      last = day;
      if (day >= today - options_.retention_days && day <= today + 1 && !days_.count(day)) {
        want.insert(day);
      }
    });
  }
  for (int64_t day : want) {
    auto r = conn_->Query("SELECT metrics.ensure_day($1::date)", {DayString(day)});
    if (!r.ok()) return r.error();
    days_.insert(day);
  }
  return common::Status::Ok();
}

common::Result<WriteOutcome> Store::Write(std::span<const PendingBatch> batches, int64_t now_ns) {
  if (auto s = Connect(); !s.ok()) return s.error();
  WriteOutcome out;
  out.stored.assign(batches.size(), false);
  std::vector<std::vector<int64_t>> ids(batches.size());
  if (auto s = ResolveSeries(batches, &ids, &out.series_created); !s.ok()) {
    return Fail(s.error()).error();
  }
  if (auto s = EnsureDays(batches, now_ns); !s.ok()) return Fail(s.error()).error();

  // The first of repeated (tenant, id) pairs in this group is the candidate; the rest are
  // duplicates whatever the database says.
  std::string tenants = "{", bids = "{", seqs = "{", points = "{";
  std::map<std::pair<std::string_view, std::string_view>, size_t> first;
  for (size_t i = 0; i < batches.size(); ++i) {
    if (!first
             .emplace(std::make_pair(std::string_view(batches[i].tenant),
                                     std::string_view(batches[i].batch_id)),
                      i)
             .second) {
      continue;
    }
    Elem(tenants, batches[i].tenant);
    Elem(bids, batches[i].batch_id);
    Elem(seqs, std::to_string(batches[i].stream_seq));
    Elem(points, std::to_string(batches[i].batch.PointCount()));
  }
  tenants += '}';
  bids += '}';
  seqs += '}';
  points += '}';
  // Nearly every group holds only new batches, so first a plain INSERT: ON CONFLICT's
  // speculative insertion cost PostgreSQL about half as much again per row (measured: 50,000
  // rows in groups of 500, 600-840 ms against 435-465 ms). A batch id already there (SQLSTATE
  // 23505: a redelivery, a replay, another writer) rolls that back, and the group goes again
  // with ON CONFLICT DO NOTHING RETURNING, which says which batches were new.
  const std::vector<common::pg::Param> params = {tenants, bids, seqs, points};
  constexpr const char* kInsert =
      "INSERT INTO metrics.batches (tenant, batch_id, stream_seq, points) "
      "SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::integer[])";
  if (auto s = conn_->Exec("BEGIN"); !s.ok()) return Fail(s.error()).error();
  auto ins = conn_->Query(kInsert, params);
  const bool all_new = ins.ok();
  if (!ins.ok() && common::pg::SqlStateOf(ins.error()) == "23505" && !conn_->Broken()) {
    if (auto s = conn_->Exec("ROLLBACK; BEGIN"); !s.ok()) return Fail(s.error()).error();
    ins = conn_->Query(std::string(kInsert) + " ON CONFLICT DO NOTHING RETURNING tenant, batch_id",
                       params);
  }
  if (!ins.ok()) return Fail(ins.error()).error();
  encoder_.Begin();
  if (all_new) {
    for (const auto& [key, i] : first) {
      out.stored[i] = true;
      encoder_.Add(batches[i].batch, ids[i]);
    }
  } else {
    for (int r = 0; r < ins->rows(); ++r) {
      auto it = first.find({ins->Get(r, 0), ins->Get(r, 1)});
      if (it == first.end()) continue;
      out.stored[it->second] = true;
      encoder_.Add(batches[it->second].batch, ids[it->second]);
    }
  }
  encoder_.Finish();
  for (int t = 0; t < kTables; ++t) {
    auto table = static_cast<PointTable>(t);
    out.rows[t] = encoder_.rows(table);
    if (encoder_.rows(table) == 0) continue;
    if (auto s = conn_->CopyIn(CopyStatement(table), encoder_.payload(table)); !s.ok()) {
      return Fail(s.error()).error();
    }
  }
  if (auto s = conn_->Exec("COMMIT"); !s.ok()) return Fail(s.error()).error();
  return out;
}

common::Result<int> Store::Expire(int64_t now_ns) {
  if (auto s = Connect(); !s.ok()) return s.error();
  const int64_t cutoff = now_ns / kNsPerDay - options_.retention_days;
  auto dropped = conn_->Query("SELECT metrics.drop_days_before($1::date)", {DayString(cutoff)});
  if (!dropped.ok()) return Fail(dropped.error()).error();
  days_.erase(days_.begin(), days_.lower_bound(cutoff));
  auto del = conn_->Query(
      "DELETE FROM metrics.batches WHERE stored_at < now() - make_interval(days => $1::int)",
      {std::to_string(options_.batch_id_retention_days)});
  if (!del.ok()) return Fail(del.error()).error();
  return std::atoi(std::string(dropped->Get(0, 0)).c_str());
}

}  // namespace mw
