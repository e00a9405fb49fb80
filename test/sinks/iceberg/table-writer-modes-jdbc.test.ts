import { describeUnless } from '../../support/skip.js';
import { icebergCatalogsBlocker, icebergPython, useIcebergCatalog } from '../../support/iceberg-catalogs.js';
import { writerModeScenarios } from './writer-mode-scenarios.js';

describeUnless(icebergCatalogsBlocker(['jdbc']))(
  "writeIcebergRun partition and merge through the JDBC catalog on PostgreSQL (pyiceberg's SqlCatalog and DuckDB read back)",
  () => {
    const catalog = useIcebergCatalog('jdbc');
    writerModeScenarios(icebergPython(), () => catalog);
  },
);
