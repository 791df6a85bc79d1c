#include "replayer/service.h"

int main() { return replayer::RunService(); }
