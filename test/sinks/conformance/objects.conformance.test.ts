// The conformance scenarios (scenarios.ts) for the file kinds on the object stores: gs://
// (fake-gcs-server behind the precondition proxy) and s3:// (moto), as object-stores.ts gives them.
import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describeWithObjectStores, type TestObjectStore } from '../../support/object-stores.js';
import { leafSchema } from '../parquet/parquet-test-support.js';
import { type ConformanceBackend, conformanceScenarios } from './scenarios.js';

function objectBackend(store: TestObjectStore, kind: 'csv' | 'parquet'): ConformanceBackend {
  let bucket: Promise<string> | undefined;
  const bucketOnce = () => {
    bucket ??= store.newBucket(`conformance-${kind}`);
    return bucket;
  };
  let root = '';
  return {
    kind,
    name: `objects in a ${store.scheme}:// bucket`,
    sink: () => ({ type: kind, manifest: true }),
    async configure(workspace) {
      root = workspace.root;
      await store.configure(workspace.configFile);
      // The kind's directory is the bucket: the target is <scheme>://<bucket>/conformance.<ext>.
      const { parse, stringify } = await import('yaml');
      const { readFile } = await import('node:fs/promises');
      const config = parse(await readFile(workspace.configFile, 'utf8')) as { sinks: Record<string, Record<string, unknown>> };
      config.sinks[kind] = { ...config.sinks[kind], directory: `${store.scheme}://${await bucketOnce()}` };
      await writeFile(workspace.configFile, stringify(config));
      return store.processEnv();
    },
    seams: () => store.seams(),
    async storedColumns(target) {
      const key = target.slice(`${store.scheme}://${await bucketOnce()}/`.length);
      const bytes = await store.bytes(await bucketOnce(), key);
      if (kind === 'csv')
        return bytes
          .toString('utf8')
          .split(/\r?\n/)[0]!
          .split(',')
          .map((name) => ({ name }));
      // DuckDB reads a file: the object's bytes, copied out.
      const copy = path.join(root, 'stored.parquet');
      await writeFile(copy, bytes);
      return [...(await leafSchema(copy)).keys()].map((name) => ({ name }));
    },
    async contents(target) {
      const bytes = await store.bytes(await bucketOnce(), target.slice(`${store.scheme}://${await bucketOnce()}/`.length));
      return `${bytes.length} bytes, sha256 ${createHash('sha256').update(bytes).digest('hex')}`;
    },
    losePermission: {
      cannot:
        store.kind === 'gcs'
          ? 'fake-gcs-server has no IAM: every request is allowed'
          : "moto does not enforce a bucket's policy against these credentials (it answers as the bucket's owner)",
    },
  };
}

describeWithObjectStores('the sink contract on an object store', (store) => {
  conformanceScenarios(objectBackend(store, 'csv'));
  conformanceScenarios(objectBackend(store, 'parquet'));
});
