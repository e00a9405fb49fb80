/** `gs://bucket/object` URLs, part of the configuration language (CSV paths, the CSV directory): pure checks, no client. */
/**
 * `gs://bucket/object` URLs: recognised and checked here, once, so that a CSV path template that
 * names Cloud Storage never reaches node:path (which would turn it into a local `<cwd>/gs:/…`).
 */

export interface GcsObjectUrl {
  bucket: string;
  /** The object name: no leading `/`, never empty. */
  object: string;
}

export const GCS_SCHEME = 'gs://';

/** Whether a path or template names Cloud Storage (or is a malformed attempt at it: `gs:/x`, `GS://x`). */
export function looksLikeGcsUrl(text: string): boolean {
  return /^gs:/i.test(text);
}

/**
 * Why `name` is not a valid bucket name, or undefined. Cloud Storage's rules: 3–63 characters
 * (up to 222 with dots, each dot-separated part at most 63), lowercase letters, digits, `-`, `_`
 * and `.`, starting and ending with a letter or digit, not an IP address, no "goog" prefix.
 */
export function bucketNameProblem(name: string): string | undefined {
  if (name.length === 0) return 'no bucket name';
  if (!/^[a-z0-9][a-z0-9._-]*[a-z0-9]$/.test(name)) {
    return `bucket name ${JSON.stringify(name)} must use lowercase letters, digits, "-", "_" and "." and start and end with a letter or digit`;
  }
  const limit = name.includes('.') ? 222 : 63;
  if (name.length < 3 || name.length > limit) return `bucket name ${JSON.stringify(name)} must be 3 to ${limit} characters long`;
  if (name.split('.').some((part) => part.length > 63 || part.length === 0))
    return `bucket name ${JSON.stringify(name)} has an empty or over-long dot-separated part`;
  if (/^\d+\.\d+\.\d+\.\d+$/.test(name)) return `bucket name ${JSON.stringify(name)} looks like an IP address`;
  if (name.startsWith('goog')) return `bucket name ${JSON.stringify(name)} starts with "goog", which Cloud Storage reserves`;
  return undefined;
}

/**
 * Why `name` is not an object name we write to, or undefined. Cloud Storage allows almost any
 * name up to 1024 bytes without CR/LF; we refuse, in addition, the names that would only confuse
 * a reader of the bucket as a folder tree: empty segments (`a//b`), `.`/`..` segments, a trailing `/`.
 */
export function objectNameProblem(name: string): string | undefined {
  if (name.length === 0) return 'no object name after the bucket';
  if (Buffer.byteLength(name) > 1024) return 'the object name is longer than 1024 bytes';
  if (/[\r\n\0]/.test(name)) return 'the object name contains a line break or NUL';
  if (name.endsWith('/')) return 'names a "directory" (ends with "/"), not an object';
  const segments = name.split('/');
  if (segments.includes('..') || segments.includes('.')) return '"." and ".." segments are not allowed';
  if (segments.includes('')) return 'empty path segments ("//" or a leading "/") are not allowed';
  return undefined;
}

/** Splits `gs://bucket/rest` without checking the parts; undefined when it does not start with `gs://`. */
export function splitGcsUrl(url: string): { bucket: string; rest: string } | undefined {
  if (!url.startsWith(GCS_SCHEME)) return undefined;
  const body = url.slice(GCS_SCHEME.length);
  const slash = body.indexOf('/');
  return slash < 0 ? { bucket: body, rest: '' } : { bucket: body.slice(0, slash), rest: body.slice(slash + 1) };
}

/** A malformed `gs://` URL: why, in words a user can act on. */
export function gcsUrlProblem(url: string, options: { object: 'required' | 'optional' }): string | undefined {
  if (!url.startsWith(GCS_SCHEME)) return `a Cloud Storage URL starts with "gs://" (lowercase), got ${JSON.stringify(url)}`;
  const { bucket, rest } = splitGcsUrl(url)!;
  const bucketProblem = bucketNameProblem(bucket);
  if (bucketProblem !== undefined) return bucketProblem;
  if (rest === '' && options.object === 'optional') return undefined;
  // A prefix (the environment's directory) may end with "/"; an object may not.
  return objectNameProblem(options.object === 'optional' ? rest.replace(/\/$/, '') : rest);
}

/** Parses a complete object URL; throws with the reason when it is malformed. */
export function parseGcsObjectUrl(url: string): GcsObjectUrl {
  const problem = gcsUrlProblem(url, { object: 'required' });
  if (problem !== undefined) throw new Error(problem);
  const { bucket, rest } = splitGcsUrl(url)!;
  return { bucket, object: rest };
}

/** Cloud Storage's URL grammar, as config/object-store-urls.ts lists each store's. */
export const gcsUrls = {
  name: 'gcs',
  scheme: GCS_SCHEME,
  label: 'Cloud Storage (gs://bucket/object)',
  looksLike: looksLikeGcsUrl,
  bucketNameProblem,
  urlProblem: gcsUrlProblem,
  split: splitGcsUrl,
} as const;
