// The table's files were local only here first; they go through the stores' seam now (table-files.ts),
// and these names stay for the modules that import them.
export { childLocation, localPathOf, readLocation, removeLocation, withTableFileStores, writeNewFile } from './table-files.js';
