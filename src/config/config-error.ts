import { TilehouseError } from '../errors.js';

/** One problem found in a configuration file, precise enough to fix without opening the schema. */
export interface ConfigProblem {
  file: string;
  /** Dotted field path, e.g. `query.items[2].dataType`; empty for the whole document. */
  field: string;
  /** 1-based line in the file, when the YAML parser could locate the field. */
  line?: number;
  /**
   * The offending value as found (JSON), when there is one. Never rendered for a field that holds
   * a secret, nor for a map or list holding one, nor when it carries a URL's credentials: see
   * `shownValue`, the one place that decides.
   */
  value?: string;
  message: string;
}

/**
 * The last key of a field path names a secret (Airflow's masker judges fields by the same words):
 * `sinks.postgres.password`, `source.clientSecret`, `sinks.iceberg.catalog.token`,
 * `lineage.transport.auth.apiKey`, a postgres `url` (a DATABASE_URL holds the password).
 * Every schema's problems pass through here, so a new secret field is covered by its name alone.
 * Their `...File` siblings name where a secret is, not the secret (Kubernetes shows a Secret by
 * its reference too), and `tilehouse k8s` must say which path it refuses: see `isPath`.
 */
const SECRET_KEY = /(pass(word|wd|phrase)?|secret|token|api[-_]?key|^key|private[-_]?key|access[-_]?key([-_]?id)?|credentials?|dsn|cookie|^url|^auth)(file)?$/i;
const FILE_KEY = /file$/i;
/**
 * A `...File` field's value that is a path as people write one (`/var/run/secrets/pg/password`,
 * `./secret.txt`, `secret.txt`), not a secret pasted into the file field by mistake: only such a
 * value of a file field is shown.
 */
const PATH_LIKE = /^((\.{0,2}|~)\/[^\s"]*|[\w-]+(\.[A-Za-z0-9]{1,5})+)"$/;
// A key of a map or list value, as JSON writes it (`"password":`), that names a secret below it.
const SECRET_KEY_IN_JSON = /"[^"]*(pass(word|wd)?|secret|token|api[-_]?key|key|credentials?|dsn|cookie|url|auth)(file)?":/i;

// The sections that hold secrets: a value of the wrong type there (a string, a list) may be one.
const SECRET_SECTIONS = new Set(['source', 'sinks.postgres', 'sinks.iceberg', 'sinks.iceberg.catalog', 'lineage', 'lineage.transport']);

/**
 * Whether a problem on `field` may never show its value, decided by the field's name alone: its
 * last key names a secret, it lies below an `auth` section (every key of one is a credential's),
 * or it is a section that holds secrets.
 */
export function isSecretField(field: string): boolean {
  const keys = field.replace(/\[\d+\]/g, '').split('.');
  return SECRET_KEY.test(keys.at(-1) ?? '') || keys.some((key) => /^auth$/i.test(key)) || SECRET_SECTIONS.has(field);
}

// `${ENV_NAME}`, quoted as JSON: the one value of a secret field that is safe to print (it names a variable).
const QUOTED_ENV_REFERENCE = /^"\$\{[A-Za-z_][A-Za-z0-9_]*\}"$/;
// A URL with user info (`scheme://user:password@host`) or a credential in its query (`?password=`): in any field.
const URL_CREDENTIALS = /\/\/[^/\s"]*@|[?&;](pass(word|wd)?|secret|token|api[-_]?key|key|sig|signature|access[-_]?token|client[-_]?secret)=/i;

/**
 * The value a problem may print, or undefined. No value of a secret field is printed but an
 * `${ENV_NAME}` reference (a wrong type, a list or a map, is as secret as the literal), nor a map
 * or list with a secret's key anywhere in it, nor a value that carries a URL's credentials,
 * whatever the field.
 */
export function shownValue(problem: Pick<ConfigProblem, 'field' | 'value'>): string | undefined {
  const { value } = problem;
  if (value === undefined) return undefined;
  if (isSecretField(problem.field)) {
    const isFileField = FILE_KEY.test(problem.field);
    return QUOTED_ENV_REFERENCE.test(value) || (isFileField && value.startsWith('"') && PATH_LIKE.test(value.slice(1)) && !URL_CREDENTIALS.test(value))
      ? value
      : undefined;
  }
  if ((value.startsWith('{') || value.startsWith('[')) && SECRET_KEY_IN_JSON.test(value)) return undefined;
  if (URL_CREDENTIALS.test(value)) return undefined;
  return value;
}

export function formatProblem(problem: ConfigProblem): string {
  const where = problem.line === undefined ? problem.file : `${problem.file}:${problem.line}`;
  const field = problem.field === '' ? '' : ` ${problem.field}`;
  const shown = shownValue(problem);
  const value = shown === undefined ? '' : ` = ${shown}`;
  const subject = `${field}${value}`;
  return subject === '' ? `${where}: ${problem.message}` : `${where}:${subject}: ${problem.message}`;
}

/** The problem as it may be kept and passed on: the value only when it may be shown. */
function withoutSecretValue(problem: ConfigProblem): ConfigProblem {
  const { value, ...rest } = problem;
  const shown = shownValue(problem);
  return shown === undefined || value === undefined ? rest : { ...rest, value: shown };
}

/** Bad configuration: nothing runs, the process exits 2. */
export class ConfigError extends TilehouseError {
  readonly code = 'config_invalid';
  readonly problems: readonly ConfigProblem[];

  constructor(problems: readonly ConfigProblem[]) {
    const shown = problems.map(withoutSecretValue);
    super(shown.map(formatProblem).join('\n'));
    this.problems = shown;
  }

  static single(problem: ConfigProblem): ConfigError {
    return new ConfigError([problem]);
  }
}
