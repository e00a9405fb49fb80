import { TilehouseError } from '../errors.js';

/** One problem found in a configuration file, precise enough to fix without opening the schema. */
export interface ConfigProblem {
  file: string;
  /** Dotted field path, e.g. `query.items[2].dataType`; empty for the whole document. */
  field: string;
  /** 1-based line in the file, when the YAML parser could locate the field. */
  line?: number;
  /** The offending value as found (JSON), when there is one. */
  value?: string;
  message: string;
}

export function formatProblem(problem: ConfigProblem): string {
  const where = problem.line === undefined ? problem.file : `${problem.file}:${problem.line}`;
  const field = problem.field === '' ? '' : ` ${problem.field}`;
  const value = problem.value === undefined ? '' : ` = ${problem.value}`;
  const subject = `${field}${value}`;
  return subject === '' ? `${where}: ${problem.message}` : `${where}:${subject}: ${problem.message}`;
}

/**
 * Fields that hold a credential. A problem on one of them shows its value only when that value is
 * an `${ENV_NAME}` reference: anything else is, or may be, the secret itself (a literal secret in
 * the YAML is refused, and the refusal must not print it back).
 */
// The lineage transport: a refused one may hold an API key (lineage-schema.ts refuses it there).
const SECRET_FIELDS = new Set(['source.clientSecret', 'lineage.transport', 'lineage.transport.auth', 'lineage.transport.auth.apiKey']);
const QUOTED_ENV_REFERENCE = /^"\$\{[A-Za-z_][A-Za-z0-9_]*\}"$/;
// A URL with user info (`scheme://user:password@host`), in any field: the password would be printed back.
const URL_WITH_USER_INFO = /\/\/[^/\s"@]+@/;

function withoutSecretValue(problem: ConfigProblem): ConfigProblem {
  if (problem.value !== undefined && URL_WITH_USER_INFO.test(problem.value)) {
    const { value: _credentials, ...rest } = problem;
    return rest;
  }
  if (!SECRET_FIELDS.has(problem.field) || problem.value === undefined || QUOTED_ENV_REFERENCE.test(problem.value)) return problem;
  const { value: _secret, ...rest } = problem;
  return rest;
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
