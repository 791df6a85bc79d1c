#include "tests/support/stack/umami_server.h"

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

namespace testsupport::stack {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

size_t FileSize(const std::string& path) {
  std::error_code ec;
  auto n = fs::file_size(path, ec);
  return ec ? 0 : static_cast<size_t>(n);
}

std::string ReadFrom(const std::string& path, size_t offset) {
  std::ifstream in(path);
  in.seekg(static_cast<std::streamoff>(offset));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::string UmamiHome(const std::string& source_dir) {
  const char* env = std::getenv("UMAMI_HOME");
  std::string home = env != nullptr && *env != '\0' ? env : source_dir + "/.cache/umami";
  if (!fs::exists(home + "/app/server.js")) {
    throw std::runtime_error("no Umami build: " + home +
                             "/app/server.js is missing (run scripts/umami-build, or set "
                             "UMAMI_HOME to a built one)");
  }
  return home;
}

void ApplyUmamiMigrations(const PgServer& pg, const std::string& umami_home,
                          const std::string& dir) {
  if (pg.Query("umami", "SELECT to_regclass('public.website_event') IS NOT NULL") == "t") return;
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(umami_home + "/migrations")) {
    if (e.path().extension() == ".sql") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) throw std::runtime_error("no migrations in " + umami_home + "/migrations");
  const std::string log = dir + "/umami-migrate.log";
  for (const auto& f : files) {
    if (pg.Psql("umami", {"-1", "-f", f}, log) != 0) {
      throw std::runtime_error("Umami migration " + f + " failed; see " + log + ":\n" +
                               ReadFrom(log, 0));
    }
  }
}

UmamiServer::UmamiServer(int index, std::string dir, std::string umami_home,
                         std::string database_url, std::string app_secret)
    : ServerProcess(SIGTERM),
      index_(index),
      dir_(std::move(dir)),
      home_(std::move(umami_home)),
      database_url_(std::move(database_url)),
      app_secret_(std::move(app_secret)) {}

UmamiServer::~UmamiServer() {
  if (KeepServers()) process_.Release();
}

void UmamiServer::Spawn() {
  if (process_.Running()) return;
  if (port_ == 0) port_ = PickPort();
  ProcessSpec p;
  p.argv = {"node", home_ + "/app/server.js"};
  p.env = {{"PATH", "/usr/local/bin:/usr/bin:/bin"},
           {"HOME", dir_},
           {"LANG", "C.UTF-8"},
           {"TZ", "UTC"},
           {"NODE_ENV", "production"},
           {"PORT", std::to_string(port_)},
           {"HOSTNAME", "127.0.0.1"},
           {"DATABASE_URL", database_url_},
           {"APP_SECRET", app_secret_},
           {"DISABLE_TELEMETRY", "1"},
           {"NEXT_TELEMETRY_DISABLED", "1"},
           {"DISABLE_UPDATES", "1"}};
  // Extra settings for every process, e.g. STACK_UMAMI_ENV="LOG_QUERY=1".
  if (const char* extra = std::getenv("STACK_UMAMI_ENV")) {
    std::istringstream words(extra);
    std::string kv;
    while (words >> kv) {
      auto eq = kv.find('=');
      if (eq != std::string::npos) p.env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
  }
  p.log_path = log_path();
  p.die_with_parent = !KeepServers();
  std::ofstream(log_path(), std::ios::app)
      << "\n==== starting umami-" << index_ << " on 127.0.0.1:" << port_ << "\n";
  process_.Start(p);
}

void UmamiServer::WaitReady(int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  size_t log_start = FileSize(log_path());
  int repicks = 0;
  while (Clock::now() < deadline) {
    if (!process_.Running()) {
      // Only at the first start may the port change: nobody has been told it yet.
      if (!started_once_ && repicks < 5 &&
          ReadFrom(log_path(), log_start).find("EADDRINUSE") != std::string::npos) {
        ++repicks;
        port_ = PickPort();
        log_start = FileSize(log_path());
        Spawn();
        continue;
      }
      Fail("umami-" + std::to_string(index_) + " exited during startup (status " +
               std::to_string(process_.status()) + ")",
           process_);
    }
    if (HttpStatus(port_, "/api/heartbeat") == 200) {
      started_once_ = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  if (!started_once_) {
    Fail("umami-" + std::to_string(index_) + " did not answer 200 on " + url() +
             "/api/heartbeat within " + std::to_string(timeout_ms / 1000) + " s",
         process_);
  }
  // The first /api/send of a process takes 2-3 s (route compile, wasm query compiler, geo
  // database, pool): paid here with a send for a website id that cannot exist (403, no row).
  const char* warmup = std::getenv("STACK_UMAMI_WARMUP");
  if (warmup != nullptr && std::string(warmup) != "1") return;
  HttpPost(
      port_, "/api/send",
      R"({"type":"event","payload":{"website":"00000000-0000-4000-8000-000000000000",)"
      R"("hostname":"warmup.invalid","url":"/"}})",
      {{"X-Forwarded-For", "203.0.113.1"},
       {"User-Agent", "Mozilla/5.0 (X11; Linux x86_64) stack-warmup Chrome/120 Safari/537.36"}},
      30'000);
}

}  // namespace testsupport::stack
