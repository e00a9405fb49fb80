import { describeUnless } from '../../support/skip.js';
import { icebergCatalogsBlocker, icebergPython, useIcebergCatalog } from '../../support/iceberg-catalogs.js';
import { writerScenarios } from './writer-scenarios.js';

describeUnless(icebergCatalogsBlocker(['jdbc']))("writeIcebergRun through the JDBC catalog on PostgreSQL (pyiceberg's SqlCatalog and DuckDB read back)", () => {
  const catalog = useIcebergCatalog('jdbc');
  writerScenarios(icebergPython(), () => catalog);
});
