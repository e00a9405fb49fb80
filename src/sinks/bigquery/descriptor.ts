import type { SinkKind } from '../sink-kind.js';
import { bigqueryWorkspaceChecker } from './workspace-checks.js';
import { bigqueryLedgerRecorder } from './ledger-recorder.js';
import { bigqueryWindowStateReaders } from './window-state.js';

/** The BigQuery sink, as the rest of tilehouse sees it. */
export const bigquerySinkKind: SinkKind = {
  type: 'bigquery',
  runRecorder: bigqueryLedgerRecorder,
  workspaceChecker: bigqueryWorkspaceChecker,
  windowStateReaders: (job, _sinks, environment, options, logger) => bigqueryWindowStateReaders(job, environment, options, logger),
};
