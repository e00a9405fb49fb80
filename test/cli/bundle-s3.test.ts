// The AWS SDK is bundled into chunks of its own (scripts/bundle.mjs) that only an s3:// target
// imports: a run without one must not pay for it. The resolve hook records what each run loads,
// and each chunk's source map names the package files it holds (the chunks are minified).
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { describeWithS3, getBytes, TEST_AWS_ENV } from '../support/s3-server.js';
import { shippedBundleForAll } from '../support/shipped-bundle.js';

const bundle = shippedBundleForAll('bundle-s3-test');

describeWithS3('the shipped bundle with an s3:// target', (s3) => {
  async function runBundled(name: string, sinks: Array<Record<string, unknown>>): Promise<{ stderr: string; loaded: string; outDir: string }> {
    const configure = async (configFile: string) => {
      const config = parse(await readFile(configFile, 'utf8')) as { sinks: Record<string, unknown> };
      config.sinks.s3 = { endpoint: s3.endpoint };
      await writeFile(configFile, stringify(config));
    };
    const run = await bundle.runRecorded(name, sinks, { env: { ...process.env, ...TEST_AWS_ENV }, configure });
    // The run's loaded modules, and the packages the loaded chunks hold.
    const urls = run.loaded.split('\n').filter(Boolean);
    const chunks = urls.filter((url) => url.startsWith('file:') && url.includes(`/.tmp/${path.basename(bundle.dir)}/`));
    const maps = await Promise.all(chunks.map(async (url) => JSON.parse(await readFile(new URL(`${url}.map`), 'utf8')) as { sources: string[] }));
    const packages = maps.flatMap(({ sources }) =>
      sources.filter((source) => source.includes('node_modules/')).map((source) => `// ${source.slice(source.indexOf('node_modules/'))}`),
    );
    return { ...run, loaded: [...urls, ...packages].join('\n') };
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
