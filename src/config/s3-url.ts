/**
 * `s3://bucket/key` URLs, part of the configuration language (file sink paths and directories):
 * recognised and checked here, once, so that a path template naming Amazon S3 (or an
 * S3-compatible store) never reaches node:path. Pure checks, no client.
 */

export interface S3ObjectUrl {
  bucket: string;
  /** The object key: no leading `/`, never empty. */
  key: string;
}

export const S3_SCHEME = 's3://';

/** Whether a path or template names S3 (or is a malformed attempt at it: `s3:/x`, `S3://x`). */
export function looksLikeS3Url(text: string): boolean {
  return /^s3:/i.test(text);
}

/**
 * Why `name` is not a bucket name tilehouse writes to, or undefined. S3's rules for general
 * purpose buckets: 3–63 characters, lowercase letters, digits, `-` and `.`, starting and ending
 * with a letter or digit, no `..`, not an IP address, none of the reserved prefixes and suffixes.
 * (S3-compatible stores accept at least these.)
 */
export function s3BucketNameProblem(name: string): string | undefined {
  if (name.length === 0) return 'no bucket name';
  if (!/^[a-z0-9][a-z0-9.-]*[a-z0-9]$/.test(name)) {
    return `bucket name ${JSON.stringify(name)} must use lowercase letters, digits, "-" and "." and start and end with a letter or digit`;
  }
  if (name.length < 3 || name.length > 63) return `bucket name ${JSON.stringify(name)} must be 3 to 63 characters long`;
  if (name.includes('..')) return `bucket name ${JSON.stringify(name)} has two adjacent dots`;
  if (/^\d+\.\d+\.\d+\.\d+$/.test(name)) return `bucket name ${JSON.stringify(name)} looks like an IP address`;
  if (/^(xn--|sthree-|amzn-s3-demo-)/.test(name) || /(-s3alias|--ol-s3|\.mrap|--x-s3|--table-s3)$/.test(name)) {
    return `bucket name ${JSON.stringify(name)} uses a prefix or suffix S3 reserves`;
  }
  return undefined;
}

/**
 * Why `key` is not an object key we write to, or undefined. S3 allows any UTF-8 key up to 1024
 * bytes; we refuse, in addition, what would only confuse a reader of the bucket as a folder tree
 * (empty segments, `.`/`..` segments, a trailing `/`) and control characters.
 */
export function s3KeyProblem(key: string): string | undefined {
  if (key.length === 0) return 'no object key after the bucket';
  if (Buffer.byteLength(key) > 1024) return 'the object key is longer than 1024 bytes';
  if (/[\u0000-\u001f\u007f]/.test(key)) return 'the object key contains a control character';
  if (key.endsWith('/')) return 'names a "directory" (ends with "/"), not an object';
  const segments = key.split('/');
  if (segments.includes('..') || segments.includes('.')) return '"." and ".." segments are not allowed';
  if (segments.includes('')) return 'empty path segments ("//" or a leading "/") are not allowed';
  return undefined;
}

/** Splits `s3://bucket/rest` without checking the parts; undefined when it does not start with `s3://`. */
export function splitS3Url(url: string): { bucket: string; rest: string } | undefined {
  if (!url.startsWith(S3_SCHEME)) return undefined;
  const body = url.slice(S3_SCHEME.length);
  const slash = body.indexOf('/');
  return slash < 0 ? { bucket: body, rest: '' } : { bucket: body.slice(0, slash), rest: body.slice(slash + 1) };
}

/** A malformed `s3://` URL: why, in words a user can act on. */
export function s3UrlProblem(url: string, options: { object: 'required' | 'optional' }): string | undefined {
  if (!url.startsWith(S3_SCHEME)) return `an S3 URL starts with "s3://" (lowercase), got ${JSON.stringify(url)}`;
  const { bucket, rest } = splitS3Url(url)!;
  const bucketProblem = s3BucketNameProblem(bucket);
  if (bucketProblem !== undefined) return bucketProblem;
  if (rest === '' && options.object === 'optional') return undefined;
  return s3KeyProblem(options.object === 'optional' ? rest.replace(/\/$/, '') : rest);
}

/** Parses a complete object URL; throws with the reason when it is malformed. */
export function parseS3ObjectUrl(url: string): S3ObjectUrl {
  const problem = s3UrlProblem(url, { object: 'required' });
  if (problem !== undefined) throw new Error(problem);
  const { bucket, rest } = splitS3Url(url)!;
  return { bucket, key: rest };
}

/** S3's URL grammar, as config/object-store-urls.ts lists each store's. */
export const s3Urls = {
  name: 's3',
  scheme: S3_SCHEME,
  label: 'S3 (s3://bucket/key)',
  looksLike: looksLikeS3Url,
  bucketNameProblem: s3BucketNameProblem,
  urlProblem: s3UrlProblem,
  split: splitS3Url,
} as const;
