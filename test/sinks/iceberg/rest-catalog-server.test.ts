import { afterAll, beforeAll, expect, it } from 'vitest';
import { icebergPythonOrSkip, readIceberg } from '../../support/iceberg-readers.js';
import { icebergRestLibOrSkip, type RunningIcebergRest, startIcebergRest } from '../../support/iceberg-rest-server.js';
import { describeUnless, missing } from '../../support/skip.js';

const lib = icebergRestLibOrSkip();
const python = icebergPythonOrSkip();

// The test infrastructure itself: Apache Iceberg's REST server as the setup installs it, and
// pyiceberg reading what it holds. If this fails, every Iceberg catalog test would.
describeUnless(missing('the Iceberg REST catalog server', lib) ?? missing('the Iceberg readers', python))(
  'the Iceberg REST catalog test server (Apache Iceberg REST server, Iceberg readers venv)',
  () => {
    let server: RunningIcebergRest;
    beforeAll(async () => {
      server = await startIcebergRest(lib!);
    }, 180_000);
    afterAll(async () => {
      await server?.stop();
    });

    it('answers /v1/config, creates a namespace and a table, and pyiceberg loads the table it made', async () => {
      const config = (await (await fetch(`${server.uri}/v1/config`)).json()) as { endpoints?: string[] };
      expect(config.endpoints).toContain('POST /v1/{prefix}/namespaces/{namespace}/tables/{table}');
      const post = (path: string, body: unknown) =>
        fetch(`${server.uri}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      expect((await post('/v1/namespaces', { namespace: ['smoke'] })).status).toBe(200);
      const created = await post('/v1/namespaces/smoke/tables', {
        name: 'tiles',
        schema: { type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'id', required: false, type: 'long' }] },
        properties: { 'format-version': '2' },
      });
      expect(created.status).toBe(200);
      const table = await readIceberg(python!, 'pyiceberg-table', { catalog: { type: 'rest', uri: server.uri }, table: 'smoke.tiles' });
      expect(table).toMatchObject({ formatVersion: 2, currentSnapshotId: null, snapshots: [], fields: [{ id: 1, name: 'id', type: 'long', required: false }] });
      expect(table.location.startsWith(`file:${server.warehouse}`) || table.location.startsWith(`file://${server.warehouse}`)).toBe(true);
      // Sized from what it does: one Python process importing pyiceberg and pyarrow (2–5 s quiet,
      // over 30 s seen at a load average of 20 on 2 cores), not from a quiet machine's speed.
    }, 120_000);
  },
);
