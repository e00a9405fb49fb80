/**
 * Tile ids the sandbox knows unless told otherwise. Real tile ids are opaque; the spec's `$date`
 * timestamps suggest a MongoDB back end, so these look like ObjectIds. The demo jobs in `jobs/`
 * use them.
 */
export const DEMO_TILES = {
  incidentsByMonthSeverity: '65f0a1c2d3e4f5a6b7c8d901',
  incidentTypesResolution: '65f0a1c2d3e4f5a6b7c8d902',
  tagPostmortemBreakdown: '65f0a1c2d3e4f5a6b7c8d903',
  dailyIncidentsBySeverity: '65f0a1c2d3e4f5a6b7c8d904',
  incidentsIncremental: '65f0a1c2d3e4f5a6b7c8d905',
} as const;

/** A memorable id for tests and the benchmark, which send their own queries. */
export const SANDBOX_TILE = 'sandbox-tile';

export const DEFAULT_TILE_IDS: readonly string[] = Object.freeze([...Object.values(DEMO_TILES), SANDBOX_TILE]);
