import { ConfigError, formatProblem } from '../config/config-error.js';
import { COMMON_HELP, EXIT, parseCommandArgs, type Command } from './command.js';
import { loadWorkspace } from '../workspace/load-workspace.js';
import { validateWorkspace } from '../workspace/workspace-checks.js';
import { otelSettingsOf } from '../telemetry/otel-settings.js';
import { LineageConfigError, lineageSettingsOf } from '../lineage/lineage-settings.js';
import { countNoun } from '../count-noun.js';

/** The OpenLineage settings of this environment, read as a run reads them: what a run would refuse. */
async function lineageProblems(
  env: NodeJS.ProcessEnv,
  section: Parameters<typeof lineageSettingsOf>[1],
): Promise<Array<{ file: string; field: string; message: string }>> {
  try {
    await lineageSettingsOf(env, section);
    return [];
  } catch (error) {
    if (!(error instanceof LineageConfigError)) throw error;
    return [{ file: '(environment)', field: '', message: error.message }];
  }
}

export const validateCommand: Command = {
  name: 'validate',
  help: `Usage: tilehouse validate [--config FILE] [--jobs DIR] [--strict]

Checks everything that can be known without the network; runs nothing, writes nothing:
- the environment config and every job file against their schemas (schema/*.json), including
  unknown keys in query items, filters and options, and columns overrides for headers the query
  does not have or types its dataType cannot be read as;
- secrets are references (\${ENV_NAME} or a ...File), never literal; no secret value is read, so
  validate runs where the secrets are not (CI, a laptop): a variable not set or a secret file not
  readable here is reported as "not checked" (exit 0); \`tilehouse check\` is what tests them;
- each job's sinks can be built;
- CSV output directories are directories and writable; no two sinks write the same CSV file or
  BigQuery table;
- BigQuery partitionBy and clusterBy name columns the query's visible items give (with the
  columns overrides), of a type BigQuery can partition (DATE, TIMESTAMP) or cluster by (not FLOAT64);
  so do writeMode: merge's primaryKey and latestBy;
- the OpenLineage settings as a run reads them: the lineage: section, the OPENLINEAGE_* variables
  and the OPENLINEAGE_CONFIG file (docs/lineage.md).
Warnings (exit 0 unless --strict): a schedule that \`tilehouse schedule\` runs but a Kubernetes
CronJob cannot take (6 fields with seconds, L/W/#), and query.options.itemsPerPage that differs
from source.itemsPerPage (the environment's value is used), a local history.location that cannot
be written here (runs would keep no record for \`tilehouse status\`).

Each problem is one line: file:line: field = value: problem (the value never for a secret's
field, a URL's credentials or a YAML syntax mistake: see docs/configuration.md).

Options:
${COMMON_HELP}
      --strict         treat warnings as errors (exit 2), e.g. before \`tilehouse k8s\`
  -h, --help           show this help

Example:
  tilehouse validate --config config/production.example.yaml --jobs jobs --strict

Exit codes: 0 valid, 2 invalid (every problem is listed with file, line, field and, unless it may
be a secret, value).
`,
  async run(args, io, seams) {
    const { values } = parseCommandArgs('validate', args, { strict: { type: 'boolean' } });
    if (values.help) {
      io.stdout.write(this.help);
      return EXIT.ok;
    }
    const workspace = await loadWorkspace(values, io.env);
    const findings = await validateWorkspace(workspace, io.env, seams.sinkOptions);
    const { unchecked } = findings;
    // The OTEL_* variables of this environment, as a run would read them: what it cannot do is a warning.
    const warnings = [
      ...findings.warnings,
      ...otelSettingsOf(io.env).warnings.map((message) => ({ file: '(environment)', field: '', message: `telemetry: ${message}` })),
    ];
    const otelRefusals = otelSettingsOf(io.env).refusals.map((message) => ({ file: '(environment)', field: '', message: `telemetry: ${message}` }));
    const errors = [
      ...findings.errors,
      ...findings.columnLayout,
      ...findings.fileSystem,
      ...(await lineageProblems(io.env, workspace.environment.lineage)),
      ...otelRefusals,
    ];
    const strict = values.strict === true;
    if (strict && warnings.length > 0) throw new ConfigError([...errors, ...warnings]);
    for (const warning of warnings) io.stderr.write(`warning: ${formatProblem(warning)}\n`);
    // Not a warning: nothing in the files is wrong, and --strict must pass in a CI without secrets.
    for (const problem of unchecked) io.stderr.write(`not checked: ${formatProblem(problem)}; tilehouse check and run need it\n`);
    if (errors.length > 0) throw new ConfigError(errors);
    io.stdout.write(
      `valid: ${workspace.configFile} and ${countNoun(workspace.jobs.length, 'job')} in ${workspace.jobsDirectory}: ${workspace.jobs.map((job) => job.name).join(', ')}` +
        `${warnings.length > 0 ? ` (${warnings.length} warning${warnings.length === 1 ? '' : 's'} above)` : ''}` +
        `${unchecked.length > 0 ? `; ${unchecked.length} ${unchecked.length === 1 ? 'secret' : 'secrets'} not checked` : ''}\n`,
    );
    return EXIT.ok;
  },
};
