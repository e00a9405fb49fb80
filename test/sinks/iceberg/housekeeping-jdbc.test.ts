import { icebergCatalogsBlocker, icebergPython, useIcebergCatalog } from '../../support/iceberg-catalogs.js';
import { describeUnless } from '../../support/skip.js';
import { housekeepingScenarios } from './housekeeping-scenarios.js';

describeUnless(icebergCatalogsBlocker(['jdbc']))(
  "Iceberg housekeeping through the JDBC catalog on PostgreSQL (pyiceberg's SqlCatalog and DuckDB read back)",
  () => {
    const catalog = useIcebergCatalog('jdbc');
    housekeepingScenarios(icebergPython(), () => ({ ...catalog, childCatalog: catalog.opening }));
  },
);
