import { describeUnless } from '../../support/skip.js';
import { icebergCatalogsBlocker, icebergPython, useIcebergCatalog } from '../../support/iceberg-catalogs.js';
import { writerScenarios } from './writer-scenarios.js';

describeUnless(icebergCatalogsBlocker(['rest']))(
  'writeIcebergRun through the REST catalog (Apache Iceberg REST server; pyiceberg and DuckDB read back)',
  () => {
    const catalog = useIcebergCatalog('rest');
    writerScenarios(icebergPython(), () => catalog);
  },
);
