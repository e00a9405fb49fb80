import type { SinkKind } from '../sink-kind.js';
import { csvWorkspaceChecker } from './workspace-checks.js';
import { csvWindowStateReaders } from './window-state.js';

/** The CSV sink (local files or gs:// objects), as the rest of tilehouse sees it. */
export const csvSinkKind: SinkKind = {
  type: 'csv',
  workspaceChecker: csvWorkspaceChecker,
  windowStateReaders: async (job, sinks) => csvWindowStateReaders(job, sinks),
};
