import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, cp, mkdir, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTempDir } from '../support/temp-dir.js';
import { commandKey, headingAnchors, relativeLinks, shownCommands, type ShownCommand } from './markdown-commands.js';
import { underCi } from '../support/ci.js';
import { itUnless } from '../support/skip.js';

/**
 * Issue 25: every command README.md, docs/*.md and bench/README.md (k8s/README.md: test/deploy/k8s-readme.test.ts) show in a ```sh
 * block is either run here, as written, against the sandbox (in a copy of the checkout whose
 * config/default.yaml points the demo's sandbox at a free port, so parallel runs never meet on
 * 8787), or listed below as not runnable here, with the reason. A command added to a document
 * without an entry fails the first test, so examples cannot rot unnoticed.
 */

const ROOT = path.resolve('.');
const run = promisify(execFile);

interface Outcome {
  exit: number;
  /** Matched against stdout and stderr together: the demo prints its summary on stderr. */
  output?: RegExp[];
  stdout?: RegExp[];
  /** Files, relative to the copy, that exist after the command. */
  files?: string[];
}

/** A group is one copy of the checkout; its commands run in the order listed, each after the last. */
type Group = 'quick start' | 'path' | 'incremental demo' | 'tilehouse' | 'init' | 'emulator walk-through';

type Entry =
  | { kind: 'run'; group: Group; outcome: Outcome; runAs?: { command: string; why: string }; env?: Record<string, string> }
  | { kind: 'not runnable'; reason: string };

const KUBECTL = 'needs a Kubernetes cluster (kubectl)';
const _GCLOUD = 'needs a Google Cloud project and gcloud credentials';
const BENCH = 'a benchmark: minutes of CPU on a machine shared by the suite (--quick included); bench/ has its own checks';
const PEERS =
  "the peers' bench: dlt and Airbyte's CDK from the bench-only Python venv (bash bench/peers/setup.sh; without it the command exits 2), minutes of CPU; test/bench/peers/ checks what runs without Python";

const DAYS = (job: string, days: string[]) => days.map((day) => `out/${job}/${day}.csv`);

