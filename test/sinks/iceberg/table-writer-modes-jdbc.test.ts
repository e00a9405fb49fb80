import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { openJdbcCatalog } from '../../../src/sinks/iceberg/jdbc-catalog.js';
import { icebergPythonOrSkip } from '../../support/iceberg-readers.js';
import { postgresBlocker, postgresOrSkip, usePostgresDatabase } from '../../support/postgres.js';
import { describeUnless, missing } from '../../support/skip.js';
import { writerModeScenarios } from './writer-mode-scenarios.js';
import type { WriterContext } from './writer-scenarios.js';

const server = postgresOrSkip();
const python = icebergPythonOrSkip();

describeUnless(postgresBlocker(server) ?? missing('the Iceberg readers', python))(
  "writeIcebergRun partition and merge through the JDBC catalog on PostgreSQL (pyiceberg's SqlCatalog and DuckDB read back)",
  () => {
    const database = usePostgresDatabase(server!);
    const context = {} as WriterContext;
    let warehouse: string;
    beforeAll(async () => {
      warehouse = await mkdtemp(join(tmpdir(), 'tilehouse-iceberg-modes-'));
      const catalogName = 'tilehouse_jdbc';
      const { host, port, user, password } = server!;
      context.catalog = await openJdbcCatalog({ catalogName, warehouse, connection: { host, port, user, password, database: database.name } });
      context.catalogName = catalogName;
      context.pyCatalog = {
        type: 'sql',
        uri: `postgresql+psycopg2://${encodeURIComponent(user)}:${encodeURIComponent(password)}@${host}:${port}/${database.name}`,
        warehouse: `file://${warehouse}`,
      };
    });
    afterAll(async () => {
      await context.catalog?.close();
      await rm(warehouse, { recursive: true, force: true });
    });
    writerModeScenarios(python!, () => context);
  },
);
