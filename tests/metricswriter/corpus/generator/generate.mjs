// Captures OTLP metric exports of the OpenTelemetry JS SDK, as OTLP/JSON and as OTLP protobuf,
// for the metricswriter's decoder tests. Each collection is exported by both exporters from the
// same collected data, so `<name>.json` and `<name>.pb` hold the same points.
//
//   npm ci && node generate.mjs ../captures
//
// A small HTTP server on 127.0.0.1 stands in for the collector and writes each request body.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

import { ValueType } from '@opentelemetry/api';
import { OTLPMetricExporter as JsonExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPMetricExporter as ProtoExporter } from '@opentelemetry/exporter-metrics-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  AggregationTemporality,
  AggregationType,
  MeterProvider,
  MetricReader,
} from '@opentelemetry/sdk-metrics';

const outDir = process.argv[2] ?? '../captures';
fs.mkdirSync(outDir, { recursive: true });

// The capture server: each POST body is handed to whoever waits for it.
let waiting = null;
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    res.writeHead(200, { 'Content-Type': req.headers['content-type'] });
    res.end();
    const w = waiting;
    waiting = null;
    w?.({ type: req.headers['content-type'], body: Buffer.concat(chunks) });
  });
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${server.address().port}/v1/metrics`;

class ManualReader extends MetricReader {
  async onForceFlush() {}
  async onShutdown() {}
}

function exportWith(exporter, resourceMetrics) {
  const got = new Promise((r) => { waiting = r; });
  return new Promise((resolve, reject) => {
    exporter.export(resourceMetrics, (result) => {
      if (result.code !== 0) reject(result.error ?? new Error('export failed'));
    });
    got.then(resolve);
  });
}

const jsonExporter = new JsonExporter({ url });
const protoExporter = new ProtoExporter({ url });

async function capture(name, reader) {
  const { resourceMetrics, errors } = await reader.collect();
  if (errors.length) throw errors[0];
  const j = await exportWith(jsonExporter, resourceMetrics);
  const p = await exportWith(protoExporter, resourceMetrics);
  fs.writeFileSync(path.join(outDir, `${name}.json`), j.body);
  fs.writeFileSync(path.join(outDir, `${name}.pb`), p.body);
  console.log(`${name}: json ${j.body.length} B (${j.type}), protobuf ${p.body.length} B (${p.type})`);
}

function provider(temporality) {
  const reader = new ManualReader({ aggregationTemporalitySelector: () => temporality });
  const meterProvider = new MeterProvider({
    resource: resourceFromAttributes({
      'service.name': 'corpus',
      'service.version': '1.0.0',
      'host.cores': 2,
      'deployment.canary': false,
      'sample.weight': 0.5,
      'team.tags': ['web', 'api'],
    }),
    readers: [reader],
    views: ['payload.size', 'numbers.size'].map((instrumentName) => ({
      instrumentName,
      aggregation: { type: AggregationType.EXPONENTIAL_HISTOGRAM },
    })),
  });
  return { reader, meterProvider };
}

// Cumulative: every instrument kind the SDK has, attributes of every kind it can write.
{
  const { reader, meterProvider } = provider(AggregationTemporality.CUMULATIVE);
  const meter = meterProvider.getMeter('corpus.main', '3.1.4');
  const requests = meter.createCounter('http.requests', { valueType: ValueType.INT, unit: '{request}' });
  const bytes = meter.createCounter('bytes.sent', { unit: 'By', description: 'Bytes sent' });
  const depth = meter.createUpDownCounter('queue.depth', { valueType: ValueType.INT });
  const duration = meter.createHistogram('http.duration', {
    unit: 's', advice: { explicitBucketBoundaries: [0.01, 0.1, 1, 10] },
  });
  const size = meter.createHistogram('payload.size', { unit: 'By' });
  const memory = meter.createGauge('memory.used', { unit: 'By', valueType: ValueType.INT });
  let temp = 21.5;
  meter.createObservableGauge('cpu.temperature', { unit: 'Cel' })
    .addCallback((r) => { r.observe(temp, { core: 0 }); r.observe(NaN, { core: 1 }); });
  meter.createObservableCounter('process.cpu.time', { unit: 's' })
    .addCallback((r) => r.observe(12.25, { state: 'user' }));
  const other = meterProvider.getMeter('corpus.second').createCounter('jobs.done');

  const get = { method: 'GET', status: 200, ok: true, ratio: 0.25, tags: ['a', 'b'], codes: [1, 2] };
  const post = { method: 'POST', status: 503, ok: false, city: 'Zürich', empty: '', weird: 'a\u0000b' };
  requests.add(3, get);
  requests.add(1, post);
  requests.add(2 ** 40, { method: 'BIG' });
  bytes.add(1024.5, { route: '/' });
  depth.add(5);
  depth.add(-8);
  for (const v of [0.005, 0.05, 0.5, 5, 50]) duration.record(v, { route: '/' });
  for (const v of [1, 3, 100, 1e6, 0, 0.001]) size.record(v);
  memory.record(123456789, { pool: 'heap' });
  other.add(7, { queue: 'default' });
  await capture('cumulative-1', reader);

  requests.add(4, get);
  duration.record(0.2, { route: '/' });
  size.record(42);
  temp = 22;
  await capture('cumulative-2', reader);
  await meterProvider.shutdown();
}

// Delta temporality.
{
  const { reader, meterProvider } = provider(AggregationTemporality.DELTA);
  const meter = meterProvider.getMeter('corpus.delta');
  const requests = meter.createCounter('http.requests', { valueType: ValueType.INT });
  const duration = meter.createHistogram('http.duration', { unit: 'ms' });
  const size = meter.createHistogram('payload.size', { unit: 'By' });
  requests.add(5, { method: 'GET' });
  for (const v of [1, 20, 300, 4000]) duration.record(v);
  for (const v of [-2, 5, 5000]) size.record(Math.abs(v));
  await capture('delta-1', reader);
  requests.add(2, { method: 'GET' });
  await capture('delta-2', reader);
  await meterProvider.shutdown();
}

// Big and tiny doubles as JSON.stringify writes them: every whole double below 1e21 without an
// exponent, so 2 ** 64 goes out as the integer literal 18446744073709552000 (beyond 64 bits),
// larger ones as 1e+21 .. 1.7976931348623157e+308, the smallest as 5e-324. (-0 is not here:
// JSON.stringify writes it as 0, so the JSON and protobuf captures would differ.) The SDK
// writes a whole-valued attribute number as intValue, so attribute doubles are fractions.
{
  const { reader, meterProvider } = provider(AggregationTemporality.CUMULATIVE);
  const meter = meterProvider.getMeter('corpus.numbers');
  const values = {
    two64: 2 ** 64,
    js_big: 1.2345678901234568e20,
    below_1e21: 999999999999999900000,
    at_1e21: 1e21,
    e300: 1e300,
    max: Number.MAX_VALUE,
    minus_max: -Number.MAX_VALUE,
    tiny: 5e-324,
    two53_plus_2: 2 ** 53 + 2,
  };
  meter.createObservableGauge('numbers.gauge').addCallback((r) => {
    for (const [name, v] of Object.entries(values)) r.observe(v, { case: name, tiny: 5e-324, small: 1e-7 });
  });
  const counter = meter.createCounter('numbers.counter');
  counter.add(2 ** 64, { case: 'two64' });
  counter.add(1e300, { case: 'e300' });
  const histogram = meter.createHistogram('numbers.histogram', {
    advice: { explicitBucketBoundaries: [1e20, 2 ** 64, 1e300] },
  });
  for (const v of [2 ** 64, 2 ** 65]) histogram.record(v, { whole: true });
  for (const v of [1.2345678901234568e20, 1e300]) histogram.record(v, { whole: false });
  const size = meter.createHistogram('numbers.size');
  for (const v of [2 ** 64, 1.2345678901234568e20, 5e-324]) size.record(v);
  await capture('big-numbers', reader);
  await meterProvider.shutdown();
}

server.close();
