#include "common/version.h"
#include "platformctl/app.h"

int main(int argc, char** argv) { return platformctl::Main(argc, argv, common::Version()); }
