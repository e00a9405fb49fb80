import { randomBytes } from 'node:crypto';
import { access, readdir } from 'node:fs/promises';
import path from 'node:path';
import { planManifests, type ManifestPlan } from '../deploy/plan-manifests.js';
import { staleFiles, writeManifests, type StaleFile } from '../deploy/write-manifests.js';
import { EXIT, parseCommandArgs, UsageError, type CliIo, type Command } from './command.js';
import { splitWindows, type WindowStep } from '../pipeline/windows/date-windows.js';
import { isCalendarDate } from '../value-types/civil-date.js';
import { indexedBackfillJob } from '../deploy/job-manifests.js';
import { kustomizationImage } from '../deploy/plan-manifests.js';
import { planPod } from '../deploy/pod-template.js';
import { renderYamlDocuments } from '../deploy/render-yaml.js';
import { jobForWindows } from '../pipeline/windows/windowed-job.js';
import { backfillItemIndex } from '../pipeline/windows/run-windows.js';
import { loadWorkspace, type Workspace } from '../workspace/load-workspace.js';
import { countNoun } from '../count-noun.js';

export const DEFAULT_K8S_OUT = 'k8s/cronjobs.yaml';

const CHANGE_SAID: Record<StaleFile['reason'], string> = {
  missing: 'created',
  differs: 'updated',
  'no longer generated': 'removed',
  placeholder: 'replaced the empty placeholder',
};

/**
 * Without --config (or $TILEHOUSE_CONFIG), the config the manifests beside `outFile` were
 * generated from (its copy is the one file in generated/config/), when it is still in config/:
 * `tilehouse k8s --check` then compares against what was deployed, not against the demo's sandbox
 * config (config/default.yaml), which would only suggest regenerating for the wrong environment.
 */
async function generatedFromConfig(outFile: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  if (env.TILEHOUSE_CONFIG !== undefined) return undefined;
  const copies = await readdir(path.join(path.dirname(outFile), 'generated', 'config')).catch(() => []);
  if (copies.length !== 1) return undefined;
  const original = path.join('config', copies[0]!);
  return (await access(original).then(
    () => true,
    () => false,
  ))
    ? original
    : undefined;
}

function shown(file: string): string {
  const relative = path.relative(process.cwd(), file);
  return (relative === '' || relative.startsWith('..') || path.isAbsolute(relative) ? file : relative).split(path.sep).join('/');
}

function parseK8sArgs(args: string[]) {
  return parseCommandArgs('k8s', args, {
    out: { type: 'string', short: 'o' },
    check: { type: 'boolean' },
    backfill: { type: 'string' },
    from: { type: 'string' },
    to: { type: 'string' },
    step: { type: 'string' },
    completions: { type: 'string' },
    parallelism: { type: 'string' },
    resume: { type: 'boolean' },
  });
}

type K8sFlags = ReturnType<typeof parseK8sArgs>['values'];

/**
 * A fresh W3C traceparent (version 00, sampled) for one printed backfill Job: its pods share the
 * trace id, so a trace viewer shows the whole backfill as one trace.
 */
export function newTraceparent(): string {
  return `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01`;
}

/** `--backfill NAME`: prints one Indexed Job for the job's windows; writes nothing. */
async function printBackfillJob(name: string, values: K8sFlags, workspace: Workspace, io: CliIo): Promise<number> {
  if (values.check || values.out !== undefined) throw UsageError.of('k8s: --backfill prints one Job and writes nothing; --check and --out do not apply');
  const job = workspace.jobs.find((candidate) => candidate.name === name);
  if (job === undefined) throw UsageError.of(`k8s: no job named ${JSON.stringify(name)} in ${workspace.jobsDirectory}`);
  const { from, to, step } = backfillRange(values);
  const windows = splitWindows(from, to, step).length;
  // More pods than windows would leave some with nothing to do.
  const completions = wholeFlag(values, 'completions', Math.min(windows, 64), windows);
  const parallelism = wholeFlag(values, 'parallelism', Math.min(2, completions), completions);
  // As `tilehouse backfill` takes it (the pods run that command): an incremental job windowed by its incremental item.
  const backfillJob = jobForWindows(job);
  backfillItemIndex(backfillJob);
  const pod = planPod({
    environment: workspace.environment,
    configFile: workspace.configFile,
    jobs: [backfillJob],
    image: await kustomizationImage(path.dirname(DEFAULT_K8S_OUT)),
  });
  for (const warning of pod.warnings) io.stderr.write(`tilehouse k8s: warning: ${warning}\n`);
  io.stdout.write(
    renderYamlDocuments(
      [indexedBackfillJob(pod, { job: backfillJob, from, to, step, completions, parallelism, resume: values.resume === true, traceparent: newTraceparent() })],
      {
        header: [
          `tilehouse k8s --backfill ${job.name} --from ${values.from} --to ${values.to} --step ${step} --completions ${completions} --parallelism ${parallelism}`,
          `${countNoun(windows, 'window')} in ${countNoun(completions, 'share')} (Indexed Job): pod i runs share i; create with kubectl create -f -`,
        ].join('\n'),
      },
    ),
  );
  return EXIT.ok;
}

/** --from, --to and --step of `--backfill`, checked. */
function backfillRange(values: K8sFlags): { from: string; to: string; step: WindowStep } {
  for (const flag of ['from', 'to'] as const) {
    if (values[flag] === undefined || !isCalendarDate(values[flag]))
      throw UsageError.of(`k8s: --${flag} must be a date YYYY-MM-DD, got ${JSON.stringify(values[flag])}`);
  }
  const step = (values.step ?? 'day') as WindowStep;
  if (!['day', 'week', 'month'].includes(step)) throw UsageError.of(`k8s: --step must be one of day, week, month, got ${JSON.stringify(values.step)}`);
  if (values.to! <= values.from!) throw UsageError.of(`k8s: --to (${values.to}) must be after --from (${values.from})`);
  return { from: values.from!, to: values.to!, step };
}

