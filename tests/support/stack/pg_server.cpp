#include "tests/support/stack/pg_server.h"

#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace testsupport::stack {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

std::string PgBin() {
  const char* env = std::getenv("PG_BIN");
  if (env != nullptr && *env != '\0') return env;
  if (access("/usr/lib/postgresql/15/bin/postgres", X_OK) == 0) return "/usr/lib/postgresql/15/bin";
  for (const auto& e : fs::directory_iterator("/usr/lib/postgresql")) {
    if (access((e.path() / "bin/postgres").c_str(), X_OK) == 0) return e.path() / "bin";
  }
  throw std::runtime_error("PostgreSQL binaries not found (apt-get install postgresql-15)");
}

void Chown(const std::string& path, const std::string& user) {
  passwd* pw = getpwnam(user.c_str());
  if (pw == nullptr || chown(path.c_str(), pw->pw_uid, pw->pw_gid) != 0) {
    throw std::runtime_error("cannot give " + path + " to " + user);
  }
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

PgServer::PgServer(const std::string& dir, int port)
    : ServerProcess(SIGINT), dir_(dir), bin_(PgBin()), port_(port), fixed_port_(port != 0) {
  if (geteuid() == 0) {
    run_as_ = "postgres";
    if (getpwnam("postgres") == nullptr) {
      throw std::runtime_error("system user 'postgres' missing (apt-get install postgresql-15)");
    }
  }
  // As root initdb and postgres run as user postgres, who may not reach the test's directory
  // (mkdtemp makes it 0700): then the data directory goes to a directory of our own.
  bool reachable = run_as_.empty() || Process::RunToEnd(AsPg({"test", "-x", dir_}), 10'000) == 0;
  std::string base = dir_;
  if (!reachable || dir_.size() + 30 > 107) {  // + "/sock/.s.PGSQL.NNNNN": a socket path's limit
    char tmpl[] = "/tmp/core-test-pg-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp /tmp/core-test-pg-XXXXXX");
    private_ = base = tmpl;
    if (!run_as_.empty()) Chown(private_, run_as_);
  }
  data_ = base + "/pg";
  sock_ = base + "/sock";
  fs::create_directories(sock_);
  fs::create_directories(data_);
  fs::permissions(data_, fs::perms::owner_all);
  if (!run_as_.empty()) {
    Chown(sock_, run_as_);
    Chown(data_, run_as_);
  }
  const int rc = Process::RunToEnd(
      AsPg({bin_ + "/initdb", "-D", data_, "-U", "postgres", "-E", "UTF8", "--locale=C",
            "--no-sync", "--auth-local=trust", "--auth-host=trust"}));
  if (rc != 0) {
    throw std::runtime_error("initdb " + data_ + " failed (" + std::to_string(rc) + "), see " +
                             log_path() + ":\n" + ReadAll(log_path()));
  }
  const char* fsync = std::getenv("STACK_PG_FSYNC");
  std::ofstream conf(data_ + "/postgresql.conf", std::ios::app);
  // The port is not here: postgres gets it with -p, picked at the first start.
  conf << "\n# ---- tests/support/stack/pg_server.cpp (scripts/stack's) ----\n"
       << "listen_addresses = '127.0.0.1'\n"
       << "unix_socket_directories = '" << sock_ << "'\n"
       << "fsync = " << (fsync != nullptr && *fsync != '\0' ? fsync : "on") << "\n"
       << "max_connections = 200\n"
       << "shared_buffers = 128MB\n"
       << "log_line_prefix = '%m [%p] %d '\n";
  if (!conf) throw std::runtime_error("cannot write " + data_ + "/postgresql.conf");
}

PgServer::~PgServer() {
  if (KeepServers()) {
    process_.Release();
    return;
  }
  process_.Stop(SIGQUIT, 15'000);  // immediate: the data goes with the test
  if (!private_.empty()) {
    std::error_code ec;
    fs::remove_all(private_, ec);
  }
}

ProcessSpec PgServer::AsPg(std::vector<std::string> argv) const {
  ProcessSpec p;
  p.argv = std::move(argv);
  p.env = InheritedEnv();
  p.log_path = log_path();
  p.run_as = run_as_;
  p.cwd = "/";
  p.die_with_parent = !KeepServers();
  return p;
}

std::string PgServer::Url(const std::string& db) const {
  return "postgresql://postgres@127.0.0.1:" + std::to_string(port_) + "/" + db;
}

bool PgServer::Spawn() {
  // postgres refuses a lock file whose pid exists; after a Kill they are stale.
  const std::string port = std::to_string(port_);
  for (const auto& f : {data_ + "/postmaster.pid", sock_ + "/.s.PGSQL." + port + ".lock",
                        sock_ + "/.s.PGSQL." + port}) {
    std::error_code ec;
    fs::remove(f, ec);
  }
  const auto log_start = fs::exists(log_path()) ? fs::file_size(log_path()) : 0;
  process_.Start(
      AsPg({bin_ + "/postgres", "-D", data_, "-p", port, "-k", sock_, "-h", "127.0.0.1"}));
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < deadline) {
    if (!process_.Running()) {
      if (ReadAll(log_path()).substr(log_start).find("already in use") != std::string::npos) {
        return false;
      }
      Fail("PostgreSQL exited during startup (status " + std::to_string(process_.status()) + ")",
           process_);
    }
    ProcessSpec ready = AsPg({bin_ + "/pg_isready", "-q", "-h", "127.0.0.1", "-p", port, "-U",
                              "postgres", "-d", "postgres", "-t", "2"});
    ready.run_as = "";
    if (Process::RunToEnd(ready, 10'000) == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  Fail("PostgreSQL not ready on port " + port + " within 60 s", process_);
}

void PgServer::Start() {
  if (process_.Running()) return;
  if (started_once_ || fixed_port_) {
    if (!Spawn()) Fail("PostgreSQL: port " + std::to_string(port_) + " taken", process_);
  } else {
    // Between our pick and postgres's bind another test may take the port: pick again.
    bool up = false;
    for (int attempt = 0; attempt < 5 && !up; ++attempt) {
      port_ = PickPort();
      up = Spawn();
    }
    if (!up) Fail("PostgreSQL: five ports in a row were taken", process_);
  }
  if (started_once_) return;
  started_once_ = true;
  for (const char* db : {"umami", "metrics"}) {
    if (Psql("postgres", {"-c", std::string("CREATE DATABASE ") + db}, log_path()) != 0) {
      Fail(std::string("cannot create database ") + db, process_);
    }
  }
}

int PgServer::Psql(const std::string& db, const std::vector<std::string>& args,
                   const std::string& log) const {
  ProcessSpec p = AsPg({bin_ + "/psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1",
                        "-p", std::to_string(port_), "-U", "postgres", "-d", db});
  p.argv.insert(p.argv.end(), args.begin(), args.end());
  p.run_as = "";
  p.env["PGCONNECT_TIMEOUT"] = "5";
  p.log_path = log;
  return Process::RunToEnd(p);
}

std::string PgServer::Query(const std::string& db, const std::string& sql) const {
  const std::string out = dir_ + "/psql-query.out";
  std::error_code ec;
  fs::remove(out, ec);
  if (Psql(db, {"-tAc", sql}, out) != 0) {
    throw std::runtime_error("psql " + db + " -c '" + sql + "' failed: " + ReadAll(out));
  }
  std::string answer = ReadAll(out);
  while (!answer.empty() && answer.back() == '\n') answer.pop_back();
  return answer;
}

}  // namespace testsupport::stack
