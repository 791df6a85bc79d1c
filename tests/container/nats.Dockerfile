# Test-only image: nats-server from Debian 12's package (2.9.10), for tests/container. The
# production image (ansible/roles/nats: nats_image) comes from a registry these machines cannot
# reach. Same interface as the official image for the rendered compose file: the entrypoint is
# nats-server (the compose command gives "-c <file>"), and wget for the healthcheck.
FROM debian:12-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends nats-server wget \
 && rm -rf /var/lib/apt/lists/*
ENTRYPOINT ["/usr/sbin/nats-server"]
CMD ["-c", "/etc/nats/nats-server.conf"]
