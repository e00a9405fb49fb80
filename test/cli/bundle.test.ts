import { appendFile, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { SANDBOX_TILE } from '../../sandbox/index.js';
import { runCli, sandboxEnv, writeWorkspace } from '../support/cli-harness.js';
import { detailQuery } from '../support/queries.js';
import { describeWithPushgateway, samplesOf } from '../metrics/pushgateway.js';
import { describeWithFakeGcs } from '../support/fake-gcs-server.js';
import { runFile as run, shippedBundleForAll } from '../support/shipped-bundle.js';

const bundle = shippedBundleForAll('bundle-test');
const BUNDLE = bundle.dir;

describe('the shipped bundle (scripts/bundle.mjs)', () => {
  it('lists every command in --help', async () => {
    const { stdout } = await run(process.execPath, [path.join(BUNDLE, 'tilehouse.js'), '--help']);
    for (const command of ['run', 'schedule', 'backfill', 'plan', 'validate', 'init', 'k8s']) expect(stdout).toMatch(new RegExp(`^  ${command} `, 'm'));
  });

  // V8 keeps a module's source in the heap, two bytes a character for the whole chunk if one
  // character is outside Latin-1 (the comments of src/ hold "—" and "…"): the bundle escapes them.
  it('is ASCII in every chunk, comments included', async () => {
    const chunks = (await readdir(BUNDLE)).filter((name) => name.endsWith('.js'));
    expect(chunks.length).toBeGreaterThan(5);
    const nonAscii = [];
    for (const name of chunks) {
      const text = await readFile(path.join(BUNDLE, name), 'utf8');
      const at = text.search(/[^\x00-\x7f]/);
      if (at >= 0) nonAscii.push(`${name}: ${JSON.stringify(text.slice(Math.max(0, at - 30), at + 10))}`);
    }
    expect(nonAscii).toEqual([]);
  });

  // zod re-exports ~50 locales through z.locales (370 KB on the run path); the bundle keeps the
  // English one zod registers itself, and a schema's error still reads in English.
  it("holds zod's English locale only, and zod's messages still read in English", async () => {
    // The chunks are minified: which modules they hold, their source maps say.
    const maps = (await readdir(BUNDLE)).filter((name) => name.endsWith('.js.map'));
    const locales = new Set<string>();
    for (const name of maps) {
      const { sources } = JSON.parse(await readFile(path.join(BUNDLE, name), 'utf8')) as { sources: string[] };
      for (const source of sources) {
        const match = /zod\/v4\/locales\/(\S+)$/.exec(source);
        if (match !== null) locales.add(match[1]!);
      }
    }
    expect(maps.length).toBeGreaterThan(5);
    expect([...locales]).toEqual(['en.js']);
    const workspace = await writeWorkspace(
      path.join(bundle.root, 'locale'),
      bundle.sandbox,
      [{ name: 'incident_detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] }],
      { concurrency: 'many' },
    );
    const result = await run(process.execPath, [
      path.join(BUNDLE, 'tilehouse.js'),
      'validate',
      '--config',
      workspace.configFile,
      '--jobs',
      workspace.jobsDir,
    ]).catch((error: { code: number; stderr: string }) => error);
    expect(result).toMatchObject({ code: 2 });
    expect((result as { stderr: string }).stderr).toMatch(/expected number, received string/i);
  });

  // undici's HTTP/1.1 client requires its HTTP/2 client, which loaded node:http2 and tls only for
  // constants (~4 MB of a 5-row run's peak RSS); tilehouse never opens an HTTP/2 session.
  it('runs a tile without loading node:http2 or tls (HTTP/1.1 source)', async () => {
    const workspace = await writeWorkspace(
      path.join(bundle.root, 'no-http2'),
      bundle.sandbox,
      [{ name: 'incident_detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] }],
      { itemsPerPage: 40 },
    );
    const loaded = path.join(bundle.root, 'no-http2.builtins');
    const preload = `data:text/javascript,${encodeURIComponent(`import { writeFileSync } from 'node:fs'; process.on('exit', () => writeFileSync(${JSON.stringify(loaded)}, process.moduleLoadList.join('\\n')));`)}`;
    const result = await run(
      process.execPath,
      ['--import', preload, path.join(BUNDLE, 'tilehouse.js'), 'run', '--config', workspace.configFile, '--jobs', workspace.jobsDir],
      {
        env: { ...process.env, ...sandboxEnv(bundle.sandbox) },
      },
    );
    expect(result.stderr).toMatch(/1 succeeded, 0 failed/);
    const builtins = (await readFile(loaded, 'utf8')).split('\n');
    // The check itself sees what it should: the run loaded undici's HTTP/1.1 parts over node:net.
    expect(builtins).toContain('NativeModule net');
    expect(builtins.filter((name) => /^NativeModule (http2|tls|_tls_wrap|internal\/http2\/)/.test(name))).toEqual([]);
  });

  it('runs a tile to the same CSV as the source code does', async () => {
    const job = { name: 'incident_detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] };
    const bundled = await writeWorkspace(path.join(bundle.root, 'bundled'), bundle.sandbox, [job], { itemsPerPage: 40 });
    const source = await writeWorkspace(path.join(bundle.root, 'source'), bundle.sandbox, [job], { itemsPerPage: 40 });
    const result = await run(process.execPath, [path.join(BUNDLE, 'tilehouse.js'), 'run', '--config', bundled.configFile, '--jobs', bundled.jobsDir], {
      env: { ...process.env, ...sandboxEnv(bundle.sandbox) },
    });
    expect(result.stderr).toMatch(/1 succeeded, 0 failed/);
    expect((await runCli(['run', '--config', source.configFile, '--jobs', source.jobsDir], { env: sandboxEnv(bundle.sandbox) })).exitCode).toBe(0);
    const file = 'incident_detail.csv';
    expect(await readFile(path.join(bundled.outDir, file), 'utf8')).toBe(await readFile(path.join(source.outDir, file), 'utf8'));
  });
});

describeWithPushgateway('the shipped bundle with metrics configured', (gateway) => {
  // prom-client is loaded lazily (a chunk of its own): only the bundle shows whether that import
  // still finds its classes (esbuild's interop once made it "Registry is not a constructor").
  it('pushes its run metrics to the Pushgateway', async () => {
    const job = { name: 'incident_detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] };
    const workspace = await writeWorkspace(path.join(bundle.root, 'metrics'), bundle.sandbox, [job], { itemsPerPage: 40 });
    await appendFile(workspace.configFile, `metrics:\n  pushgatewayUrl: ${gateway.url}\n`);
    const result = await run(process.execPath, [path.join(BUNDLE, 'tilehouse.js'), 'run', '--config', workspace.configFile, '--jobs', workspace.jobsDir], {
      env: { ...process.env, ...sandboxEnv(bundle.sandbox) },
    });
    expect(result.stderr).not.toMatch(/metrics push .* failed/);
    expect(samplesOf(await gateway.scrape(), 'tilehouse_last_run_rows')).toEqual([{ labels: { instance: '', job: 'incident_detail' }, value: 150 }]);
  });
});

describeWithFakeGcs('the shipped bundle with a gs:// CSV target', (gcs) => {
  // The storage client stays in node_modules (external) and is imported only by a gs:// target:
  // a local CSV run's cold start must not pay for it. The resolve hook records what each run loads.
  const runBundled = (name: string, sinks: Array<Record<string, unknown>>) =>
    bundle.runRecorded(name, sinks, { env: { ...process.env, STORAGE_EMULATOR_HOST: gcs.origin } });

  it('writes the object from the bundle, loading @google-cloud/storage only then', async () => {
    const bucket = await gcs.newBucket('bundle');
    const remote = await runBundled('bundle-gcs', [{ type: 'csv', path: `gs://${bucket}/{name}.csv` }]);
    expect(remote.stderr).toMatch(/1 succeeded, 0 failed/);
    expect(remote.loaded).toContain('/node_modules/@google-cloud/storage/');
    const local = await runBundled('bundle-local', [{ type: 'csv' }]);
    expect(local.stderr).toMatch(/1 succeeded, 0 failed/);
    const [object] = await gcs.storage.bucket(bucket).file('incident_detail.csv').download();
    expect(object.equals(await readFile(path.join(local.outDir, 'incident_detail.csv')))).toBe(true);
    expect(local.loaded).not.toContain('@google-cloud/storage');
    expect(local.loaded).not.toContain('@google-cloud/bigquery');
  });
});

describe('the shipped bundle and OpenTelemetry', () => {
  // @opentelemetry/* stays in node_modules (scripts/bundle.mjs), imported by
  // src/telemetry/open-telemetry.ts only when OTEL_* variables turn telemetry on: with none set, a
  // run must load none of it. The resolve hook records every module the run loads.
  function runRecorded(name: string, env: Record<string, string>) {
    const clean = Object.fromEntries(
      Object.entries(process.env).filter(([key]) => !key.startsWith('OTEL_') && !['TRACEPARENT', 'TRACESTATE', 'BAGGAGE'].includes(key)),
    );
    return bundle.runRecorded(name, [{ type: 'csv' }], { env: { ...clean, ...env } });
  }

  it('loads no @opentelemetry module when no OTEL variable is set, nor with OTEL_SDK_DISABLED=true', async () => {
    const off = await runRecorded('otel-off', {});
    expect(off.stderr).toMatch(/1 succeeded, 0 failed/);
    // The record sees what it should: the run loaded the bundle's chunks.
    expect(off.loaded).toContain(`${path.basename(BUNDLE)}/tilehouse.js`);
    expect(off.loaded).not.toContain('@opentelemetry');
    const disabled = await runRecorded('otel-disabled', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_SDK_DISABLED: 'true' });
    expect(disabled.stderr).toMatch(/1 succeeded, 0 failed/);
    expect(disabled.loaded).not.toContain('@opentelemetry');
  });

  it('loads it from node_modules when an OTLP endpoint is set, and the run still succeeds', async () => {
    // Port 9 (discard) refuses on loopback: the export fails, the run does not.
    const on = await runRecorded('otel-on', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9', OTEL_EXPORTER_OTLP_TIMEOUT: '1000' });
    expect(on.stderr).toMatch(/1 succeeded, 0 failed/);
    expect(on.loaded).toContain('/node_modules/@opentelemetry/sdk-trace/');
    expect(on.loaded).toContain('/node_modules/@opentelemetry/exporter-trace-otlp-http/');
    expect(on.stderr).toMatch(/telemetry export to http:\/\/127\.0\.0\.1:9\/v1\/(traces|metrics) failed/);
  });
});

describe('the shipped bundle and OpenLineage', () => {
  // src/lineage/open-lineage.ts imports the emitter, its events and transports only when a
  // transport is set: with none, a run must not load the chunks that hold them. The chunks are
  // found by a string only their modules hold.
  async function chunkHolding(text: string): Promise<string> {
    for (const name of await readdir(BUNDLE)) {
      if (name.endsWith('.js') && (await readFile(path.join(BUNDLE, name), 'utf8')).includes(text)) return name;
    }
    throw new Error(`no chunk of ${BUNDLE} holds ${text}`);
  }
  function runRecorded(name: string, env: Record<string, string>) {
    const clean = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('OPENLINEAGE')));
    return bundle.runRecorded(name, [{ type: 'csv' }], { env: { ...clean, ...env } });
  }

  it('loads no lineage chunk when no OPENLINEAGE variable is set, nor with OPENLINEAGE_DISABLED=true', async () => {
    const emitter = await chunkHolding('lineage shut down');
    const events = await chunkHolding('https://openlineage.io/spec/2-0-2/OpenLineage.json');
    const settings: Array<Record<string, string>> = [{}, { OPENLINEAGE_URL: 'http://127.0.0.1:9', OPENLINEAGE_DISABLED: 'true' }];
    for (const env of settings) {
      const off = await runRecorded(`lineage-off-${Object.keys(env).length}`, env);
      expect(off.stderr).toMatch(/1 succeeded, 0 failed/);
      expect(off.loaded).toContain(`${path.basename(BUNDLE)}/tilehouse.js`);
      expect(off.loaded).not.toContain(`/${emitter}`);
      expect(off.loaded).not.toContain(`/${events}`);
    }
  });

  it('loads them with the file transport, writes the events, and not the Google transport', async () => {
    const file = path.join(bundle.root, 'bundle-lineage.jsonl');
    const on = await runRecorded('lineage-on', { OPENLINEAGE__TRANSPORT__TYPE: 'file', OPENLINEAGE__TRANSPORT__LOG_FILE_PATH: file });
    expect(on.stderr).toMatch(/1 succeeded, 0 failed/);
    expect(on.loaded).toContain(`/${await chunkHolding('lineage shut down')}`);
    expect(on.loaded).not.toContain(`/${await chunkHolding('processOpenLineageRunEvent')}`);
    const types = (await readFile(file, 'utf8'))
      .trimEnd()
      .split('\n')
      .map((line) => (JSON.parse(line) as { eventType: string }).eventType);
    expect(types).toEqual(['START', 'COMPLETE']);
  });
});
