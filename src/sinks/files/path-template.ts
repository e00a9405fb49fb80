import { isAbsolute, relative, resolve, sep } from 'node:path';
import { FilePathInvalidError } from './file-errors.js';
import type { FormatNames } from './file-format.js';
import { looksLikeUrl, objectStoreUrlsOf, supportedUrls } from '../../config/object-store-urls.js';
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
      const urls = objectStoreUrlsOf(template);
      if (urls === undefined || !template.startsWith(urls.scheme)) throw invalid(`only ${supportedUrls()} URLs are supported, written in lowercase`);
      const { bucket, rest } = urls.split(template)!;
      if (bucket.includes('{')) throw invalid('the bucket must be fixed text, not a placeholder');
      const problem = urls.bucketNameProblem(bucket) ?? (rest.length === 0 ? 'no object name after the bucket' : undefined);
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
    if (isObjectUrl(rendered)) return this.checkedObjectUrl(rendered, values.name);
    if (isAbsolute(rendered)) return resolve(rendered);
    // A relative template under a bucket prefix (gs://, s3://) is an object below that prefix;
    // node:path must never see the URL (it would make a local `<cwd>/gs:/bucket/…`).
    if (isObjectUrl(directory)) return this.checkedObjectUrl(`${directory.replace(/\/+$/, '')}/${rendered}`, values.name);
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
    // In an object store the root is a URL prefix ending in "/": `gs://bucket/` or `s3://bucket/a/b/`.
    if (isObjectUrl(this.template)) return { root: `${prefix}/`, recursive: !fixed };
    if (isObjectUrl(directory) && !isAbsolute(this.template)) {
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
    // Objects in a bucket: the URL is the key (node:path would make `<cwd>/gs:/…` of it).
    if (isObjectUrl(filled)) return filled;
    if (isObjectUrl(directory) && !isAbsolute(filled)) return `${directory.replace(/\/+$/, '')}/${filled}`;
    return isAbsolute(filled) ? resolve(filled) : resolve(directory, filled);
  }

  private checkedObjectUrl(url: string, jobName: string): string {
    const problem = objectStoreUrlsOf(url)!.urlProblem(url, { object: 'required' });
    if (problem !== undefined) throw new FilePathInvalidError(this.format, this.template, `resolves to ${JSON.stringify(url)}: ${problem}`, jobName);
    return url;
  }
}

/** Whether a path, template or directory names an object store's bucket (or is a malformed attempt at one): node:path must never see it. */
function isObjectUrl(text: string): boolean {
  return objectStoreUrlsOf(text) !== undefined;
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