/** --completions or --parallelism: a whole number from 1 to `max`, `fallback` when absent. */
function wholeFlag(values: K8sFlags, flag: 'completions' | 'parallelism', fallback: number, max: number): number {
  const text = values[flag];
  const value = text === undefined ? fallback : /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!(value >= 1 && value <= max)) throw UsageError.of(`k8s: --${flag} must be a whole number from 1 to ${max}, got ${JSON.stringify(text)}`);
  return value;
}

/** Plans the manifests, then checks them (--check) or writes them and says what changed. */
async function writeOrCheckManifests(values: K8sFlags, workspace: Workspace, io: CliIo): Promise<number> {
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
  if (values.check) return checkManifests(plan, command, io);

  const changed = await writeManifests(plan);
  const kept = plan.files.filter((file) => file.once !== undefined && !changed.some((entry) => entry.file === file.file)).map((file) => file.file);
  const cronJobs = workspace.jobs.filter((job) => job.schedule !== undefined).length;
  io.stdout.write(
    `${changed.length === 0 ? 'unchanged' : `updated ${countNoun(changed.length, 'file')}`}: ${shown(outFile)} (${countNoun(cronJobs, 'CronJob')} for ${countNoun(workspace.jobs.length, 'job')}), ` +
      `${shown(path.join(path.dirname(outFile), 'backfill-job.yaml'))}, ${shown(plan.generatedDirectory)}/\n` +
      `${changed.map((entry) => `  ${shown(entry.file)}: ${CHANGE_SAID[entry.reason]}`).join('\n')}${changed.length > 0 ? '\n' : ''}` +
      (kept.length > 0 ? `kept as they are (yours; written only when absent): ${kept.map(shown).join(', ')}\n` : '') +
      `deploy with: kubectl apply -k ${shown(path.dirname(outFile))}/\n`,
  );
  return EXIT.ok;
}

/** --check: exit 0 when every generated file is as planned, else 1 with the stale ones listed. */
async function checkManifests(plan: ManifestPlan, command: string, io: CliIo): Promise<number> {
  const stale = await staleFiles(plan);
  if (stale.length === 0) {
    io.stdout.write(`up to date: ${plan.files.length} generated files (${command})\n`);
    return EXIT.ok;
  }
  io.stderr.write(`stale Kubernetes manifests; run: ${command}\n${stale.map((entry) => `  ${shown(entry.file)}: ${entry.reason}`).join('\n')}\n`);
  return EXIT.tileFailed;
}

export const k8sCommand: Command = {
  name: 'k8s',
  help: `Usage: tilehouse k8s [--config FILE] [--jobs DIR] [--out FILE] [--check]
       tilehouse k8s --backfill NAME --from DATE --to DATE [--step S] [--completions N] [--parallelism P] [--resume]

Generates the manifests of the kustomize base from the job files, so schedules have one source of
truth: one CronJob per job with a schedule (schedule.cron, timeZone: schedule.timezone) running
"tilehouse run --job NAME"; jobs without a schedule get none. Beside --out it writes
backfill-job.yaml (a template) and generated/ (copies of the job files and the environment
config, with the kustomization that makes the ConfigMaps), rewritten on every run; and, only when
absent, kustomization.yaml, namespace.yaml and serviceaccount.yaml: those are yours to edit
(registry image, Workload Identity) and never rewritten (the empty placeholder kustomization this
repository ships in k8s/ is replaced). Then: kubectl apply -k k8s/

Options:
  -c, --config FILE    the environment config the pods use (default: $TILEHOUSE_CONFIG, else the config
                       the existing manifests were generated from, else config/default.yaml)
  -j, --jobs DIR       directory of job YAML files (default: $TILEHOUSE_JOBS or jobs)
  -o, --out FILE       the CronJobs file (default: ${DEFAULT_K8S_OUT}); the other files go beside it
      --check          write nothing; exit 1 when a generated file is missing or stale
      --backfill NAME  print (stdout) an Indexed Job that backfills job NAME over [--from, --to)
                       by --step (day|week|month); writes nothing. Each of --completions pods
                       (default: one per window, at most 64) runs a contiguous share of the
                       windows, --parallelism (default 2) at a time; the Job's name is the run id;
                       --resume: the pods skip windows already done (backfill --resume)
  -h, --help           show this help

Example:
  tilehouse k8s --config config/production.example.yaml --jobs jobs --check
  tilehouse k8s --backfill daily_incidents_by_severity --from 2026-01-01 --to 2026-07-01 \\
    --completions 6 --parallelism 3 | kubectl create -f -

Exit codes: 0 written (or up to date with --check), 1 stale (--check), 2 bad config or usage.
`,
  async run(args, io, seams) {
    const { values } = parseK8sArgs(args);
    if (values.help) {
      io.stdout.write(this.help);
      return EXIT.ok;
    }
    const backfillFlags = (['from', 'to', 'step', 'completions', 'parallelism', 'resume'] as const).filter((flag) => values[flag] !== undefined);
    if (values.backfill === undefined && backfillFlags.length > 0) throw UsageError.of(`k8s: --${backfillFlags[0]} belongs to --backfill NAME`);
    const workspace = await loadWorkspace({ ...values, config: values.config ?? (await generatedFromConfig(values.out ?? DEFAULT_K8S_OUT, io.env)) }, io.env);
    if (values.backfill !== undefined) return printBackfillJob(values.backfill, values, workspace, io);
    return writeOrCheckManifests(values, workspace, io);
  },
};
