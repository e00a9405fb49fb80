import type { SinkKind } from '../sink-kind.js';
import { bigqueryLedgerRecorder } from './ledger-recorder.js';
import { bigqueryWindowStateReaders } from './window-state.js';

/** The BigQuery sink, as the rest of tilehouse sees it. */
export const bigquerySinkKind: SinkKind = {
  type: 'bigquery',
  runRecorder: bigqueryLedgerRecorder,
  windowStateReaders: (job, _sinks, environment, options, logger) => bigqueryWindowStateReaders(job, environment, options, logger),
};
