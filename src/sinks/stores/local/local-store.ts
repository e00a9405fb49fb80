import { unwritableDirectory } from '../../writable-directory.js';
import { removeStaleTempFiles, strayTempFilesIn, tempPathFor } from '../file-names.js';
import { manifestPathOf } from '../manifest.js';
import type { ObjectStore } from '../object-store.js';
import { FileTargetUnwritableError } from '../store-errors.js';
import { localDocuments } from './local-documents.js';
import { LocalFileWriter } from './local-file-writer.js';
import { localTableFiles } from './local-table-files.js';
import { localStoredFile } from './local-stored-file.js';
import { localWindowsHeld } from './local-window-state.js';

/** Files on this machine: no client, so one store serves every sink. */
export const localStore: ObjectStore = {
  async openWriter(options) {
    const { target, runId } = options;
    return LocalFileWriter.open({
      format: options.format,
      encoder: options.encoder,
      ...(options.wrap ? { wrap: options.wrap } : {}),
      columns: options.columns,
      gzip: options.gzip,
      jobName: options.jobName,
      target,
      tempPath: tempPathFor(target, runId),
      logger: options.logger,
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.manifest !== undefined ? { manifest: { tempPath: tempPathFor(manifestPathOf(target), runId), runId, ...options.manifest } } : {}),
    });
  },
  storedFile: (location) => localStoredFile(location),
  sweep: (root, { recursive }) => removeStaleTempFiles(root, { recursive }),
  strays: (root, { recursive }) => strayTempFilesIn(root, { recursive }),
  // The deepest directory the template fixes is, or can be created as, a writable directory.
  async checkAccess(root, { jobName, format }) {
    const unwritable = await unwritableDirectory(root);
    if (unwritable !== undefined) throw new FileTargetUnwritableError(format, jobName, root, unwritable);
    return undefined;
  },
  heldWindows: localWindowsHeld,
  documents: localDocuments,
  tableFiles: localTableFiles,
};
