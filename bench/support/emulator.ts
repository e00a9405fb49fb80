import { join } from 'node:path';
import { findEmulatorBinary, startEmulator } from '../../test/support/bigquery-emulator-process.js';
import { startEmulatorWithCopyJobs } from '../../test/support/bigquery-fake-server.js';
import { repoRoot } from './repo-root.js';

/** Where scenario (d) sends its BigQuery calls: the emulator behind the tests' copy-job proxy. */
export interface RunningEmulator {
  apiEndpoint: string;
  projectId: string;
  stop(): Promise<void>;
}

/**
 * The BigQuery emulator the tests use, or undefined when it is not installed, behind the same
 * copy-job proxy as the tests (`startEmulatorWithCopyJobs`): the sink publishes with a copy job,
 * which the emulator lacks. The proxy runs in the bench process, so its CPU is not (d)'s.
 */
export async function startEmulatorIfInstalled(): Promise<RunningEmulator | undefined> {
  // The project-local install is found from the repository root: compiled, this file is not where
  // the test support module expects to be.
  const binary = await findEmulatorBinary(process.env, join(repoRoot(), '.tools/bin/bigquery-emulator'));
  if (binary === undefined) return undefined;
  const emulator = await startEmulator(binary);
  try {
    const proxy = await startEmulatorWithCopyJobs(emulator);
    return {
      ...proxy.endpoint,
      stop: async () => {
        await proxy.close();
        await emulator.stop();
      },
    };
  } catch (error) {
    await emulator.stop();
    throw error;
  }
}

async function call(url: string, init: RequestInit): Promise<unknown> {
  const response = await fetch(url, { ...init, headers: { 'content-type': 'application/json' } });
  const text = await response.text();
  if (!response.ok) throw new Error(`emulator ${init.method ?? 'GET'} ${url}: HTTP ${response.status}: ${text.slice(0, 300)}`);
  return text === '' ? undefined : JSON.parse(text);
}

/** Rows the table holds, asked of the emulator itself (the load's own count is not trusted). */
export async function countRows(emulator: RunningEmulator, dataset: string, table: string): Promise<number> {
  const answer = (await call(`${emulator.apiEndpoint}/bigquery/v2/projects/${emulator.projectId}/queries`, {
    method: 'POST',
    body: JSON.stringify({ query: `SELECT COUNT(*) AS n FROM \`${emulator.projectId}.${dataset}.${table}\``, useLegacySql: false }),
  })) as { rows?: Array<{ f: Array<{ v: string }> }> };
  return Number(answer.rows?.[0]?.f[0]?.v ?? Number.NaN);
}

/** Drops a run's dataset, so the emulator's memory does not grow over the bench. */
export async function dropDataset(emulator: RunningEmulator, dataset: string): Promise<void> {
  await call(`${emulator.apiEndpoint}/bigquery/v2/projects/${emulator.projectId}/datasets/${dataset}?deleteContents=true`, { method: 'DELETE' });
}
