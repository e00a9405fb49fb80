import { COMMON_HELP, EXIT, logHelp, parseCommandArgs, type Command } from './command.js';
import { loadRunnableWorkspace } from '../workspace/load-workspace.js';
import { checkAccess, checkFailed } from '../workspace/check-access.js';
import { accessCheckLine } from '../presentation/access-check.js';
import { openOutput } from './output.js';
import { openRunTelemetry } from '../telemetry/open-telemetry.js';
import { ATTR } from '../telemetry/telemetry.js';
import { isTilehouseError } from '../errors.js';

export const checkCommand: Command = {
  name: 'check',
  help: `Usage: tilehouse check [--config FILE] [--jobs DIR] [--job NAME]...

Tests credentials and reachability, nothing else: it fetches a fresh token (one for all the jobs,
like a run; one per job with source.tokenScope: job) and, for each job (or each --job), page 0
of the tile's export; then each sink's target without writing: a gs:// CSV target's bucket
exists and may be written, a local CSV directory is (or can be made) a writable directory, a
BigQuery dataset exists (absent: a note, a run creates it); then each sink's publish guard
against its target as it is now, for an export of the tile's current rows. Prints a line per job,
and below it a line per guarded sink (not for an incremental job: its guards judge each window):
  ok job NAME: N rows in the tile, M columns[; a sink's note]
    TARGET guard: passes: ...
  REFUSED job NAME: a run now would publish nothing: the publish guard refuses it at N targets; ...
    TARGET guard: a run now would be refused (RULE): why, and what changed in the job since
    the run that wrote the target; the setting or flag that lets it publish
  FAIL job NAME: CODE: message
Writes nothing. Requests are retried once (a run retries up to 6 times).

Options:
${COMMON_HELP}
  -t, --job NAME       check only this job; repeatable (default: every job)
      --tile NAME      the same as --job (its older name)
${logHelp('warn')}
  -h, --help           show this help

Example:
  tilehouse check --config config/production.example.yaml --job daily_incidents_by_severity

Exit codes: 0 every job answered and no guard would refuse a run, 1 a job failed or a guard would
refuse its run, 2 bad config or usage.
`,
  async run(args, io, seams) {
    const { values } = parseCommandArgs('check', args, { job: { type: 'string', short: 't', multiple: true } });
    if (values.help) {
      io.stdout.write(this.help);
      return EXIT.ok;
    }
    const { logger } = openOutput('check', values, io, 'warn');
    const workspace = await loadRunnableWorkspace(values, values.job ?? [], io.env, io);
    // Traced as a run is: the token and page spans of a check say how the source answers now.
    const traced = await openRunTelemetry(io.env, logger, io.signal, { [ATTR.command]: 'check', [ATTR.jobs]: workspace.selected.map((job) => job.name) });
    let exitCode: number = EXIT.tileFailed;
    try {
      const checks = await traced.within(() =>
        checkAccess(workspace, { logger, signal: io.signal, seams, onJob: (check) => io.stdout.write(accessCheckLine(check)) }),
      );
      exitCode = checks.some(checkFailed) ? EXIT.tileFailed : EXIT.ok;
      return exitCode;
    } catch (error) {
      exitCode = isTilehouseError(error) ? error.exitCode : EXIT.tileFailed;
      throw error;
    } finally {
      await traced.finish(exitCode);
    }
  },
};
