import { afterAll, beforeAll } from 'vitest';
import { openRestCatalog } from '../../../src/sinks/iceberg/rest-catalog.js';
import { icebergPythonOrSkip } from '../../support/iceberg-readers.js';
import { icebergRestLibOrSkip, type RunningIcebergRest, startIcebergRest } from '../../support/iceberg-rest-server.js';
import { describeUnless, missing } from '../../support/skip.js';
import { writerModeScenarios } from './writer-mode-scenarios.js';
import type { WriterContext } from './writer-scenarios.js';

const lib = icebergRestLibOrSkip();
const python = icebergPythonOrSkip();

describeUnless(missing('the Iceberg REST catalog server', lib) ?? missing('the Iceberg readers', python))(
  'writeIcebergRun partition and merge through the REST catalog (Apache Iceberg REST server; pyiceberg and DuckDB read back)',
  () => {
    let server: RunningIcebergRest | undefined;
    const context = {} as WriterContext;
    beforeAll(async () => {
      server = await startIcebergRest(lib!);
      context.catalog = await openRestCatalog({ uri: server.uri });
      context.pyCatalog = { type: 'rest', uri: server.uri };
    }, 180_000);
    afterAll(async () => {
      await context.catalog?.close();
      await server?.stop();
    });
    writerModeScenarios(python!, () => context);
  },
);
