import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { openJdbcCatalog } from '../../../src/sinks/iceberg/jdbc-catalog.js';
import { icebergPythonOrSkip } from '../../support/iceberg-readers.js';
import { postgresBlocker, postgresOrSkip, usePostgresDatabase } from '../../support/postgres.js';
import { describeUnless, missing } from '../../support/skip.js';
import { type HousekeepingContext, housekeepingScenarios } from './housekeeping-scenarios.js';

const server = postgresOrSkip();
const python = icebergPythonOrSkip();

describeUnless(postgresBlocker(server) ?? missing('the Iceberg readers', python))(
  "Iceberg housekeeping through the JDBC catalog on PostgreSQL (pyiceberg's SqlCatalog and DuckDB read back)",
  () => {
    const database = usePostgresDatabase(server!);
    const context = {} as HousekeepingContext;
    let warehouse: string;
    beforeAll(async () => {
      warehouse = await mkdtemp(join(tmpdir(), 'tilehouse-iceberg-housekeeping-'));
      const catalogName = 'tilehouse_jdbc';
      const { host, port, user, password } = server!;
      const options = { catalogName, warehouse, connection: { host, port, user, password, database: database.name } };
      context.catalog = await openJdbcCatalog(options);
      context.catalogName = catalogName;
      context.childCatalog = { kind: 'jdbc', options };
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
    housekeepingScenarios(python!, () => context);
  },
);
