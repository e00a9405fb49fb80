import { formatJobPlan } from '../presentation/job-plan.js';
import { COMMON_HELP, EXIT, logHelp, parseCommandArgs, type Command } from './command.js';
import { openOutput } from './output.js';
import { loadRunnableWorkspace } from '../workspace/load-workspace.js';
import { planWorkspace } from '../workspace/plan-workspace.js';
import { workspaceFlags } from './orchestration-flags.js';
import { openRunTelemetry } from '../telemetry/open-telemetry.js';
import { ATTR } from '../telemetry/telemetry.js';
import { isTilehouseError } from '../errors.js';

export const planCommand: Command = {
  name: 'plan',
  help: `Usage: tilehouse plan [--config FILE] [--jobs DIR] [--job NAME]... [--json]

For each tile: fetches page 0 (with one fresh token for all the tiles, like a run; one per tile
with source.tokenScope: job), prints the column schema a run would write, and for each sink the
difference against its target now (the BigQuery table's schema under the job's schema contract,
the existing CSV file's header). For an incremental job, the day windows its next run would
export and why (first run from startFrom, resume after a day, lookback, capped at maxWindows),
read from what its targets hold. When a sink's publish guard would refuse a run of the tile's
current rows, the job's first line after its name says so (REFUSED: ...), and that sink's line
says it is refused; each guarded sink's verdict follows its line. Writes nothing.

Options:
${COMMON_HELP}
  -t, --job NAME       plan only this job; repeatable (a name given twice plans once)
      --tile NAME      the same as --job (its older name)
      --json           print the plans as one JSON array
${logHelp('warn')}
  -h, --help           show this help

Example:
  tilehouse plan --config config/production.example.yaml --job daily_incidents_by_severity

Exit codes: 0 every tile planned and no run would be refused, 1 a tile could not be planned or
a sink would refuse the run (e.g. a frozen BigQuery schema, a publish guard) or an incremental
job's state cannot be read or its targets disagree, 2 bad config or usage.
`,
  async run(args, io, seams) {
    const { values } = parseCommandArgs('plan', args, { job: { type: 'string', short: 't', multiple: true }, json: { type: 'boolean' } });
    if (values.help) {
      io.stdout.write(this.help);
      return EXIT.ok;
    }
    const output = openOutput('plan', values, io, 'warn');
    const { logger } = output;
    const workspace = await loadRunnableWorkspace(values, values.job ?? [], io.env, io);
    // Traced as a run is (a root span, page and token spans below it): "is the source still slow?" has an answer.
    const traced = await openRunTelemetry(io.env, logger, io.signal, { [ATTR.command]: 'plan', [ATTR.jobs]: workspace.selected.map((job) => job.name) });
    let exitCode: number = EXIT.tileFailed;
    try {
      const plans = await traced.within(() =>
        planWorkspace(workspace, workspace.selected, { logger, signal: io.signal, seams, fixFlags: workspaceFlags(values) }),
      );
      io.stdout.write(values.json ? `${JSON.stringify(plans, null, 2)}\n` : plans.map(formatJobPlan).join('\n'));
      const blocked = plans.some(
        (plan) =>
          plan.status === 'failed' ||
          plan.incremental?.error !== undefined ||
          plan.sinks.some((sink) => sink.action === 'refuse' || sink.guard?.verdict === 'trip'),
      );
      exitCode = blocked ? EXIT.tileFailed : EXIT.ok;
      return exitCode;
    } catch (error) {
      exitCode = isTilehouseError(error) ? error.exitCode : EXIT.tileFailed;
      throw error;
    } finally {
      await traced.finish(exitCode);
    }
  },
};
