# Test-only image: the nats-server the tests run (tests/container/images.sh puts it in the
# context: sid's by default, the production line, from Debian's package by scripts/install-deps;
# a static Go binary) on the local Debian 12 base. The production image (ansible/roles/nats:
# nats_image) comes from a registry these machines cannot reach. Same interface as the official
# image for the rendered compose file: the entrypoint is nats-server (the compose command gives
# "-c <file>"), and wget for the healthcheck.
FROM debian:12-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends wget \
 && rm -rf /var/lib/apt/lists/*
COPY nats-server /usr/sbin/nats-server
ENTRYPOINT ["/usr/sbin/nats-server"]
CMD ["-c", "/etc/nats/nats-server.conf"]
