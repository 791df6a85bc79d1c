// test_stack_tool: a TestStack for a test written in bash (the deploy test, tests/deploy/), so
// its PostgreSQL and Umami start, wait for readiness and stop exactly as the C++ tests' do.
//
//   test_stack_tool --env-file FILE [--pg-port PORT] [--umami N] [--no-umami]
//
// Starts PostgreSQL (on PORT when the caller's configuration was rendered with it) and N Umami
// processes (default 1), then writes FILE (K=V lines: STACK_DIR, DATABASE_URL,
// UMAMI_DATABASE_URL, UMAMI_URLS) once every server is ready, in one rename, so a reader never
// sees half of it. Runs until SIGTERM or SIGINT, then stops what it started and exits 0. Exits 1
// with the reason on stderr when a server does not come up; 2 on a usage error.
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/test_stack.h"

namespace {

int Usage(const char* why) {
  std::fprintf(stderr,
               "test_stack_tool: %s\nusage: test_stack_tool --env-file FILE [--pg-port PORT] "
               "[--umami N] [--no-umami]\n",
               why);
  return 2;
}

bool ParsePositive(const std::string& s, int max, int* out) {
  if (s.empty() || s.size() > 5 || s.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  int v = std::stoi(s);
  if (v < 1 || v > max) return false;
  *out = v;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::string env_file;
  testsupport::StackOptions options;
  bool umami = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--env-file" && has_value) {
      env_file = argv[++i];
    } else if (a == "--pg-port" && has_value) {
      if (!ParsePositive(argv[++i], 65535, &options.pg_port)) return Usage("bad --pg-port");
    } else if (a == "--umami" && has_value) {
      if (!ParsePositive(argv[++i], 8, &options.umami_processes)) return Usage("bad --umami");
    } else if (a == "--no-umami") {
      umami = false;
    } else {
      return Usage(("unknown or incomplete argument " + a).c_str());
    }
  }
  if (env_file.empty()) return Usage("--env-file is required");

  // Blocked before any server starts, so the children start with them unblocked (Process resets
  // the mask) and a SIGTERM that arrives during start-up is taken by sigwait, not lost.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  try {
    std::vector<std::string> components{"pg"};
    if (umami) components.push_back("umami");
    testsupport::TestStack stack(components, options);
    const std::string tmp = env_file + ".tmp";
    {
      std::ofstream out(tmp);
      for (const char* name : {"STACK_DIR", "DATABASE_URL", "UMAMI_DATABASE_URL", "UMAMI_URLS"}) {
        out << name << '=' << stack.Env(name) << '\n';
      }
      if (!out) throw std::runtime_error("cannot write " + tmp);
    }
    if (std::rename(tmp.c_str(), env_file.c_str()) != 0) {
      throw std::runtime_error("cannot rename " + tmp + " to " + env_file);
    }
    std::fprintf(stderr, "test_stack_tool: ready (%s), %s written\n", stack.dir().c_str(),
                 env_file.c_str());
    int sig = 0;
    sigwait(&stop, &sig);
    std::fprintf(stderr, "test_stack_tool: signal %d, stopping\n", sig);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "test_stack_tool: %s\n", e.what());
    return 1;
  }
  return 0;
}
