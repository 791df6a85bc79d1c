#include <cstdio>

#include "common/service_cli.h"
#include "common/version.h"
#include "platformctl/app.h"

int main(int argc, char** argv) {
  // Before anything holds a secret: no core file may carry one (common/service_cli.h).
  if (!common::DisableCoreDumps()) std::perror("platformctl: cannot turn core dumps off");
  return platformctl::Main(argc, argv, common::Version());
}
