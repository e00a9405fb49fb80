import type { ErrorCode } from '../error-codes.js';

/**
 * Stable codes for the file-system failures a user can cause and fix (a full disk, a volume the
 * pod's user cannot write, a directory where the output file should be), so that an alert or a
 * person can act on the code without reading the errno.
 */
export type FileSystemFailureCode = 'disk_full' | 'permission_denied' | 'target_is_directory';

const CODES: Readonly<Record<string, FileSystemFailureCode>> = {
  ENOSPC: 'disk_full',
  EDQUOT: 'disk_full',
  EACCES: 'permission_denied',
  EPERM: 'permission_denied',
  EROFS: 'permission_denied',
  EISDIR: 'target_is_directory',
};

const HINTS: Readonly<Record<FileSystemFailureCode, string>> = {
  disk_full: 'free space on that volume',
  permission_denied: "give the process's user write access there",
  target_is_directory: 'remove the directory or change the path',
};

/** The stable code for a file-system error, or `fallback` when it is not one of the known ones. */
export function fileSystemFailureCode<Fallback extends ErrorCode>(cause: unknown, fallback: Fallback): FileSystemFailureCode | Fallback {
  const errno = (cause as NodeJS.ErrnoException | null)?.code;
  return (errno !== undefined && CODES[errno]) || fallback;
}

/** What to do about a known file-system failure, for the one-line message. */
export function fileSystemFailureHint(code: ErrorCode): string | undefined {
  return Object.hasOwn(HINTS, code) ? HINTS[code as FileSystemFailureCode] : undefined;
}
