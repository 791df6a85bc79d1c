# Test-only image: Umami 2.10 from the build scripts/umami-build makes ($UMAMI_HOME/app, a
# Next.js standalone server), on Debian 12 with the node binary of the machine that builds it
# (Debian's own nodejs 18.13 is too old for Next.js 14). The production image
# (ansible/roles/core: core_umami_image) comes from a registry these machines cannot reach.
# Built by tests/container/images.sh from a context holding app/ and node.
#
# Differences from the official image: the database schema is not migrated at start (the build
# has no Prisma schema engine): the test applies $UMAMI_HOME/migrations with psql first.
FROM debian:12-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl \
 && rm -rf /var/lib/apt/lists/*
COPY node /usr/local/bin/node
COPY app /app
WORKDIR /app
# Listen on every interface (the compose file maps the port; the healthcheck uses 127.0.0.1).
ENV NODE_ENV=production HOSTNAME=0.0.0.0 PORT=3000 NEXT_TELEMETRY_DISABLED=1
USER 1001:1001
EXPOSE 3000
CMD ["node", "server.js"]
