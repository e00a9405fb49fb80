import { describeUnless } from '../../support/skip.js';
import { icebergCatalogsBlocker, icebergPython, useIcebergCatalog } from '../../support/iceberg-catalogs.js';
import { writerModeScenarios } from './writer-mode-scenarios.js';

describeUnless(icebergCatalogsBlocker(['rest']))(
  'writeIcebergRun partition and merge through the REST catalog (Apache Iceberg REST server; pyiceberg and DuckDB read back)',
  () => {
    const catalog = useIcebergCatalog('rest');
    writerModeScenarios(icebergPython(), () => catalog);
  },
);