const COMMANDS: Record<string, Entry> = {
  // README.md, the first lines.
  'npm ci && npm run demo': {
    kind: 'run',
    group: 'quick start',
    runAs: { command: 'npm run demo', why: 'npm ci would replace the node_modules this copy shares with the checkout; the suite runs after it' },
    outcome: {
      exit: 0,
      output: [/ok {3}daily_incidents_by_severity/, /ok {3}tag_postmortem_breakdown/],
      files: [
        'out/daily_incidents_by_severity.csv',
        'out/incident_types_resolution.csv',
        'out/incidents_by_month_severity.csv',
        'out/tag_postmortem_breakdown.csv',
      ],
    },
  },
  'npm test': { kind: 'not runnable', reason: 'the suite this test is part of' },
  'CI=true npm run test:under-load -- --top 10': { kind: 'not runnable', reason: 'the suite this test is part of, beside busy processes: tens of minutes' },
  'npm run demo -- validate': { kind: 'run', group: 'quick start', outcome: { exit: 0, stdout: [/^valid: config\/default\.yaml and 5 jobs in jobs/m] } },
  'npm run demo -- check': {
    kind: 'run',
    group: 'quick start',
    outcome: { exit: 0, stdout: [/^ok job daily_incidents_by_severity: \d+ rows in the tile, 3 columns$/m, /^ok job tag_postmortem_breakdown: /m] },
  },
  'npm run demo -- plan': {
    kind: 'run',
    group: 'quick start',
    // After the demo run above, the CSV files hold what a run would write now.
    outcome: { exit: 0, stdout: [/^daily_incidents_by_severity \(tile \w+\): \d+ rows now$/m, /daily_incidents_by_severity\.csv: unchanged/] },
  },
  'npm run demo -- backfill --job daily_incidents_by_severity --from 2026-06-01 --to 2026-06-08': {
    kind: 'run',
    group: 'quick start',
    outcome: {
      exit: 0,
      output: [/2026-06-07\.\.2026-06-08: \d+ rows? → /],
      files: DAYS('daily_incidents_by_severity', ['2026-06-01', '2026-06-02', '2026-06-03', '2026-06-04', '2026-06-05', '2026-06-06', '2026-06-07']),
    },
  },

  // README.md, From the sandbox to a tenant: the steps that need no tenant run in one copy, in order.
  'cp config/production.example.yaml config/production.yaml': { kind: 'run', group: 'path', outcome: { exit: 0, files: ['config/production.yaml'] } },
  'tilehouse init --from-request request.txt --config config/production.yaml --name incidents_by_type': {
    kind: 'run',
    group: 'path',
    outcome: {
      exit: 0,
      stdout: [/^wrote jobs\/incidents_by_type\.yaml: tile 65f0a1c2d3e4f5a6b7c8d9aa, 2 query items/m],
      files: ['jobs/incidents_by_type.yaml'],
    },
  },
  'tilehouse validate --config config/production.yaml --strict': {
    kind: 'run',
    group: 'path',
    // Step 2's variable is set; the secret file lives where the pod mounts it, not here: validate
    // reads no secret value and says so, and `check` is the command that needs them.
    env: { TILEHOUSE_CLIENT_ID: 'readme-client' },
    outcome: { exit: 0, output: [/not checked: .*source\.clientSecretFile = "\/var\/run\/secrets\/tilehouse\/client-secret"/] },
  },
  // docs/operations.md: the seeded night's commands, against its workspace.
  ...Object.fromEntries(
    [
      'tilehouse status --config config/production.yaml',
      'tilehouse plan --config config/production.yaml --job incidents_open',
      'tilehouse check --config config/production.yaml --job incidents_open',
      'tilehouse run --config config/production.yaml --job incident_types',
      'tilehouse run --config config/production.yaml --job incidents_open --allow-shrink',
    ].map((command) => [
      command,
      {
        kind: 'not runnable',
        reason:
          "the seeded night's workspace (two nights on their own clock, a tile deleted, a filter edited): test/cli/morning-after.test.ts runs it and checks the outputs the page shows",
      } satisfies Entry,
    ]),
  ),
  'tilehouse check --config config/production.yaml': {
    kind: 'not runnable',
    reason: "a real tenant: the token and page 0 of each tile, and the bucket (the sandbox's run is `npm run demo -- check`)",
  },
  'tilehouse plan --config config/production.yaml': {
    kind: 'not runnable',
    reason: "a real tenant and BigQuery (the sandbox's run is `npm run demo -- plan`)",
  },
  'docker build -t <registry>/tilehouse:<tag> .': {
    kind: 'not runnable',
    reason: 'a container engine and a registry; the image test (another branch) builds the Dockerfile with buildah',
  },
  'docker push <registry>/tilehouse:<tag>': { kind: 'not runnable', reason: 'a container registry and its credentials' },
  'tilehouse k8s --config config/production.yaml --jobs jobs': {
    kind: 'run',
    group: 'path',
    // The base now follows config/production.yaml: the CronJobs name that file, and generated/ holds it.
    outcome: {
      exit: 0,
      stdout: [/^updated \d+ files: k8s\/cronjobs\.yaml/m, /^deploy with: kubectl apply -k k8s\/$/m],
      files: ['k8s/generated/config/production.yaml'],
    },
  },
  // README.md, Deploy on Kubernetes: the same base, with the CronJobs file named.
  'tilehouse k8s --config config/production.yaml --jobs jobs --out k8s/cronjobs.yaml': {
    kind: 'run',
    group: 'path',
    outcome: {
      exit: 0,
      stdout: [/^deploy with: kubectl apply -k k8s\/$/m],
      files: ['k8s/cronjobs.yaml', 'k8s/kustomization.yaml', 'k8s/namespace.yaml', 'k8s/serviceaccount.yaml'],
    },
  },
  'kubectl -n tilehouse create job --from=cronjob/tilehouse-incidents-by-type incidents-by-type-manual': { kind: 'not runnable', reason: KUBECTL },
  'kubectl -n tilehouse logs -f job/incidents-by-type-manual': { kind: 'not runnable', reason: KUBECTL },

  // README.md, Deploy on Kubernetes; k8s/README.md shows the same commands.
  'kubectl apply -f k8s/namespace.yaml': { kind: 'not runnable', reason: KUBECTL },
  'kubectl -n tilehouse create secret generic tilehouse-credentials --from-literal=client-id=<client id> --from-file=client-secret=./client-secret.txt': {
    kind: 'not runnable',
    reason: `${KUBECTL}, and the tenant's credentials`,
  },
  'kubectl apply -k k8s/': { kind: 'not runnable', reason: KUBECTL },
  'kubectl -n tilehouse create job --from=cronjob/tilehouse-incidents-by-month-severity incidents-by-month-severity-manual': {
    kind: 'not runnable',
    reason: KUBECTL,
  },

  // docs/commands.md
  'tilehouse probe --config config/production.example.yaml --job daily_incidents_by_severity --record probe.json': {
    kind: 'not runnable',
    reason: 'a real tenant and its credentials (the next line is the same probe against the sandbox)',
  },
  'npm run demo -- probe --job daily_incidents_by_severity --record probe.json': {
    kind: 'run',
    group: 'quick start',
    outcome: { exit: 0, files: ['probe.json'] },
  },
  'tilehouse init --from-request request.txt': {
    kind: 'run',
    group: 'init',
    // request.txt is the reader's copy of a tile's request; the test writes one (see beforeAll).
    outcome: { exit: 0, stdout: [/^wrote jobs\/severity\.yaml: tile 65f0a1c2d3e4f5a6b7c8d9aa, 2 query items/m], files: ['jobs/severity.yaml'] },
  },
  'tilehouse init --from-request request.txt --name incidents_by_type --force': {
    kind: 'run',
    group: 'init',
    outcome: { exit: 0, stdout: [/^wrote jobs\/incidents_by_type\.yaml: /m], files: ['jobs/incidents_by_type.yaml'] },
  },

  // README.md, A Parquet job: the example job against the demo's sandbox (its SQL is run by test/sinks/parquet/parquet-docs.test.ts).
  'npm run demo -- run --jobs examples/parquet/jobs': {
    kind: 'run',
    group: 'tilehouse',
    outcome: { exit: 0, output: [/ok {3}incidents_lake \([\d.]+ s\): \d+ rows, \d+ pages? → .*incidents_lake\/\d{4}-\d{2}-\d{2}\.parquet/] },
  },

  // docs/incremental-and-backfill.md
  'tilehouse backfill --job daily_incidents_by_severity --from 2026-06-01 --to 2026-07-01 --step week --concurrency 2': {
    kind: 'run',
    group: 'tilehouse',
    runAs: {
      command: 'npm run demo -- backfill --job daily_incidents_by_severity --from 2026-06-01 --to 2026-07-01 --step week --concurrency 2',
      why: 'a source to export from: the demo starts the sandbox and runs the same command against it',
    },
    outcome: { exit: 0, output: [/2026-06-01\.\.2026-06-08: \d+ rows? → /, /2026-06-29\.\.2026-07-01: \d+ rows? → /] },
  },
  'npm run demo -- run --job incidents_incremental': {
    kind: 'run',
    group: 'incremental demo',
    outcome: {
      exit: 0,
      output: [/incremental incidents_incremental: 4 windows 2026-06-28\.\.2026-07-02: first run/],
      files: DAYS('incidents_incremental', ['2026-06-28', '2026-06-29', '2026-06-30', '2026-07-01']),
    },
  },
  'SANDBOX_NOW=2026-07-05 npm run demo -- plan --job incidents_incremental': {
    kind: 'run',
    group: 'incremental demo',
    outcome: {
      exit: 0,
      stdout: [
        /next run exports 6 windows 2026-06-30\.\.2026-07-06/,
        /2026-06-30 {2}\(lookback: published, exported again\)/,
        /2026-07-01 {2}\(published while open, exported again\)/,
        /2026-07-05 {2}\(open: /,
      ],
    },
  },
  'SANDBOX_NOW=2026-07-05 npm run demo -- run --job incidents_incremental': {
    kind: 'run',
    group: 'incremental demo',
    // Shown twice: the first exports six days (06-30 as lookback, 07-01 published while open), the
    // second the lookback day 07-04 and the still open 07-05.
    outcome: {
      exit: 0,
      output: [/incremental incidents_incremental: (6 windows 2026-06-30|2 windows 2026-07-04)\.\.2026-07-06/],
      files: DAYS('incidents_incremental', ['2026-06-30', '2026-07-01', '2026-07-02', '2026-07-03', '2026-07-04', '2026-07-05']),
    },
  },
  // docs/incremental-and-backfill.md, the emulator walk-through: its lines share one shell (export,
  // q(), the background job %1), so the group runs them as one script, on the emulator's port 9050.
  '.tools/bin/bigquery-emulator --project=tilehouse-demo --host=127.0.0.1 --port=9050 &': { kind: 'run', group: 'emulator walk-through', outcome: { exit: 0 } },
  'export BIGQUERY_EMULATOR_HOST=http://127.0.0.1:9050 TILEHOUSE_CONFIG=config/emulator.example.yaml': {
    kind: 'run',
    group: 'emulator walk-through',
    outcome: { exit: 0 },
  },
  'npm run demo -- run --jobs examples/emulator/jobs': {
    kind: 'run',
    group: 'emulator walk-through',
    outcome: {
      exit: 0,
      output: [/incremental incidents_incremental: 4 windows 2026-06-28\.\.2026-07-02: first run/, /→ tilehouse-demo\.demo\.incidents_incremental, /],
    },
  },
  'SANDBOX_NOW=2026-07-05 npm run demo -- plan --jobs examples/emulator/jobs': {
    kind: 'run',
    group: 'emulator walk-through',
    outcome: {
      exit: 0,
      stdout: [/bigquery tilehouse-demo\.demo\.incidents_incremental \(merge on number\): unchanged/, /next run exports 6 windows 2026-06-30\.\.2026-07-06/],
    },
  },
  'SANDBOX_NOW=2026-07-05 npm run demo -- run --jobs examples/emulator/jobs': {
    kind: 'run',
    group: 'emulator walk-through',
    outcome: {
      exit: 0,
      output: [/6 windows 2026-06-30\.\.2026-07-06: resume after 2026-06-30/, /2 windows 2026-07-04\.\.2026-07-06: resume after 2026-07-04/],
    },
  },
  'q() { curl -s http://127.0.0.1:9050/bigquery/v2/projects/tilehouse-demo/queries -H \'content-type: application/json\' -d "{\\"query\\": \\"$1\\", \\"useLegacySql\\": false}"; }':
    {
      kind: 'run',
      group: 'emulator walk-through',
      outcome: { exit: 0 },
    },
  "q 'SELECT COUNT(*), COUNT(DISTINCT number), MIN(day), MAX(day) FROM demo.incidents_incremental'": {
    kind: 'run',
    group: 'emulator walk-through',
    // The comment's "28, 28, 2026-06-30, 2026-07-05": each incident once after 07-04 and 07-05 merged again.
    outcome: { exit: 0, stdout: [/"rows":\[\{"f":\[\{"v":"28"\},\{"v":"28"\},\{"v":"2026-06-30"\},\{"v":"2026-07-05"\}\]\}\]/] },
  },
  "q 'SELECT CAST(window_from AS STRING), status, published, row_count FROM demo._tilehouse_runs ORDER BY recorded_at'": {
    kind: 'run',
    group: 'emulator walk-through',
    outcome: { exit: 0, stdout: [/"totalRows":"12"/, /\{"f":\[\{"v":"2026-07-05"\},\{"v":"succeeded"\},\{"v":"true"\},\{"v":"3"\}\]\}\]/] },
  },
  'kill %1; unset BIGQUERY_EMULATOR_HOST TILEHOUSE_CONFIG': { kind: 'run', group: 'emulator walk-through', outcome: { exit: 0 } },

  // bench/README.md
  'npm run bench': { kind: 'not runnable', reason: BENCH },
  'npm run bench -- --quick': { kind: 'not runnable', reason: BENCH },
  'npm run -s bench -- --json > bench.json': { kind: 'not runnable', reason: BENCH },
  'npm run bench -- --sizes 100000 --latencies 50 --scenarios csv,compressed --bandwidth-mbps 20': { kind: 'not runnable', reason: BENCH },
  'npm run bench -- --sizes 100000 --latencies 0 --scenarios csv --cpu-prof prof': { kind: 'not runnable', reason: BENCH },
  'npm run bench -- --sizes 1000000 --latencies 50 --scenarios csv,gcs': { kind: 'not runnable', reason: BENCH },
  'npm run bench -- --memory': { kind: 'not runnable', reason: BENCH },
  'npm run bench -- --memory --memory-baseline ../main-baseline': { kind: 'not runnable', reason: BENCH },
  'npm run bench -- --sizes 1000000 --latencies 50 --scenarios transport,csv --concurrency 8 --baseline ../main-baseline': {
    kind: 'not runnable',
    reason: BENCH,
  },
  'npm run bench -- --sizes 1000000 --latencies 50 --scenarios transport,csv --concurrency 8 --baseline ../main-baseline --rounds 10': {
    kind: 'not runnable',
    reason: BENCH,
  },
  'npm run bench -- --sizes 100000,1000000 --latencies 50 --scenarios csv,parquet': { kind: 'not runnable', reason: BENCH },
  'npm run bench -- --sizes 1000000 --latencies 50 --scenarios parquet,iceberg,parquet-s3,iceberg-s3': { kind: 'not runnable', reason: BENCH },
  'bash bench/peers/setup.sh': {
    kind: 'not runnable',
    reason: "installs dlt, Airbyte's CDK and ~100 other Python packages from PyPI into .tools/peers-venv: bench-only, and no test needs it",
  },
  'npm run bench -- --peers': { kind: 'not runnable', reason: PEERS },
  'npm run bench -- --peers --peers-cases 10000@0 --peers-runs 1': { kind: 'not runnable', reason: PEERS },
};

