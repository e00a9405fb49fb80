// The AWS SDK is bundled into chunks of its own (scripts/bundle.mjs) that only an s3:// target
// imports: a run without one must not pay for it. The resolve hook records what each run loads,
// and each chunk's source map names the package files it holds (the chunks are minified).
import { execFile } from 'node:child_process';
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { stringify, parse } from 'yaml';
import { SANDBOX_TILE, startSandbox, type Sandbox } from '../../sandbox/index.js';
import { sandboxEnv, writeWorkspace } from '../support/cli-harness.js';
import { detailQuery } from '../support/queries.js';
import { describeWithS3, getBytes, TEST_AWS_ENV } from '../support/s3-server.js';
import { makeTempDir } from '../support/temp-dir.js';

const run = promisify(execFile);
const BUNDLE = path.resolve('.tmp', `bundle-s3-test-${process.pid}`);
const RECORD_IMPORTS = path.resolve('test/support/record-imports.mjs');

let sandbox: Sandbox;
let root: string;
beforeAll(async () => {
  await run(process.execPath, ['scripts/bundle.mjs', BUNDLE]);
  sandbox = await startSandbox({ incidents: 150 });
  root = await makeTempDir();
}, 60_000);
afterAll(async () => {
  await sandbox?.close();
  await rm(BUNDLE, { recursive: true, force: true });
  await rm(root, { recursive: true, force: true });
});

describeWithS3('the shipped bundle with an s3:// target', (s3) => {
  async function runBundled(name: string, sinks: Array<Record<string, unknown>>): Promise<{ stderr: string; loaded: string; outDir: string }> {
    const workspace = await writeWorkspace(path.join(root, name), sandbox, [{ name: 'incident_detail', tile: SANDBOX_TILE, query: detailQuery, sinks }], {
      itemsPerPage: 40,
    });
    const config = parse(await readFile(workspace.configFile, 'utf8')) as { sinks: Record<string, unknown> };
    config.sinks.s3 = { endpoint: s3.endpoint };
    await writeFile(workspace.configFile, stringify(config));
    const record = path.join(root, `${name}.imports`);
    await writeFile(record, '');
    const result = await run(
      process.execPath,
      ['--import', RECORD_IMPORTS, path.join(BUNDLE, 'tilehouse.js'), 'run', '--config', workspace.configFile, '--jobs', workspace.jobsDir],
      {
        env: { ...process.env, ...sandboxEnv(sandbox), ...TEST_AWS_ENV, TILEHOUSE_RECORD_IMPORTS: record },
      },
    );
    // The run's loaded modules, and the packages the loaded chunks hold.
    const urls = (await readFile(record, 'utf8')).split('\n').filter(Boolean);
    const chunks = urls.filter((url) => url.startsWith('file:') && url.includes('/.tmp/bundle-s3-test-'));
    const maps = await Promise.all(chunks.map(async (url) => JSON.parse(await readFile(new URL(`${url}.map`), 'utf8')) as { sources: string[] }));
    const packages = maps.flatMap(({ sources }) =>
      sources.filter((source) => source.includes('node_modules/')).map((source) => `// ${source.slice(source.indexOf('node_modules/'))}`),
    );
    return { stderr: result.stderr, loaded: [...urls, ...packages].join('\n'), outDir: workspace.outDir };
  }

  it('writes the object from the bundle, loading the AWS SDK only then', async () => {
    const bucket = await s3.newBucket('bundle');
    const remote = await runBundled('bundle-s3', [{ type: 'csv', path: `s3://${bucket}/{name}.csv` }]);
    expect(remote.stderr).toMatch(/1 succeeded, 0 failed/);
    expect(remote.loaded).toContain('// node_modules/@aws-sdk/client-s3/');
    const local = await runBundled('bundle-s3-local', [{ type: 'csv' }]);
    expect(local.stderr).toMatch(/1 succeeded, 0 failed/);
    expect((await getBytes(s3.client, bucket, 'incident_detail.csv')).equals(await readFile(path.join(local.outDir, 'incident_detail.csv')))).toBe(true);
    expect(local.loaded).not.toContain('@aws-sdk');
    expect(local.loaded).not.toContain('@smithy');
  });
});
