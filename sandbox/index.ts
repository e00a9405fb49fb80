/** The local sandbox of the incident API (token endpoint + export endpoint). See README.md for its semantics. */
export { startSandbox, DEFAULT_NOW, TOKEN_PATH, EXPORT_PATH, type Sandbox, type SandboxOptions } from './sandbox.js';
export { DEFAULT_TILE_IDS, DEMO_TILES, SANDBOX_TILE } from './tiles.js';
export type { FaultRule, FaultKind, FaultEndpoint, RequestMatch } from './faults.js';
export type { RecordedRequest, Endpoint } from './request-log.js';
export type { DatetimeFormat, RowShape } from './wire-format.js';
export { generateDataset, incidentAt, HISTORY_DAYS, type Dataset, type Incident } from './dataset.js';
export { QueryError } from './query-error.js';
