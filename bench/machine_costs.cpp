// machine_costs: what this machine charges for the two things a replayer does most per event
// besides its own work: entering the kernel, and handing work to another thread that sleeps.
//
//   machine_costs [--rounds N]
//
// Prints "syscall <µs>" (CPU per trivial system call, getppid) and "handoff <µs>" (CPU per
// one-way hand-off to a sleeping thread and back: two threads ping-pong a byte over two pipes,
// so each leg is a write, a wake-up and a read). On a bare-metal x86 a system call costs well
// under 0.1 µs; on a virtual machine that traps them it can be ten times that, and every figure
// of bench/replayer-bench sink moves with it. Printed there beside the replayer's CPU per event
// so that two machines' runs can be compared (docs/measured.md, "What this machine charges").
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <thread>

namespace {

double CpuMicros() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto us = [](const timeval& t) { return static_cast<double>(t.tv_sec) * 1e6 + t.tv_usec; };
  return us(u.ru_utime) + us(u.ru_stime);
}

double SyscallMicros(int rounds) {
  double c0 = CpuMicros();
  for (int i = 0; i < rounds; ++i) syscall(SYS_getppid);
  return (CpuMicros() - c0) / rounds;
}

// Returns CPU µs per one-way hand-off, or a negative value if a pipe failed. Each side closes
// its write end when it stops, so a failure on one side ends the other's read instead of
// leaving it blocked.
double HandoffMicros(int rounds) {
  int there[2], back[2];
  if (pipe(there) != 0) return -1;
  if (pipe(back) != 0) {
    close(there[0]);
    close(there[1]);
    return -1;
  }
  double c0 = CpuMicros();
  std::thread echo([&] {
    char c;
    for (int i = 0; i < rounds; ++i) {
      if (read(there[0], &c, 1) != 1 || write(back[1], &c, 1) != 1) break;
    }
    close(back[1]);
  });
  bool ok = true;
  char c = 'x';
  for (int i = 0; i < rounds && ok; ++i) {
    ok = write(there[1], &c, 1) == 1 && read(back[0], &c, 1) == 1;
  }
  close(there[1]);
  echo.join();
  double per = (CpuMicros() - c0) / (2.0 * rounds);
  close(there[0]);
  close(back[0]);
  return ok ? per : -1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"what this machine charges for a system call and a thread hand-off"};
  int rounds = 200000;
  app.add_option("--rounds", rounds, "hand-off round trips (system calls: 10 times as many)")
      ->check(CLI::Range(1000, 100000000));
  CLI11_PARSE(app, argc, argv);
  double sc = SyscallMicros(rounds * 10);
  double ho = HandoffMicros(rounds);
  if (ho < 0) {
    std::fprintf(stderr, "machine_costs: a pipe failed\n");
    return 1;
  }
  std::printf("syscall %.2f\nhandoff %.2f\n", sc, ho);
  return 0;
}
