import { icebergCatalogsBlocker, icebergPython, useIcebergCatalog } from '../../support/iceberg-catalogs.js';
import { describeUnless } from '../../support/skip.js';
import { housekeepingScenarios } from './housekeeping-scenarios.js';

describeUnless(icebergCatalogsBlocker(['rest']))(
  'Iceberg housekeeping through the REST catalog (Apache Iceberg REST server; pyiceberg and DuckDB read back)',
  () => {
    const catalog = useIcebergCatalog('rest');
    housekeepingScenarios(icebergPython(), () => ({ ...catalog, childCatalog: catalog.opening }));
  },
);
