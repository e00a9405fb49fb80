import path from 'node:path';
import { planManifests } from '../deploy/plan-manifests.js';
import { staleFiles, writeManifests } from '../deploy/write-manifests.js';
import { COMMON_HELP, EXIT, parseCommandArgs, type Command } from './command.js';
import { loadWorkspace } from './load-workspace.js';

export const DEFAULT_K8S_OUT = 'k8s/cronjobs.yaml';

function shown(file: string): string {
  const relative = path.relative(process.cwd(), file);
  return (relative === '' || relative.startsWith('..') || path.isAbsolute(relative) ? file : relative).split(path.sep).join('/');
}

export const k8sCommand: Command = {
  name: 'k8s',
  help: `Usage: tilehouse k8s [--config FILE] [--jobs DIR] [--out FILE] [--check]

Generates the manifests of the kustomize base from the job files, so schedules have one source of
truth: one CronJob per job with a schedule (schedule.cron, timeZone: schedule.timezone) running
"tilehouse run --tile NAME"; jobs without a schedule get none. Beside --out it writes
backfill-job.yaml (a template) and generated/ (copies of the job files and the environment
config, with the kustomization that makes the ConfigMaps). Then: kubectl apply -k k8s/

Options:
  -c, --config FILE    the environment config the pods use (default: $TILEHOUSE_CONFIG or config/default.yaml)
  -j, --jobs DIR       directory of job YAML files (default: $TILEHOUSE_JOBS or jobs)
  -o, --out FILE       the CronJobs file (default: ${DEFAULT_K8S_OUT}); the other files go beside it
      --check          write nothing; exit 1 when a generated file is missing or stale
  -h, --help           show this help

Example:
  tilehouse k8s --config config/production.example.yaml --jobs jobs --check

Exit codes: 0 written (or up to date with --check), 1 stale (--check), 2 bad config or usage.
`,
  async run(args, io) {
    const { values } = parseCommandArgs('k8s', args, {
      out: { type: 'string', short: 'o' },
      check: { type: 'boolean' },
    });
    if (values.help) {
      io.stdout.write(this.help);
      return EXIT.ok;
    }
    const workspace = await loadWorkspace(values, io.env);
    const outFile = values.out ?? DEFAULT_K8S_OUT;
    const command = [
      'tilehouse k8s',
      `--config ${shown(workspace.configFile)}`,
      `--jobs ${shown(workspace.jobsDirectory)}`,
      ...(values.out === undefined ? [] : [`--out ${shown(outFile)}`]),
    ].join(' ');
    const plan = await planManifests({
      jobs: workspace.jobs,
      environment: workspace.environment,
      configFile: workspace.configFile,
      outFile,
      command,
    });
    for (const warning of plan.warnings) io.stderr.write(`tilehouse k8s: warning: ${warning}\n`);

    if (values.check) {
      const stale = await staleFiles(plan);
      if (stale.length === 0) {
        io.stdout.write(`up to date: ${plan.files.length} generated files (${command})\n`);
        return EXIT.ok;
      }
      io.stderr.write(
        `stale Kubernetes manifests; run: ${command}\n${stale.map((entry) => `  ${shown(entry.file)}: ${entry.reason}`).join('\n')}\n`,
      );
      return EXIT.tileFailed;
    }

    const changed = await writeManifests(plan);
    const cronJobs = workspace.jobs.filter((job) => job.schedule !== undefined).length;
    io.stdout.write(
      `${changed.length === 0 ? 'unchanged' : `updated ${changed.length} file(s)`}: ${shown(outFile)} (${cronJobs} CronJob(s) for ${workspace.jobs.length} job(s)), ` +
        `${shown(path.join(path.dirname(outFile), 'backfill-job.yaml'))}, ${shown(plan.generatedDirectory)}/\n` +
        `${changed.map((entry) => `  ${shown(entry.file)}: ${entry.reason === 'no longer generated' ? 'removed' : entry.reason === 'missing' ? 'created' : 'updated'}`).join('\n')}${changed.length > 0 ? '\n' : ''}` +
        `deploy with: kubectl apply -k ${shown(path.dirname(outFile))}/\n`,
    );
    return EXIT.ok;
  },
};
