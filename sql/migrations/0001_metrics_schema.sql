-- 0001: the metrics schema. Applied by the metricswriter at start (under an advisory lock) and
-- by `platformctl migrate`; recorded in metrics.schema_migrations. Never edit an applied file:
-- add the next version instead (the runner refuses a changed checksum).

CREATE SCHEMA IF NOT EXISTS metrics;

-- One row per stored OTLP batch, written in the same transaction as its points: a batch id that
-- is already here is a redelivery or a replay, and adds nothing. Kept longer than the API_DLQ's
-- max age so a replay from the dead-letter stream is still recognised.
CREATE TABLE metrics.batches (
  tenant     text        NOT NULL,
  batch_id   text        NOT NULL,
  stream_seq bigint      NOT NULL,
  points     integer     NOT NULL,
  stored_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant, batch_id)
);
CREATE INDEX batches_stored_at ON metrics.batches (stored_at);

-- One row per time series: everything that names it. Points refer to it by series_id, so the
-- point tables stay narrow. fingerprint = 128-bit hash of the identity (every column below but
-- description), computed by the writer so it can cache ids without a round trip.
CREATE TABLE metrics.series (
  series_id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  fingerprint      bytea       NOT NULL UNIQUE,
  tenant           text        NOT NULL,
  name             text        NOT NULL,
  type             text        NOT NULL
    CHECK (type IN ('gauge', 'sum', 'histogram', 'exponential_histogram', 'summary')),
  unit             text        NOT NULL,
  description      text        NOT NULL,
  temporality      text        NOT NULL CHECK (temporality IN ('unspecified', 'delta', 'cumulative')),
  monotonic        boolean     NOT NULL,
  resource         jsonb       NOT NULL,
  scope_name       text        NOT NULL,
  scope_version    text        NOT NULL,
  scope_attributes jsonb       NOT NULL,
  attributes       jsonb       NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX series_tenant_name ON metrics.series (tenant, name);

-- Points, one table per point shape, partitioned by day of time_unix_nano (UTC). Times are
-- unix nanoseconds as OTLP sends them (exact); the *_v views add timestamptz columns.
-- flags: OTLP DataPointFlags (1 = no recorded value).

-- gauge and sum points. value_int is set when the exporter sent an integer (exact to 2^63);
-- value always holds the value as a double so queries need not care.
CREATE TABLE metrics.number_points (
  series_id            bigint           NOT NULL,
  start_time_unix_nano bigint           NOT NULL,
  time_unix_nano       bigint           NOT NULL,
  value                double precision NOT NULL,
  value_int            bigint,
  flags                integer          NOT NULL
) PARTITION BY RANGE (time_unix_nano);

CREATE TABLE metrics.histogram_points (
  series_id            bigint             NOT NULL,
  start_time_unix_nano bigint             NOT NULL,
  time_unix_nano       bigint             NOT NULL,
  count                bigint             NOT NULL,
  sum                  double precision,
  min                  double precision,
  max                  double precision,
  bounds               double precision[] NOT NULL,  -- explicit upper bounds
  counts               bigint[]           NOT NULL,  -- one per bound, then the +Inf bucket
  flags                integer            NOT NULL
) PARTITION BY RANGE (time_unix_nano);

CREATE TABLE metrics.exp_histogram_points (
  series_id            bigint           NOT NULL,
  start_time_unix_nano bigint           NOT NULL,
  time_unix_nano       bigint           NOT NULL,
  count                bigint           NOT NULL,
  sum                  double precision,
  min                  double precision,
  max                  double precision,
  scale                integer          NOT NULL,
  zero_count           bigint           NOT NULL,
  zero_threshold       double precision NOT NULL,
  positive_offset      integer          NOT NULL,
  positive_counts      bigint[]         NOT NULL,
  negative_offset      integer          NOT NULL,
  negative_counts      bigint[]         NOT NULL,
  flags                integer          NOT NULL
) PARTITION BY RANGE (time_unix_nano);

CREATE TABLE metrics.summary_points (
  series_id            bigint             NOT NULL,
  start_time_unix_nano bigint             NOT NULL,
  time_unix_nano       bigint             NOT NULL,
  count                bigint             NOT NULL,
  sum                  double precision   NOT NULL,
  quantiles            double precision[] NOT NULL,  -- e.g. {0, 0.5, 0.99, 1}
  quantile_values      double precision[] NOT NULL,
  flags                integer            NOT NULL
) PARTITION BY RANGE (time_unix_nano);

-- The read path: one series (found by tenant and name in metrics.series) over a time range.
CREATE INDEX number_points_series_time ON metrics.number_points (series_id, time_unix_nano);
CREATE INDEX histogram_points_series_time ON metrics.histogram_points (series_id, time_unix_nano);
CREATE INDEX exp_histogram_points_series_time
  ON metrics.exp_histogram_points (series_id, time_unix_nano);
CREATE INDEX summary_points_series_time ON metrics.summary_points (series_id, time_unix_nano);

-- The day partitions of every point table for `day` (UTC), created if absent. Serialised by a
-- transaction advisory lock so two writers creating the same day do not collide.
CREATE FUNCTION metrics.ensure_day(day date) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  t  text;
  lo bigint := extract(epoch FROM day)::bigint * 1000000000;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('metrics.partitions'));
  FOREACH t IN ARRAY ARRAY['number_points', 'histogram_points', 'exp_histogram_points',
                           'summary_points'] LOOP
    EXECUTE format('CREATE TABLE IF NOT EXISTS metrics.%I PARTITION OF metrics.%I '
                   'FOR VALUES FROM (%s) TO (%s)',
                   t || '_p' || to_char(day, 'YYYYMMDD'), t, lo, lo + 86400000000000);
  END LOOP;
END $$;

-- Drops every day partition older than `cutoff` (UTC date); returns how many tables it dropped.
CREATE FUNCTION metrics.drop_days_before(cutoff date) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  r       record;
  dropped integer := 0;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('metrics.partitions'));
  FOR r IN
    SELECT c.relname
    FROM pg_inherits i
    JOIN pg_class c ON c.oid = i.inhrelid
    JOIN pg_class p ON p.oid = i.inhparent
    JOIN pg_namespace n ON n.oid = p.relnamespace
    WHERE n.nspname = 'metrics'
      AND p.relname IN ('number_points', 'histogram_points', 'exp_histogram_points',
                        'summary_points')
      AND c.relname ~ '_p[0-9]{8}$'
      AND to_date(right(c.relname, 8), 'YYYYMMDD') < cutoff
  LOOP
    EXECUTE format('DROP TABLE metrics.%I', r.relname);
    dropped := dropped + 1;
  END LOOP;
  RETURN dropped;
END $$;

-- Readable views: times as timestamptz, series columns joined.
CREATE VIEW metrics.number_points_v AS
SELECT s.tenant, s.name, s.type, s.unit, s.temporality, s.monotonic, s.resource, s.scope_name,
       s.attributes, to_timestamp(p.start_time_unix_nano / 1e9) AS start_time,
       to_timestamp(p.time_unix_nano / 1e9) AS time, p.value, p.value_int, p.flags, p.series_id,
       p.time_unix_nano
FROM metrics.number_points p JOIN metrics.series s USING (series_id);
