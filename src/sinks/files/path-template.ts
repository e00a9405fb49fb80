import { isAbsolute, relative, resolve, sep } from 'node:path';
import { FilePathInvalidError } from './file-errors.js';
import type { FormatNames } from './file-format.js';
import { bucketNameProblem, GCS_SCHEME, gcsUrlProblem, looksLikeGcsUrl, looksLikeUrl, splitGcsUrl } from '../../config/gcs-url.js';
import { looksLikeS3Url, S3_SCHEME, s3BucketNameProblem, s3UrlProblem, splitS3Url } from '../../config/s3-url.js';
import { isCalendarDate } from '../../value-types/civil-date.js';
import { toFileNameSafe } from '../stores/file-names.js';

/** The values a path template can use. */
export interface FilePathValues {
  /** The job name. */
  name: string;
  /** The tile id; sanitised before use since it is not ours to trust. */
  tile: string;
  /** YYYY-MM-DD. */
  date: string;
  runId: string;
}

const PLACEHOLDERS: ReadonlySet<string> = new Set(['name', 'tile', 'date', 'runId']);
const PLACEHOLDER = /\{([^{}]*)\}/g;

/**
 * A validated output path template such as `{name}.csv`, `/exports/{tile}/{date}.csv.gz` or
 * `gs://bucket/exports/{name}/{date}.csv` (a Cloud Storage object; its bucket is fixed text).
 * Everything that can be checked without a run is checked at construction, so `tilehouse validate`
 * reports a bad template before anything is fetched.
 */
export class FilePathTemplate {
  constructor(
    private readonly format: FormatNames,
    readonly template: string,
  ) {
    const invalid = (reason: string) => new FilePathInvalidError(format, template, reason);
    if (template.includes('\0')) throw invalid('contains a NUL character');
    for (const [, name = ''] of template.matchAll(PLACEHOLDER)) {
      if (!PLACEHOLDERS.has(name)) {
        throw invalid(`unknown placeholder {${name}}; known: ${[...PLACEHOLDERS].map((p) => `{${p}}`).join(' ')}`);
      }
    }
    if (/[{}]/.test(template.replace(PLACEHOLDER, ''))) throw invalid('unbalanced { or }');
    if (hasParentSegment(template)) throw invalid('".." segments are not allowed');
    if (/[\\/]$/.test(template)) throw invalid('names a directory, not a file');
    if (looksLikeUrl(template)) {
      const s3 = template.startsWith(S3_SCHEME);
      if (!template.startsWith(GCS_SCHEME) && !s3)
        throw invalid('only Cloud Storage (gs://bucket/object) and S3 (s3://bucket/key) URLs are supported, written in lowercase');
      const { bucket, rest } = (s3 ? splitS3Url(template) : splitGcsUrl(template))!;
      if (bucket.includes('{')) throw invalid('the bucket must be fixed text, not a placeholder');
      const problem = (s3 ? s3BucketNameProblem(bucket) : bucketNameProblem(bucket)) ?? (rest.length === 0 ? 'no object name after the bucket' : undefined);
      if (problem !== undefined) throw invalid(problem);
    }
  }

