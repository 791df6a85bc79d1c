# syntax=docker/dockerfile:1
# The core workers image: replayer, metricswriter and platformctl on Debian 12, run as a non-root
# user. Built by CI and deployed by ansible/roles/core (one image, the command picks the binary).
#
#   docker build -t core-workers:<version> .      (or podman build; Docker needs BuildKit)
#
# The build stage compiles what CI compiles on a fresh Debian 12 machine (.ci/run): the build
# packages of scripts/install-deps, then scripts/test's configure with warnings as errors (-g1
# too: line tables only, a quarter less compile time, and the debug info is stripped anyway), but
# only the three binaries (CI runs the tests on the same sources and compiler).
# tests/deploy/deploy-test.sh checks that these commands stay the same as CI's.
#
# Caches (RUN --mount=type=cache, kept by the builder on this machine between builds): the
# downloaded .deb files, and ccache's objects (each stage has caches of its own ids: buildah
# 1.28 holds a stage's cache lock to the end of the build). A change to a source file then
# recompiles only what depends on it; an unchanged context reuses every layer. Built cold on two
# loaded cores: ~19 minutes, unchanged: seconds; tests/container/README.md has the figures.

FROM debian:12 AS build
ENV DEBIAN_FRONTEND=noninteractive
WORKDIR /src
# Keep downloaded packages in the cache mount (Debian's images delete them after each install).
RUN rm -f /etc/apt/apt.conf.d/docker-clean \
 && echo 'Binary::apt::APT::Keep-Downloaded-Packages "true";' >/etc/apt/apt.conf.d/keep-cache
# Dependencies first, so a source change does not reinstall them.
COPY scripts/install-deps scripts/install-deps
COPY scripts/lib scripts/lib
RUN --mount=type=cache,id=core-workers-apt-build,target=/var/cache/apt/archives,sharing=locked \
    scripts/install-deps --build-only && rm -rf /var/lib/apt/lists/*
COPY . .
# The context has no .git: `docker build --build-arg CORE_VERSION=$(git describe --always --dirty)`
# gives the binaries their --version (common/version.cmake reads it at build time).
ARG CORE_VERSION=
ENV CCACHE_DIR=/ccache CCACHE_BASEDIR=/src CCACHE_NOHASHDIR=1 CCACHE_MAXSIZE=2G \
    CMAKE_CXX_COMPILER_LAUNCHER=ccache
RUN --mount=type=cache,id=core-workers-ccache,target=/ccache \
    cmake -S . -B build -G Ninja -DCORE_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
 && ninja -C build -j"$(nproc)" replayer metricswriter platformctl \
 && { ccache --show-stats | grep -iE 'hits|misses' || true; } \
 && strip --strip-debug build/replayer/replayer build/metricswriter/metricswriter \
      build/platformctl/platformctl

FROM debian:12-slim AS runtime
ENV DEBIAN_FRONTEND=noninteractive
RUN rm -f /etc/apt/apt.conf.d/docker-clean \
 && echo 'Binary::apt::APT::Keep-Downloaded-Packages "true";' >/etc/apt/apt.conf.d/keep-cache
# The shared libraries the three binaries link (Debian 12 package names), and curl for the
# compose healthchecks on /healthz.
RUN --mount=type=cache,id=core-workers-apt-runtime,target=/var/cache/apt/archives,sharing=locked \
    apt-get update \
 && apt-get install -y --no-install-recommends \
      ca-certificates curl \
      libnats3.4 libpq5 libcurl4 libsimdjson14 libspdlog1.10 libfmt9 \
      libprometheus-cpp-core1.0 libprotobuf32 \
 && rm -rf /etc/apt/apt.conf.d/keep-cache /var/lib/apt/lists/*
RUN groupadd --system --gid 10001 core \
 && useradd --system --uid 10001 --gid core --home-dir /nonexistent --no-create-home \
      --shell /usr/sbin/nologin core
COPY --from=build /src/build/replayer/replayer /src/build/metricswriter/metricswriter \
     /src/build/platformctl/platformctl /usr/local/bin/
USER 10001:10001
# replayer, metricswriter, platformctl streams --serve (the compose file maps the ports it uses).
EXPOSE 9464 9465 9466
CMD ["platformctl", "--help"]
