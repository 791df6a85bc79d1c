#include <cstdio>

#include "common/service_cli.h"
#include "common/version.h"
#include "replayer/service.h"

int main(int argc, char** argv) {
  // Before anything holds a secret: no core file may carry one (common/service_cli.h).
  if (!common::DisableCoreDumps()) std::perror("replayer: cannot turn core dumps off");
  return replayer::RunService(argc, argv, common::Version());
}
