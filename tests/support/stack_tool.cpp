// test_stack_tool: a TestStack for a test written in bash (the deploy test, tests/deploy/), so
// its PostgreSQL and Umami start, wait for readiness and stop exactly as the C++ tests' do.
//
//   test_stack_tool --env-file FILE [--pg-port PORT]
//
// Starts PostgreSQL (on PORT when the caller's configuration was rendered with it) and one Umami
// process, then writes FILE (K=V lines: STACK_DIR, DATABASE_URL,
// UMAMI_DATABASE_URL, UMAMI_URLS) once every server is ready, in one rename, so a reader never
// sees half of it. Runs until SIGTERM or SIGINT, then stops what it started and exits 0. Exits 1
// with the reason on stderr when a server does not come up; CLI11's code on a usage error.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <fstream>
#include <stdexcept>
#include <string>

#include "tests/support/test_stack.h"

int main(int argc, char** argv) {
  std::string env_file;
  testsupport::StackOptions options;
  CLI::App app{"PostgreSQL and Umami as the C++ tests start them, for a test written in bash"};
  app.add_option("--env-file", env_file, "written once every server is ready")->required();
  app.add_option("--pg-port", options.pg_port, "PostgreSQL's port (default: the OS's pick)")
      ->check(CLI::Range(1, 65535));
  CLI11_PARSE(app, argc, argv);

  // Blocked before any server starts, so the children start with them unblocked (Process resets
  // the mask) and a SIGTERM that arrives during start-up is taken by sigwait, not lost.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  try {
    testsupport::TestStack stack({"pg", "umami"}, options);
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
