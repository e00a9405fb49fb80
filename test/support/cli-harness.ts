import { mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Writable } from 'node:stream';
import { stringify } from 'yaml';
import { main, type CliIo, type CliSeams } from '../../src/cli.js';
import type { RetrySettings } from '../../src/pipeline/source-session.js';
import { summarySchema } from '../../src/pipeline/summary-schema.js';
import type { Sandbox } from '../../sandbox/index.js';

/** A writable that keeps what was written, for asserting on output and logs. */
export class Capture extends Writable {
  text = '';
  override _write(chunk: Buffer, _encoding: BufferEncoding, done: () => void): void {
    this.text += chunk.toString('utf8');
    done();
  }
  lines(): Array<Record<string, unknown>> {
    return this.text
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  }
}

/** Fast retries for tests: the policy is the same, only the waits are short. */
export const FAST_RETRY: RetrySettings = { maxAttempts: 5, baseDelayMs: 5, maxDelayMs: 50, budget: 20 };

export interface Workspace {
  root: string;
  configFile: string;
  jobsDir: string;
  outDir: string;
}

/** Writes an environment config pointing at the sandbox and the given jobs into `root`. */
export async function writeWorkspace(
  root: string,
  sandbox: Sandbox,
  jobs: Array<Record<string, unknown>>,
  source: Record<string, unknown> = {},
): Promise<Workspace> {
  const jobsDir = path.join(root, 'jobs');
  const outDir = path.join(root, 'out');
  await mkdir(jobsDir, { recursive: true });
  const configFile = path.join(root, 'env.yaml');
  await writeFile(
    configFile,
    stringify({
      source: {
        baseUrl: sandbox.url,
        authUrl: sandbox.url,
        clientId: '${TEST_CLIENT_ID}',
        clientSecret: '${TEST_CLIENT_SECRET}',
        requestTimeoutMs: 2000,
        ...source,
      },
      sinks: { csv: { directory: outDir } },
    }),
  );
  for (const job of jobs) await writeFile(path.join(jobsDir, `${String(job.name)}.yaml`), stringify(job));
  return { root, configFile, jobsDir, outDir };
}

export interface CliResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  logs: Array<Record<string, unknown>>;
}

export async function runCli(args: string[], options: { env: Record<string, string>; io?: Partial<CliIo>; seams?: CliSeams }): Promise<CliResult> {
  const stdout = new Capture();
  const stderr = new Capture();
  const logs = new Capture();
  const exitCode = await main(
    args,
    {
      env: options.env,
      stdout,
      stderr,
      logDestination: logs,
      ...options.io,
    },
    { retry: FAST_RETRY, ...options.seams },
  );
  return { exitCode, stdout: stdout.text, stderr: stderr.text, logs: logs.lines() };
}

/** The code of the refusal the CLI printed (its `tilehouse: <code>:` line on stderr); undefined when it printed none. */
export function refusalCode(result: Pick<CliResult, 'stderr'>): string | undefined {
  return /^tilehouse: ([a-z0-9_]+):$/m.exec(result.stderr)?.[1];
}

type Summary = ReturnType<typeof summarySchema.parse>;

/** The summary a command printed with --json, checked against its schema and to be of `command` (a run's, a backfill's). */
export function summaryOf<C extends Summary['command']>(stdout: string, command: C): Extract<Summary, { command: C }> {
  const summary = summarySchema.parse(JSON.parse(stdout));
  if (summary.command !== command) throw new Error(`not a ${command} summary but a ${summary.command} one`);
  return summary as Extract<Summary, { command: C }>;
}

export function sandboxEnv(sandbox: Sandbox, secret = sandbox.clientSecret): Record<string, string> {
  return { TEST_CLIENT_ID: sandbox.clientId, TEST_CLIENT_SECRET: secret };
}

/** Every file below `dir`, relative, sorted; [] when it does not exist. */
export async function listFiles(dir: string): Promise<string[]> {
  try {
    const entries = await readdir(dir, { recursive: true, withFileTypes: true });
    return entries
      .filter((entry) => entry.isFile())
      .map((entry) => path.relative(dir, path.join(entry.parentPath, entry.name)))
      .sort();
  } catch {
    return [];
  }
}
