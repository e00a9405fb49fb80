// `npm run test:under-load [-- options] [-- vitest filters]`: the test suite beside synthetic load,
// then its slowest tests. A test whose verdict depends on how busy the machine is (a sleep that
// orders events, a limit sized on a quiet machine) fails here before it fails someone's CI run
// on a laptop that is also compiling something. Not part of `npm test`: it takes longer than the
// suite and is meant to be run on purpose (README, "Under load").
//
// The load: busy processes (twice the core count by default), each a spinning Node loop that
// stops by itself when its time is up or its parent is gone, and that this script stops at the
// end, after a failure, and on Ctrl-C or SIGTERM.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const USAGE = `usage: node scripts/suite-under-load.mjs [--busy N] [--max-minutes M] [--top K] [--report FILE] [-- VITEST_ARGS...]
  --busy N         busy processes beside the suite (default: twice the core count, ${2 * os.availableParallelism()} here)
  --max-minutes M  the load stops by itself after M minutes, whatever happens to this script (default 90)
  --top K          how many of the slowest tests to list (default 10)
  --report FILE    where vitest's JSON report goes (default: a new directory under the system's temp directory)
  VITEST_ARGS      handed to \`vitest run\` (file filters, -t ...); the whole suite without them`;

/** The options of a command line (argv without node and the script). */
export function parseArguments(argv) {
  const options = { busy: 2 * os.availableParallelism(), maxMinutes: 90, top: 10, report: undefined, vitestArgs: [] };
  for (let index = 0; index < argv.length; index++) {
    const argument = argv[index];
    if (argument === '--') {
      options.vitestArgs = argv.slice(index + 1);
      break;
    }
    const value = argv[index + 1];
    const number = () => {
      const parsed = Number(value);
      if (!Number.isInteger(parsed) || parsed < 0) throw new Error(`${argument} needs a whole number, not ${JSON.stringify(value)}`);
      index++;
      return parsed;
    };
    if (argument === '--busy') options.busy = number();
    else if (argument === '--max-minutes') options.maxMinutes = number();
    else if (argument === '--top') options.top = number();
    else if (argument === '--report' && value !== undefined) {
      options.report = path.resolve(value);
      index++;
    } else if (argument === '--help' || argument === '-h') throw new Error(USAGE);
    else throw new Error(`unknown option ${argument}\n${USAGE}`);
  }
  return options;
}

/**
 * The slowest tests of a vitest JSON report (its `testResults[].assertionResults[]`), slowest first,
 * and the counts of the run.
 */
export function slowestTests(report, root, top) {
  const tests = [];
  for (const file of report.testResults ?? []) {
    for (const test of file.assertionResults ?? []) {
      tests.push({ file: path.relative(root, file.name), name: test.fullName ?? test.title, status: test.status, durationMs: test.duration ?? 0 });
    }
  }
  tests.sort((a, b) => b.durationMs - a.durationMs);
  return {
    total: report.numTotalTests ?? tests.length,
    passed: report.numPassedTests ?? 0,
    failed: report.numFailedTests ?? 0,
    skipped: (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0),
    failures: tests.filter((test) => test.status === 'failed'),
    slowest: tests.slice(0, top),
  };
}

/** A busy process: spins until `untilMs` (epoch) or until its parent is gone, whichever is first. */
const BUSY_LOOP = `
const until = Number(process.argv[1]);
const parent = process.ppid;
for (;;) {
  for (let spin = 0; spin < 5e6; spin++);
  if (Date.now() > until || process.ppid !== parent) process.exit(0);
}`;

function startLoad(count, maxMinutes) {
  const until = Date.now() + maxMinutes * 60_000;
  const children = [];
  for (let index = 0; index < count; index++) {
    children.push(spawn(process.execPath, ['-e', BUSY_LOOP, String(until)], { stdio: 'ignore' }));
  }
  return children;
}

function stopAll(load, vitest) {
  for (const child of load) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  // vitest runs in a process group of its own: its workers and the tools they started go with it.
  if (vitest !== undefined && vitest.exitCode === null && vitest.signalCode === null) {
    try {
      process.kill(-vitest.pid, 'SIGTERM');
    } catch {
      // already gone
    }
  }
}

const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;

async function main() {
  let options;
  try {
    options = parseArguments(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`${error.message}\n`);
    return 2;
  }
  const root = fileURLToPath(new URL('..', import.meta.url));
  const report = options.report ?? path.join(mkdtempSync(path.join(os.tmpdir(), 'tilehouse-under-load-')), 'vitest-report.json');
  const load = startLoad(options.busy, options.maxMinutes);
  let vitest;
  const samples = [];
  const sampler = setInterval(() => samples.push(os.loadavg()[0]), 10_000);
  const stop = (signal) => {
    process.stderr.write(`\nsuite-under-load: ${signal}: stopping the load and the suite\n`);
    clearInterval(sampler);
    stopAll(load, vitest);
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.stderr.write(
    `suite-under-load: ${options.busy} busy processes on ${os.availableParallelism()} cores (stopping by themselves within ${options.maxMinutes} min); vitest's JSON report: ${report}\n`,
  );
  const started = Date.now();
  let exitCode;
  try {
    // The configured reporters are replaced by those given here: the skip reporter is named
    // again so that a skip under CI=true still fails the run.
    vitest = spawn(
      process.execPath,
      [
        path.join(root, 'node_modules/vitest/vitest.mjs'),
        'run',
        '--reporter=default',
        '--reporter=./test/support/skip-reporter.ts',
        '--reporter=json',
        `--outputFile.json=${report}`,
        ...options.vitestArgs,
      ],
      { cwd: root, stdio: 'inherit', detached: true },
    );
    exitCode = await new Promise((resolve) => vitest.on('exit', (code, signal) => resolve(code ?? (signal === null ? 1 : 128 + os.constants.signals[signal]))));
  } finally {
    clearInterval(sampler);
    stopAll(load, vitest);
  }
  const elapsed = Date.now() - started;
  const lines = [`suite-under-load: vitest exited ${exitCode} after ${seconds(elapsed)} beside ${options.busy} busy processes`];
  if (samples.length > 0) {
    const mean = samples.reduce((sum, value) => sum + value, 0) / samples.length;
    lines.push(`load average (1 min) during the run: mean ${mean.toFixed(1)}, max ${Math.max(...samples).toFixed(1)}`);
  }
  let parsed;
  try {
    parsed = JSON.parse(readFileSync(report, 'utf8'));
  } catch (error) {
    lines.push(`no JSON report at ${report}: ${error.message}`);
  }
  if (parsed !== undefined) {
    const result = slowestTests(parsed, root, options.top);
    lines.push(`tests: ${result.total} total, ${result.passed} passed, ${result.failed} failed, ${result.skipped} skipped`);
    for (const failure of result.failures) lines.push(`FAILED ${seconds(failure.durationMs).padStart(9)}  ${failure.file} > ${failure.name}`);
    lines.push(`the ${result.slowest.length} slowest tests:`);
    for (const test of result.slowest) lines.push(`${seconds(test.durationMs).padStart(9)}  ${test.file} > ${test.name} (${test.status})`);
  }
  process.stdout.write(`${lines.join('\n')}\n`);
  return exitCode;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exitCode = await main();
