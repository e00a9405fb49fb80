import { resolveCredentials } from '../config/secrets.js';
import { buildSinks } from '../sinks/build-sinks.js';
import { COMMON_HELP, EXIT, parseCommandArgs, type Command } from './command.js';
import { loadWorkspace } from './load-workspace.js';

export const validateCommand: Command = {
  name: 'validate',
  help: `Usage: tilehouse validate [--config FILE] [--jobs DIR]

Validates the environment config and every job file against their schemas (schema/*.json),
resolves secret references, and builds each job's sinks. Runs nothing, writes nothing.

Options:
${COMMON_HELP}
  -h, --help           show this help

Exit codes: 0 valid, 2 invalid (every problem is listed with file, line, field and value).
`,
  async run(args, io) {
    const { values } = parseCommandArgs('validate', args);
    if (values.help) {
      io.stdout.write(this.help);
      return EXIT.ok;
    }
    const workspace = await loadWorkspace(values, io.env);
    await resolveCredentials(workspace.environment.source, workspace.configFile, io.env);
    for (const job of workspace.jobs) await buildSinks(job, workspace.environment, io.sinkOptions);
    io.stdout.write(
      `valid: ${workspace.configFile} and ${workspace.jobs.length} job(s) in ${workspace.jobsDirectory}: ${workspace.jobs.map((job) => job.name).join(', ')}\n`,
    );
    return EXIT.ok;
  },
};
