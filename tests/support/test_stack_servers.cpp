// TestStack: the servers a test asks for, on tests/support/stack/ (see test_stack.h).
#include "tests/support/test_stack.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <utility>

namespace testsupport {

TestStack::TestStack(const std::vector<std::string>& components, int umami_processes)
    : TestStack(components, StackOptions{.umami_processes = umami_processes}) {}

namespace {

bool Has(const std::vector<std::string>& components, const std::string& c) {
  return std::find(components.begin(), components.end(), c) != components.end();
}

// 32 random bytes in hex: Umami's APP_SECRET.
std::string AppSecret() {
  std::random_device rd;
  std::string out;
  const char* hex = "0123456789abcdef";
  for (int i = 0; i < 32; ++i) {
    unsigned b = rd() & 0xffU;
    out += hex[b >> 4];
    out += hex[b & 15U];
  }
  return out;
}

}  // namespace

TestStack::TestStack(const std::vector<std::string>& components, const StackOptions& options)
    : nats_nodes_(options.nats_nodes) {
  for (const auto& c : components) {
    if (c != "nats" && c != "pg" && c != "umami") {
      throw std::runtime_error("unknown component '" + c + "' (nats, pg, umami)");
    }
  }
  if (Has(components, "umami") && !Has(components, "pg")) {
    throw std::runtime_error("umami needs pg: TestStack({\"pg\", \"umami\"})");
  }
  char tmpl[] = "/tmp/core-test-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = tmpl;
  base_port_ = FreePortRange(16);
  try {
    if (Has(components, "nats")) StartNats();
    if (Has(components, "pg")) {
      pg_ = std::make_unique<stack::PgServer>(dir_, options.pg_port);
      pg_->Start();
    }
    if (Has(components, "umami")) {
      const std::string home = stack::UmamiHome(SourceDir());
      const std::string secret = AppSecret();
      std::vector<stack::UmamiServer*> all;
      for (int i = 1; i <= options.umami_processes; ++i) {
        umami_.push_back(
            std::make_unique<stack::UmamiServer>(i, dir_, home, pg_->Url("umami"), secret));
        all.push_back(umami_.back().get());
      }
      StartUmami(all);
    }
  } catch (...) {
    umami_.clear();
    pg_.reset();
    nats_.clear();
    if (!stack::KeepServers()) std::filesystem::remove_all(dir_);
    throw;
  }
  MakeEnv();
}

void TestStack::StartNats() {
  const std::string tag = dir_.substr(dir_.rfind('-') + 1);
  // A cluster's route ports are picked before its nodes start: another test may bind one in
  // between. Then the nodes start again on other ones.
  for (int attempt = 1;; ++attempt) {
    nats_ = stack::MakeNatsNodes(dir_, NatsServerBin(), nats_nodes_, tag);
    std::vector<stack::NatsNode*> all;
    for (auto& n : nats_) all.push_back(n.get());
    try {
      stack::StartNodes(all);
      return;
    } catch (const std::exception& e) {
      if (attempt == 3 ||
          std::string(e.what()).find("address already in use") == std::string::npos) {
        throw;
      }
      std::fprintf(stderr, "NATS: a port was taken, starting again: %s\n", e.what());
      nats_.clear();
      for (int j = 1; j <= nats_nodes_; ++j) {
        std::filesystem::remove_all(dir_ + "/" + NatsNode(j));
      }
    }
  }
}

void TestStack::StartUmami(const std::vector<stack::UmamiServer*>& servers) {
  if (!migrated_) {
    stack::ApplyUmamiMigrations(pg(), stack::UmamiHome(SourceDir()), dir_);
    migrated_ = true;
  }
  for (auto* u : servers) u->Spawn();
  for (auto* u : servers) u->WaitReady();
}

void TestStack::MakeEnv() {
  env_["STACK_DIR"] = dir_;
  env_["STACK_BASE_PORT"] = std::to_string(base_port_);
  if (!nats_.empty()) {
    std::string urls, monitors;
    for (const auto& n : nats_) {
      urls += (urls.empty() ? "" : ",") + n->url();
      monitors += (monitors.empty() ? "" : ",") + n->monitor_url();
    }
    env_["NATS_URL"] = urls;
    env_["NATS_MONITOR_URL"] = nats_[0]->monitor_url();
    env_["NATS_MONITOR_URLS"] = monitors;
    env_["NATS_NODES"] = std::to_string(nats_nodes_);
  }
  if (pg_) {
    env_["DATABASE_URL"] = pg_->Url("metrics");
    env_["UMAMI_DATABASE_URL"] = pg_->Url("umami");
  }
  // UMAMI_URLS always: empty without an Umami of the stack (a test that brings its own, a
  // stand-in, passes it over this one's; scripts/stack printed it whatever ran).
  std::string urls;
  for (const auto& u : umami_) urls += (urls.empty() ? "" : ",") + u->url();
  env_["UMAMI_URLS"] = urls;
}

TestStack::~TestStack() {
  if (stack::KeepServers()) {
    std::fprintf(stderr, "KEEP_TEST_STACK: leaving %s running\n", dir_.c_str());
    for (auto& u : umami_) u->Release();
    if (pg_) pg_->Release();
    for (auto& n : nats_) n->Release();
    return;
  }
  // Users first: Umami, then PostgreSQL, then NATS.
  umami_.clear();
  pg_.reset();
  nats_.clear();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::string TestStack::Env(const std::string& name) const {
  auto it = env_.find(name);
  if (it == env_.end()) throw std::runtime_error("stack env has no " + name);
  return it->second;
}

std::string TestStack::EnvPrefix() const {
  std::string out;
  for (const auto& [k, v] : env_) out += k + "='" + v + "' ";
  return out;
}

std::string TestStack::NatsNode(int node) const {
  if (node < 1 || node > nats_nodes_)
    throw std::runtime_error("no NATS node " + std::to_string(node));
  return nats_nodes_ == 1 ? "nats" : "nats-" + std::to_string(node);
}

std::string TestStack::NatsUrl(int node) const { return nats(node).url(); }

std::string TestStack::NatsMonitorUrl(int node) const { return nats(node).monitor_url(); }

stack::NatsNode& TestStack::nats(int node) {
  return const_cast<stack::NatsNode&>(std::as_const(*this).nats(node));
}

stack::PgServer& TestStack::pg() { return const_cast<stack::PgServer&>(std::as_const(*this).pg()); }

stack::UmamiServer& TestStack::umami(int index) {
  return const_cast<stack::UmamiServer&>(std::as_const(*this).umami(index));
}

const stack::NatsNode& TestStack::nats(int node) const {
  if (node < 1 || node > static_cast<int>(nats_.size())) {
    throw std::runtime_error("this stack has no NATS node " + std::to_string(node));
  }
  return *nats_[static_cast<size_t>(node - 1)];
}

const stack::PgServer& TestStack::pg() const {
  if (!pg_) throw std::runtime_error("this stack has no PostgreSQL");
  return *pg_;
}

const stack::UmamiServer& TestStack::umami(int index) const {
  if (index < 1 || index > static_cast<int>(umami_.size())) {
    throw std::runtime_error("this stack has no Umami process " + std::to_string(index));
  }
  return *umami_[static_cast<size_t>(index - 1)];
}

// Calls f(node) for "nats"/"nats-<j>", f(pg) for "pg", f(umami) for "umami"/"umami-<i>": the
// servers a component names, as a vector of one kind.
template <typename F>
void TestStack::ForEach(const std::string& component, F&& f) {
  auto index = [&](const std::string& prefix) {
    const std::string n = component.substr(prefix.size());
    if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos) {
      throw std::runtime_error("bad component '" + component + "'");
    }
    return std::stoi(n);
  };
  if (component == "nats") {
    std::vector<stack::NatsNode*> all;
    for (auto& n : nats_) all.push_back(n.get());
    if (all.empty()) throw std::runtime_error("this stack has no NATS");
    f(all);
  } else if (component.rfind("nats-", 0) == 0 && nats_nodes_ > 1) {
    f(std::vector<stack::NatsNode*>{&nats(index("nats-"))});
  } else if (component == "pg") {
    f(pg());
  } else if (component == "umami") {
    std::vector<stack::UmamiServer*> all;
    for (auto& u : umami_) all.push_back(u.get());
    if (all.empty()) throw std::runtime_error("this stack has no Umami");
    f(all);
  } else if (component.rfind("umami-", 0) == 0) {
    f(std::vector<stack::UmamiServer*>{&umami(index("umami-"))});
  } else {
    throw std::runtime_error("unknown component '" + component +
                             "' (nats, nats-<j> in a cluster, pg, umami, umami-<i>)");
  }
}

namespace {

struct StopVisitor {
  bool kill;
  void operator()(stack::PgServer& pg) const { kill ? pg.Kill() : pg.Stop(); }
  template <typename T>
  void operator()(const std::vector<T*>& servers) const {
    for (auto* s : servers) kill ? s->Kill() : s->Stop();
  }
};

}  // namespace

void TestStack::Stop(const std::string& component) { ForEach(component, StopVisitor{false}); }

void TestStack::Kill(const std::string& component) { ForEach(component, StopVisitor{true}); }

void TestStack::Start(const std::string& component) {
  struct {
    TestStack* self;
    void operator()(stack::PgServer& pg) const { pg.Start(); }
    void operator()(const std::vector<stack::NatsNode*>& nodes) const { stack::StartNodes(nodes); }
    void operator()(const std::vector<stack::UmamiServer*>& servers) const {
      self->StartUmami(servers);
    }
  } start{this};
  ForEach(component, start);
}

}  // namespace testsupport
