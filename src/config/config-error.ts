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

/** Bad configuration or usage: nothing runs, the process exits 2. */
export class ConfigError extends TilehouseError {
  readonly code = 'config_invalid';
  override readonly exitCode = 2 as const;

  constructor(readonly problems: readonly ConfigProblem[]) {
    super(problems.map(formatProblem).join('\n'));
  }

  static single(problem: ConfigProblem): ConfigError {
    return new ConfigError([problem]);
  }
}
