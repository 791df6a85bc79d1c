#include "common/version.h"
#include "replayer/service.h"

int main(int argc, char** argv) { return replayer::RunService(argc, argv, common::Version()); }
