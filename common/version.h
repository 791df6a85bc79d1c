// The version of this build: `git describe --always --dirty` when it was built (or the
// CORE_VERSION environment variable of the build, e.g. a Docker build without .git), else a
// text that says the build had no git metadata. Defined in a file generated at build time
// (common/version.cmake), in the library core_version, which only the binaries link, so a new
// commit relinks three binaries and no test.
#pragma once

namespace common {

const char* Version();

}  // namespace common
