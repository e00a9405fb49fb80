import { createLogger } from '../log.js';
import { buildSinks } from '../pipeline/build-sinks.js';
import { formatRunSummary } from '../pipeline/format-summary.js';
import { runTiles } from '../pipeline/run-tiles.js';
import type { Sink } from '../sinks/sink.js';
import { COMMON_HELP, EXIT, parseCommandArgs, type Command } from './command.js';
import { loadRunnableWorkspace } from './load-workspace.js';

export const runCommand: Command = {
  name: 'run',
  help: `Usage: tilehouse run [--config FILE] [--jobs DIR] [--tile NAME]... [--log-level LEVEL]

Exports each selected tile once: fresh token, every page, typed columns, atomic sink commit.

Options:
${COMMON_HELP}
  -t, --tile NAME      run only this job (by its name); repeatable
      --log-level L    trace|debug|info|warn|error (default: info)
  -h, --help           show this help

Exit codes: 0 every tile succeeded, 1 at least one tile failed (the others still ran),
2 bad config or usage (nothing ran), 143 / 130 stopped by SIGTERM / SIGINT (no partial output).
`,
  async run(args, io) {
    const { values } = parseCommandArgs('run', args, { tile: { type: 'string', short: 't', multiple: true } });
    if (values.help) {
      io.stdout.write(this.help);
      return EXIT.ok;
    }
    const workspace = await loadRunnableWorkspace(values, values.tile ?? [], io.env);
    const { selected: jobs, credentials } = workspace;
    const sinksByJob = new Map<string, Sink[]>();
    for (const job of jobs) sinksByJob.set(job.name, await buildSinks(job, workspace.environment, io.sinkOptions));
    const logger = await createLogger({ level: values['log-level'], destination: io.logDestination });
    logger.info({ jobs: jobs.map((job) => job.name), config: workspace.configFile }, 'run starting');
    const summary = await runTiles(jobs, {
      environment: workspace.environment,
      credentials,
      logger,
      buildSinks: (job) => sinksByJob.get(job.name)!,
      retry: io.retry,
      signal: io.signal,
    });
    logger.info({ summary }, 'run finished');
    io.stderr.write(formatRunSummary(summary));
    return summary.failed > 0 ? EXIT.tileFailed : EXIT.ok;
  },
};
