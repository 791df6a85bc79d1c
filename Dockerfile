# syntax=docker/dockerfile:1
# The core workers image: replayer, metricswriter and platformctl on Debian 12, run as a non-root
# user. Built by CI and deployed by ansible/roles/core (one image, the command picks the binary).
#
#   docker build -t core-workers:<version> .
#
# The build stage does what CI does on a fresh Debian 12 machine (.ci/run): the apt part of
# scripts/install-deps, then scripts/test's configure and build with warnings as errors, then the
# unit tests. tests/deploy/deploy-test.sh checks that these commands stay the same as CI's.

FROM debian:12 AS build
ENV DEBIAN_FRONTEND=noninteractive
WORKDIR /src
# Dependencies first, so a source change does not reinstall them.
COPY scripts/install-deps scripts/install-deps
RUN scripts/install-deps --no-umami && rm -rf /var/lib/apt/lists/*
COPY . .
# The context has no .git: `docker build --build-arg CORE_VERSION=$(git describe --always --dirty)`
# gives the binaries their --version (common/version.cmake reads it at build time).
ARG CORE_VERSION=
RUN cmake -S . -B build -G Ninja -DCORE_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
 && ninja -C build -j"$(nproc)" \
 && ctest --test-dir build -L unit --output-on-failure \
 && strip --strip-debug build/replayer/replayer build/metricswriter/metricswriter \
      build/platformctl/platformctl

FROM debian:12-slim AS runtime
ENV DEBIAN_FRONTEND=noninteractive
# The shared libraries the three binaries link (Debian 12 package names), and curl for the
# compose healthchecks on /healthz.
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      ca-certificates curl \
      libnats3.4 libpq5 libcurl4 libsimdjson14 libspdlog1.10 libfmt9 \
      libprometheus-cpp-core1.0 libcivetweb1 libprotobuf32 \
 && rm -rf /var/lib/apt/lists/*
RUN groupadd --system --gid 10001 core \
 && useradd --system --uid 10001 --gid core --home-dir /nonexistent --no-create-home \
      --shell /usr/sbin/nologin core
COPY --from=build /src/build/replayer/replayer /src/build/metricswriter/metricswriter \
     /src/build/platformctl/platformctl /usr/local/bin/
USER 10001:10001
# replayer, metricswriter, platformctl streams --serve (the compose file maps the ports it uses).
EXPOSE 9464 9465 9466
CMD ["platformctl", "--help"]
