import { isTilehouseError, messageOf } from '../errors.js';
import { buildSinks } from '../sinks/build-sinks.js';
import { createSourceDispatcher, openSourceSession, type RetrySettings } from '../pipeline/source-session.js';
import { RunToken } from '../source/session-token.js';
import { COMMON_HELP, EXIT, logHelp, parseCommandArgs, type Command } from './command.js';
import { loadRunnableWorkspace } from '../workspace/load-workspace.js';
import { openOutput } from './output.js';
import { countNoun } from '../count-noun.js';

/**
 * A connection test should answer within seconds: one retry per request (a blip is forgiven, a
 * host that is down is reported at once) instead of a run's six attempts with backoff.
 */
export const CHECK_RETRY: RetrySettings = { maxAttempts: 2, baseDelayMs: 250, maxDelayMs: 2_000, budget: 4 };

export const checkCommand: Command = {
  name: 'check',
  help: `Usage: tilehouse check [--config FILE] [--jobs DIR] [--job NAME]...

Tests credentials and reachability, nothing else: it fetches a fresh token (one for all the jobs,
like a run; one per job with source.tokenScope: job) and, for each job (or each --job), page 0
of the tile's export; then each sink's target without writing: a gs:// CSV target's bucket
exists and may be written, a local CSV directory is (or can be made) a writable directory, a
BigQuery dataset exists (absent: a note, a run creates it). Prints one line per job:
  ok job NAME: N rows in the tile, M columns
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

Exit codes: 0 every job answered, 1 at least one failed, 2 bad config or usage.
`,
  async run(args, io, seams) {
    const { values } = parseCommandArgs('check', args, { job: { type: 'string', short: 't', multiple: true } });
    if (values.help) {
      io.stdout.write(this.help);
      return EXIT.ok;
    }
    const { logger } = openOutput('check', values, io, 'warn');
    const workspace = await loadRunnableWorkspace(values, values.job ?? [], io.env, io);
    const dispatcher = createSourceDispatcher();
    // Like a run: one token for all the jobs (issuers may meter each token), unless tokenScope is 'job'.
    const runToken = workspace.environment.source.tokenScope === 'run' ? new RunToken() : undefined;
    let failed = 0;
    try {
      for (const job of workspace.selected) {
        const session = openSourceSession(job, {
          environment: workspace.environment,
          credentials: workspace.credentials,
          dispatcher,
          logger: logger.child({ job: job.name, tile: job.tile }),
          retry: seams.retry ?? CHECK_RETRY,
          ...(io.signal === undefined ? {} : { signal: io.signal }),
          runToken,
        });
        try {
          const page = await session.client.fetchPage(0);
          const rows = page.navigation.totalRows;
          const notes: string[] = [];
          for (const sink of await buildSinks(job, workspace.environment, seams.sinkOptions)) {
            const note = await sink.checkAccess?.({ jobName: job.name, logger, ...(io.signal === undefined ? {} : { signal: io.signal }) });
            if (note !== undefined) notes.push(note);
          }
          io.stdout.write(`ok job ${job.name}: ${countNoun(rows, 'row')} in the tile, ${countNoun(page.headers.length, 'column')}${notes.map((note) => `; ${note}`).join('')}\n`);
        } catch (error) {
          failed += 1;
          const code = isTilehouseError(error) ? error.code : 'internal_error';
          io.stdout.write(`FAIL job ${job.name}: ${code}: ${messageOf(error).replace(/\s*\n\s*/g, ' ')}\n`);
        }
      }
    } finally {
      await dispatcher.close();
    }
    return failed > 0 ? EXIT.tileFailed : EXIT.ok;
  },
};
