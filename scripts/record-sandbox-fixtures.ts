/**
 * Writes test/fixtures/recordings/sandbox-*.json: `tilehouse probe` run against the sandbox in two
 * of its odd modes, the first fixtures of test/source/recordings.test.ts (issue 19). Re-run after
 * a change to the recording format: `npx tsx scripts/record-sandbox-fixtures.ts`.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { main } from '../src/cli.js';
import { SANDBOX_TILE, startSandbox, type SandboxOptions } from '../sandbox/index.js';
// The pipeline tests' detail query: one row per incident, text that needs quoting, a datetime.
import { detailQuery } from '../test/support/queries.js';

const FIXTURES = fileURLToPath(new URL('../test/fixtures/recordings/', import.meta.url));

interface Fixture {
  file: string;
  job: string;
  sandbox: SandboxOptions;
  probe: string[];
}

const fixtures: Fixture[] = [
  {
    // The echo is the tile's saved query (pageNumber 0 on every page); shapes only, 2 of 3 pages:
    // the replay synthesizes values, and page 2 entirely.
    file: 'sandbox-saved-query-echo.json',
    job: 'saved_query_echo',
    sandbox: { incidents: 130, echo: 'saved-query' },
    probe: ['--pages', '2'],
  },
  {
    // Everything a tenant might do differently at once, with values: gzip, no echo at all, rows
    // as objects keyed by header, datetimes as ISO text.
    file: 'sandbox-gzip-objects-iso-no-echo.json',
    job: 'gzip_objects_iso',
    sandbox: { incidents: 70, echo: 'absent', compress: true, rowShape: 'object', datetimeFormat: 'iso' },
    probe: ['--pages', '5', '--with-values'],
  },
];

class Sink extends Writable {
  text = '';
  override _write(chunk: Buffer, _encoding: BufferEncoding, done: () => void): void {
    this.text += chunk.toString('utf8');
    done();
  }
}

await mkdir(FIXTURES, { recursive: true });
for (const fixture of fixtures) {
  const sandbox = await startSandbox(fixture.sandbox);
  const root = await mkdtemp(path.join(tmpdir(), 'tilehouse-fixture-'));
  try {
    const jobs = path.join(root, 'jobs');
    await mkdir(jobs);
    const config = path.join(root, 'env.yaml');
    await writeFile(
      config,
      stringify({
        source: { baseUrl: sandbox.url, authUrl: sandbox.url, clientId: sandbox.clientId, clientSecret: '${SANDBOX_SECRET}' },
        sinks: { csv: { directory: path.join(root, 'out') } },
      }),
    );
    await writeFile(path.join(jobs, `${fixture.job}.yaml`), stringify({ name: fixture.job, tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] }));
    const stderr = new Sink();
    const file = path.join(FIXTURES, fixture.file);
    const code = await main(['probe', '--config', config, '--jobs', jobs, '--job', fixture.job, '--record', file, ...fixture.probe], {
      env: { SANDBOX_SECRET: sandbox.clientSecret },
      stdout: process.stdout,
      stderr,
    });
    process.stderr.write(stderr.text);
    if (code !== 0) throw new Error(`probe for ${fixture.file} exited ${code}`);
  } finally {
    await sandbox.close();
    await rm(root, { recursive: true, force: true });
  }
}