  /**
   * The absolute output path for one run. Relative templates resolve under `directory`, and must
   * stay there; values are substituted as file-name-safe text, and the result is checked again so
   * that no value can smuggle in a `..` or a separator.
   */
  resolve(values: FilePathValues, directory: string): string {
    if (!isCalendarDate(values.date)) {
      throw new FilePathInvalidError(this.format, this.template, `{date} must be YYYY-MM-DD, got ${JSON.stringify(values.date)}`, values.name);
    }
    const rendered = this.template.replace(PLACEHOLDER, (_, name: string) =>
      name === 'date' ? values.date : toFileNameSafe(values[name as keyof FilePathValues]),
    );
    if (hasParentSegment(rendered)) {
      throw new FilePathInvalidError(this.format, this.template, `resolves to ${JSON.stringify(rendered)}, which contains ".."`, values.name);
    }
    if (isObjectTarget(rendered)) return this.checkedObjectUrl(rendered, values.name);
    if (isAbsolute(rendered)) return resolve(rendered);
    // A relative template under a gs:// or s3:// directory is an object below that prefix;
    // node:path must never see the URL (it would make a local `<cwd>/gs:/bucket/…`).
    if (looksLikeObjectUrl(directory)) return this.checkedObjectUrl(`${directory.replace(/\/+$/, '')}/${rendered}`, values.name);
    const root = resolve(directory);
    const target = resolve(root, rendered);
    const inside = relative(root, target);
    if (inside === '' || inside.split(sep)[0] === '..' || isAbsolute(inside)) {
      throw new FilePathInvalidError(this.format, this.template, `resolves to ${target}, outside the ${this.format.label} directory ${root}`, values.name);
    }
    return target;
  }
  /**
   * Where this template's files can be, for the temp-file sweep: the deepest directory that no
   * placeholder decides, and whether files may lie below it (a placeholder in a directory part).
   */
  sweepScope(directory: string): { root: string; recursive: boolean } {
    const { prefix, fixed } = fixedFolders(this.template);
    // For Cloud Storage the root is a URL prefix ending in "/": `gs://bucket/` or `gs://bucket/a/b/`.
    if (isObjectTarget(this.template)) return { root: `${prefix}/`, recursive: !fixed };
    if (looksLikeObjectUrl(directory) && !isAbsolute(this.template)) {
      return { root: `${[directory.replace(/\/+$/, ''), prefix].filter(Boolean).join('/')}/`, recursive: !fixed };
    }
    const root = isAbsolute(this.template) ? resolve(prefix || '/') : resolve(directory, prefix);
    return { root, recursive: !fixed };
  }

  /**
   * The target with what is known before a run filled in (`{name}`, `{tile}`; `{date}` and
   * `{runId}` left as written), placed as `resolve` places a run's target: for `validate`, which
   * tells two sinks writing one target apart before anything runs. Not checked further: a bad
   * template is reported when the sinks are built.
   */
  targetKey(values: Pick<FilePathValues, 'name' | 'tile'>, directory: string): string {
    const filled = this.template.replaceAll('{name}', toFileNameSafe(values.name)).replaceAll('{tile}', toFileNameSafe(values.tile));
    // Cloud Storage objects: the URL is the key (node:path would make `<cwd>/gs:/…` of it).
    if (isObjectTarget(filled)) return filled;
    if (looksLikeObjectUrl(directory) && !isAbsolute(filled)) return `${directory.replace(/\/+$/, '')}/${filled}`;
    return isAbsolute(filled) ? resolve(filled) : resolve(directory, filled);
  }

  private checkedObjectUrl(url: string, jobName: string): string {
    const problem = isS3Target(url) ? s3UrlProblem(url, { object: 'required' }) : gcsUrlProblem(url, { object: 'required' });
    if (problem !== undefined) throw new FilePathInvalidError(this.format, this.template, `resolves to ${JSON.stringify(url)}: ${problem}`, jobName);
    return url;
  }
}

/** Whether a resolved target is a Cloud Storage object rather than a local file. */
export function isGcsTarget(target: string): boolean {
  return target.startsWith(GCS_SCHEME);
}

/** Whether a resolved target is an S3 object (Amazon S3 or an S3-compatible store). */
export function isS3Target(target: string): boolean {
  return target.startsWith(S3_SCHEME);
}

/** Whether a resolved target is an object in a bucket (gs:// or s3://) rather than a local file. */
export function isObjectTarget(target: string): boolean {
  return isGcsTarget(target) || isS3Target(target);
}

/** Whether a path or directory names a bucket (or is a malformed attempt at a gs:// or s3:// URL). */
export function looksLikeObjectUrl(text: string): boolean {
  return looksLikeGcsUrl(text) || looksLikeS3Url(text);
}

/**
 * The directories of a template up to its first placeholder (`/exports/{tile}/{date}.csv` →
 * `/exports`; `''` when the file lies in the first folder), and whether that is all of them.
 */
function fixedFolders(template: string): { prefix: string; fixed: boolean } {
  const folders = template.split(/[\\/]/).slice(0, -1);
  const placeholder = folders.findIndex((segment) => segment.includes('{'));
  return { prefix: (placeholder < 0 ? folders : folders.slice(0, placeholder)).join('/'), fixed: placeholder < 0 };
}

/** The fixed directory part of an absolute template, as a POSIX path (the pod's): `/exports/{tile}/{date}.csv` → `/exports`. */
export function templateDirectory(template: string): string {
  return fixedFolders(template).prefix || '/';
}

function hasParentSegment(path: string): boolean {
  return path.split(/[\\/]/).includes('..');
}
