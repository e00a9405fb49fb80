import { createSourceDispatcher } from '../pipeline/source-session.js';
import { RunToken } from '../source/session-token.js';
import { buildSinks } from '../sinks/build-sinks.js';
import { formatJobPlan, planJob } from '../pipeline/plan-job.js';
import { COMMON_HELP, EXIT, logHelp, parseCommandArgs, type Command } from './command.js';
import { openOutput } from './output.js';
import { loadRunnableWorkspace } from './load-workspace.js';

export const planCommand: Command = {
  name: 'plan',
  help: `Usage: tilehouse plan [--config FILE] [--jobs DIR] [--job NAME]... [--json]

For each tile: fetches page 0 (with one fresh token for all the tiles, like a run; one per tile
with source.tokenScope: job), prints the column schema a run would write, and for each sink the difference against its target now (the BigQuery table's schema under the job's
schema contract, the existing CSV file's header). Writes nothing.

Options:
${COMMON_HELP}
  -t, --job NAME       plan only this job; repeatable (a name given twice plans once)
      --tile NAME      the same as --job (its older name)
      --json           print the plans as one JSON array
${logHelp('warn')}
  -h, --help           show this help

Example:
  tilehouse plan --config config/production.yaml --job incidents_by_type

Exit codes: 0 every tile planned and no run would be refused, 1 a tile could not be planned or
a sink would refuse the run (e.g. a frozen BigQuery schema), 2 bad config or usage.
`,
  async run(args, io, seams) {
    const { values } = parseCommandArgs('plan', args, { tile: { type: 'string', short: 't', multiple: true }, json: { type: 'boolean' } });
    if (values.help) {
      io.stdout.write(this.help);
      return EXIT.ok;
    }
    const { logger } = openOutput('plan', values, io, 'warn');
    const workspace = await loadRunnableWorkspace(values, values.tile ?? [], io.env);
    const { selected: jobs, credentials } = workspace;
    const dispatcher = createSourceDispatcher();
    // Like a run: one token for all the jobs (issuers may meter each token), unless tokenScope is 'job'.
    const runToken = workspace.environment.source.tokenScope === 'run' ? new RunToken() : undefined;
    const plans = [];
    try {
      for (const job of jobs) {
        const sinks = await buildSinks(job, workspace.environment, seams.sinkOptions);
        plans.push(await planJob(job, { environment: workspace.environment, credentials, dispatcher, logger, sinks, retry: seams.retry, signal: io.signal, runToken }));
      }
    } finally {
      await dispatcher.close();
    }
    io.stdout.write(values.json ? `${JSON.stringify(plans, null, 2)}\n` : plans.map(formatJobPlan).join('\n'));
    const blocked = plans.some((plan) => plan.status === 'failed' || plan.sinks.some((sink) => sink.action === 'refuse'));
    return blocked ? EXIT.tileFailed : EXIT.ok;
  },
};
