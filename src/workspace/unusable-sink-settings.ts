import { ConfigError, type ConfigProblem } from '../config/config-error.js';
import type { EnvironmentConfig } from '../config/environment-schema.js';
import type { LoadedJob } from '../config/load-config.js';
import { formatFieldPath, lineOf } from '../config/read-yaml.js';
import { workspaceCheckers } from '../sinks/registry.js';

/**
 * For every command that connects (`run`, `check`, `plan`, `backfill`, `schedule`, `probe`): the
 * settings of the jobs' sink kinds that no run can use (a DATABASE_URL that does not parse) refuse
 * the command before any job starts, config_invalid and exit 2, as `validate` does; never a
 * tile's failure (exit 1) found half-way through a run.
 */
export async function refuseUnusableSinkSettings(environment: EnvironmentConfig, configFile: string, jobs: readonly LoadedJob[]): Promise<void> {
  const checkers = await workspaceCheckers(environment, configFile, jobs);
  const invalid = [
    ...[...checkers.values()].flatMap((checker) => checker.invalid ?? []),
    ...(await Promise.all([...checkers.values()].map((checker) => checker.invalidWhenConnecting?.() ?? []))).flat(),
  ];
  if (invalid.length === 0) return;
  const problems = await Promise.all(
    invalid.map(async (problem): Promise<ConfigProblem> => {
      const line = await lineOf(problem.file, problem.path);
      return {
        file: problem.file,
        field: formatFieldPath(problem.path),
        ...(line === undefined ? {} : { line }),
        ...(problem.value === undefined ? {} : { value: JSON.stringify(problem.value) }),
        message: problem.message,
      };
    }),
  );
  throw new ConfigError(problems);
}