async function documents(): Promise<string[]> {
  const docs = (await readdir(path.join(ROOT, 'docs'))).filter((name) => name.endsWith('.md')).sort();
  // k8s/README.md's commands are run as written by test/deploy/k8s-readme.test.ts, in a config
  // repository of one's own, with the real kustomize.
  return ['README.md', ...docs.map((name) => `docs/${name}`), 'bench/README.md'];
}

async function allShown(): Promise<{ commands: ShownCommand[]; problems: string[] }> {
  const commands: ShownCommand[] = [];
  const problems: string[] = [];
  for (const file of await documents()) {
    const found = shownCommands(file, await readFile(path.join(ROOT, file), 'utf8'));
    commands.push(...found.commands);
    problems.push(...found.problems);
  }
  return { commands, problems };
}

const shown = await allShown();

describe('the commands the documents show', () => {
  it('are all fenced as sh, text or another language, never a bare fence or an indented block', () => {
    expect(shown.problems).toEqual([]);
  });

  it('are each run here or listed as not runnable, with a reason; no entry names a command no document shows', () => {
    const untagged = shown.commands.filter((command) => COMMANDS[command.key] === undefined).map((c) => `${c.file}:${c.line}: ${c.key}`);
    expect(untagged, 'commands without an entry in COMMANDS (test/docs/readme-commands.test.ts): run them there or say why they cannot run').toEqual([]);
    const keys = new Set(shown.commands.map((command) => command.key));
    expect(
      Object.keys(COMMANDS).filter((key) => !keys.has(key)),
      'entries for commands no document shows any more',
    ).toEqual([]);
    for (const [key, entry] of Object.entries(COMMANDS)) {
      if (entry.kind === 'not runnable') expect(entry.reason.length, key).toBeGreaterThan(10);
    }
  });
});

