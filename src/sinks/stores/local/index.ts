import path from 'node:path';
import type { ObjectStoreKind } from '../object-store.js';

/**
 * The local file system as a store: a target is a path, written to a temp file beside it and
 * renamed into place (local-file-writer.ts); its manifest is checked by sha256. A table format's files: local-table-files.ts. Last in the
 * registry: it claims every location no bucket store does.
 */
export const localStoreKind: ObjectStoreKind = {
  name: 'local',
  claims: () => true,
  // The spec's naming: a local file is namespace `file`, its absolute path the name.
  lineageDataset: (location) => ({ namespace: 'file', name: path.resolve(location) }),
  onThisMachine: true,
  // Last: a rename in a directory just written to is the publish least likely to fail.
  publishRank: 10,
  optionsFrom: () => ({}),
  load: async () => (await import('./local-store.js')).localStore,
};
