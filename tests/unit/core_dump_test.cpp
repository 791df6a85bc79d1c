// common::DisableCoreDumps (common/service_cli.h), checked in a child process so the test
// binary itself can still dump core when a test crashes.
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "common/service_cli.h"

TEST_CASE("after DisableCoreDumps the process has no core limit and is not dumpable", "[service]") {
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    if (!common::DisableCoreDumps()) _exit(10);
    rlimit core{};
    if (getrlimit(RLIMIT_CORE, &core) != 0 || core.rlim_cur != 0 || core.rlim_max != 0) _exit(11);
    if (prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) != 0) _exit(12);
    // The hard limit is 0 too: nothing in the process can raise it again.
    rlimit raise{RLIM_INFINITY, RLIM_INFINITY};
    if (setrlimit(RLIMIT_CORE, &raise) == 0 && getuid() != 0) _exit(13);
    _exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
}