describe('the links between the documents', () => {
  it('each name a file that exists and, after #, a heading it has', async () => {
    const files = [...(await documents()), 'ARCHITECTURE.md', 'CHANGELOG.md', 'sandbox/README.md'];
    const broken: string[] = [];
    for (const file of files) {
      for (const link of relativeLinks(file, await readFile(path.join(ROOT, file), 'utf8'))) {
        const [target, anchor] = link.target.split('#') as [string, string | undefined];
        const resolved = target === '' ? file : path.join(path.dirname(file), target);
        const found = await stat(path.join(ROOT, resolved)).catch(() => undefined);
        if (found === undefined) broken.push(`${link.file}:${link.line}: ${link.target}: no such file`);
        else if (anchor !== undefined && !(found.isFile() && headingAnchors(await readFile(path.join(ROOT, resolved), 'utf8')).has(anchor))) {
          broken.push(`${link.file}:${link.line}: ${link.target}: no heading #${anchor} in ${resolved}`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('anchors are computed as GitHub computes them, and a missing one is seen', () => {
    const anchors = headingAnchors('# A\n## Job (`jobs/*.yaml`, one per tile)\n## Killed and concurrent runs, as tested\n## A\n```sh\n# not a heading\n```');
    expect([...anchors]).toEqual(['a', 'job-jobsyaml-one-per-tile', 'killed-and-concurrent-runs-as-tested', 'a-1']);
    expect(relativeLinks('x.md', 'see [a](docs/a.md#b), `[c](d.md)`, [w](https://x.org)')).toEqual([{ file: 'x.md', line: 1, target: 'docs/a.md#b' }]);
  });
});

describe('shownCommands', () => {
  it('joins continuations, drops comments outside quotes, keeps the text as written, and ignores other fences', () => {
    const markdown = [
      '```sh',
      'tilehouse run \\',
      '  --job a   # why',
      'echo \'a # b\' "c # d"#e',
      '# only a comment',
      '```',
      '```text',
      'tilehouse plan',
      '```',
    ].join('\n');
    const { commands, problems } = shownCommands('x.md', markdown);
    expect(problems).toEqual([]);
    expect(commands).toEqual([
      { file: 'x.md', line: 2, text: 'tilehouse run \\\n  --job a   # why', key: 'tilehouse run --job a' },
      { file: 'x.md', line: 4, text: 'echo \'a # b\' "c # d"#e', key: 'echo \'a # b\' "c # d"#e' },
    ]);
    expect(commandKey('a \\\n b # c')).toBe('a b');
  });

  it('reports a bare fence, an indented block and an unclosed fence, but not a list continuation', () => {
    const markdown = ['```', 'npm run demo', '```', '', '    npm run demo', '- item', '  continued', '', '```sh', 'x'].join('\n');
    expect(shownCommands('x.md', markdown).problems).toEqual([
      'x.md:1: a code fence without a language: say sh for commands, text for output',
      'x.md:5: an indented code block: fence it as sh (commands) or text (output)',
      'x.md: a code fence that is never closed',
    ]);
  });
});

/** A free loopback port for the demo's sandbox (config/default.yaml's 8787 would meet other runs). */
async function portIsFree(port: number): Promise<boolean> {
  const server = createServer();
  const free = await new Promise<boolean>((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => resolve(true));
  });
  if (free) await new Promise((resolve) => server.close(resolve));
  return free;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

interface Copy {
  dir: string;
  env: Record<string, string>;
}

/** The checkout's tracked files (as they are in the work tree), its node_modules linked, a `tilehouse` on PATH. */
async function copyCheckout(): Promise<Copy> {
  const base = await makeTempDir('tilehouse-docs-');
  const dir = path.join(base, 'checkout');
  const { stdout } = await run('git', ['ls-files', '-z'], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 });
  for (const file of stdout.split('\0').filter((name) => name !== '')) {
    const from = path.join(ROOT, file);
    if (!(await stat(from).catch(() => undefined))?.isFile()) continue; // deleted in the work tree
    await mkdir(path.dirname(path.join(dir, file)), { recursive: true });
    await cp(from, path.join(dir, file));
  }
  await symlink(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  await symlink(path.join(ROOT, '.tools'), path.join(dir, '.tools'));
  // The one change to the copy: the demo's sandbox address, in both configs the documents run it with.
  const port = await freePort();
  for (const name of ['default.yaml', 'emulator.example.yaml']) {
    const config = path.join(dir, 'config', name);
    const text = await readFile(config, 'utf8');
    expect(text).toContain('127.0.0.1:8787');
    await writeFile(config, text.replaceAll('127.0.0.1:8787', `127.0.0.1:${port}`));
  }
  // `tilehouse` as the README writes it: `npx tilehouse` of the checkout, i.e. its bin/tilehouse.js.
  const bin = path.join(base, 'bin');
  await mkdir(bin);
  await writeFile(path.join(bin, 'tilehouse'), `#!/bin/sh\nexec "${process.execPath}" "${path.join(dir, 'bin', 'tilehouse.js')}" "$@"\n`);
  await chmod(path.join(bin, 'tilehouse'), 0o755);
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    // A reader's shell: none of the settings a test run or the machine may carry.
    if (value === undefined || /^(TILEHOUSE_|SANDBOX_|BIGQUERY_EMULATOR|STORAGE_EMULATOR|GOOGLE_)/.test(name)) continue;
    env[name] = value;
  }
  env.PATH = `${bin}:${process.env.PATH ?? ''}`;
  env.npm_config_update_notifier = 'false';
  env.CI = '';
  return { dir, env };
}

interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `bash -c COMMAND` in the copy, in its own process group so a timeout ends npm, tsx and node together. */
function runShell(command: string, copy: Copy, timeoutMs: number): Promise<Result> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', command], { cwd: copy.dir, env: copy.env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => process.kill(-child.pid!, 'SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** request.txt for `tilehouse init`: a tile's request as the reporting module shows it (curl). */
const REQUEST = `curl -X POST 'https://acme.incidents.example.com/api/v1/topics/incident/execute?tileId=65f0a1c2d3e4f5a6b7c8d9aa' \\
  -H 'Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.eA.sig' -H 'content-type: application/json' \\
  --data-raw '${JSON.stringify({
    items: [
      {
        header: 'Severity',
        formula: '[incident.severity_label]',
        dataType: 'text',
        grouped: true,
        order: 'asc',
        orderSequence: 0,
        hidden: false,
        ref: 'sev',
        filters: [],
      },
      { header: 'Incidents', formula: '[incident.number]', dataType: 'number', aggregate: 'count', hidden: false, filters: [] },
    ],
    options: { pageNumber: 0, itemsPerPage: 50, ignoreRepeatedRows: false },
  })}'
`;

// init has a copy of its own: the jobs it writes would be CronJobs to the k8s commands.
const GROUPS: Group[] = ['quick start', 'path', 'incremental demo', 'tilehouse', 'init', 'emulator walk-through'];
/** Groups whose commands share one shell, run as one script in document order. */
const ONE_SHELL: ReadonlySet<Group> = new Set(['emulator walk-through']);
const WALK_THROUGH_PORT = 9050;

for (const group of GROUPS) {
  // Every place a command is shown is run, in document order; one shown twice runs twice.
  const steps = shown.commands.filter((command) => {
    const entry = COMMANDS[command.key];
    return entry !== undefined && entry.kind !== 'not runnable' && entry.group === group;
  });
  describe(`the documents' commands, run as written: ${group}`, () => {
    let copy: Copy;
    beforeAll(async () => {
      copy = await copyCheckout();
      await writeFile(path.join(copy.dir, 'request.txt'), REQUEST);
    }, 120_000);
    afterAll(async () => {
      if (copy !== undefined) await rm(path.dirname(copy.dir), { recursive: true, force: true });
    });

    it('has commands to run', () => {
      expect(steps.length).toBeGreaterThan(0);
    });

    async function check(entry: Exclude<Entry, { kind: 'not runnable' }>, result: Result): Promise<void> {
      const report = `exit ${result.code}\n--- stdout\n${result.stdout}\n--- stderr\n${result.stderr}`;
      expect(result.code, report).toBe(entry.outcome.exit);
      for (const pattern of entry.outcome.stdout ?? []) expect(result.stdout, report).toMatch(pattern);
      for (const pattern of entry.outcome.output ?? []) expect(`${result.stdout}\n${result.stderr}`, report).toMatch(pattern);
      for (const file of entry.outcome.files ?? []) expect((await stat(path.join(copy.dir, file)).catch(() => undefined))?.isFile(), file).toBe(true);
      // The secret the demo hands its sandbox (sandbox/sandbox.ts's default) never reaches a terminal.
      expect(result.stdout + result.stderr).not.toContain('sandbox-secret');
    }

    if (ONE_SHELL.has(group)) {
      const emulator = path.join(ROOT, '.tools', 'bin', 'bigquery-emulator');
      const installed = existsSync(emulator);
      if (!installed && underCi()) throw new Error(`CI is set but ${emulator} is missing: run \`npm run setup:tools\``);
      itUnless(installed ? null : `${emulator} is not installed (npm run setup:tools)`)(
        `${steps[0]?.file}:${steps[0]?.line}: the ${steps.length} lines, as one script (emulator)`,
        async () => {
          // The walk-through names its port; a port already taken would aim it at someone else's server.
          expect(await portIsFree(WALK_THROUGH_PORT), `port ${WALK_THROUGH_PORT}, which the walk-through's emulator listens on, is in use`).toBe(true);
          // set -e: a line that fails stops the script, instead of leaving the next to fail obscurely.
          const result = await runShell(`set -e\n${steps.map((step) => step.text).join('\n')}`, copy, 240_000);
          for (const step of steps) await check(COMMANDS[step.key] as Exclude<Entry, { kind: 'not runnable' }>, result);
          // `kill %1` stopped the emulator the script started.
          expect(await portIsFree(WALK_THROUGH_PORT)).toBe(true);
        },
        300_000,
      );
      return;
    }

    for (const step of steps) {
      const entry = COMMANDS[step.key] as Exclude<Entry, { kind: 'not runnable' }>;
      const label = `exits ${entry.outcome.exit}`;
      it(`${step.file}:${step.line}: ${step.key} — ${label}`, async () => {
        await check(entry, await runShell(entry.runAs?.command ?? step.text, { ...copy, env: { ...copy.env, ...entry.env } }, 90_000));
      }, 120_000);
    }
  });
}
