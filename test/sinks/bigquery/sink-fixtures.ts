import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BigQuery } from '@google-cloud/bigquery';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll } from 'vitest';
import type { BigQuerySinkConfig } from '../../../src/config/job-schema.js';
import { BigQuerySink } from '../../../src/sinks/bigquery/bigquery-sink.js';
import type { JobPolling } from '../../../src/sinks/bigquery/run-job.js';
import type { SinkResult, SinkRunContext, SinkWriter } from '../../../src/sinks/sink.js';
import type { Column, TypedRow } from '../../../src/transform/column.js';
import { uniqueDatasetId, type EmulatorEndpoint } from '../../support/bigquery-emulator.js';
import {
  startEmulatorWithCopyJobs,
  startFakeBigQuery,
  type EmulatorWithCopyJobs,
  type FakeBigQuery,
  type FakeRoutes,
} from '../../support/bigquery-fake-server.js';

export const silentLogger = pino({ level: 'silent' });

// Shared with the postgres sink's tests.
import { prepareSink, runContext } from '../../support/sink-run-context.js';
export { column, runContext } from '../../support/sink-run-context.js';

// Retries and polling in milliseconds instead of seconds: the behaviour is the same, the suite fast.
export const FAST = {
  retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 2 },
  polling: { initialIntervalMs: 1, maxIntervalMs: 2, jobAttempts: 3, maxWaitMs: 10_000 },
} as const;

export interface SinkHarness {
  tempDirectory: string;
  sink(config: Partial<BigQuerySinkConfig>, options?: { timezone?: string; polling?: JobPolling }): BigQuerySink;
  /** Opens a writer, writes the pages, prepares, publishes; aborts on failure as the pipeline does. */
  run(sink: BigQuerySink, context: SinkRunContext, pages: readonly (readonly TypedRow[])[]): Promise<SinkResult>;
  /** One run per rows given, in turn, each one page and its own run id (`<runId>-1`, `-2`, …): a table over consecutive runs. */
  runInTurn(sink: BigQuerySink, context: { columns: readonly Column[]; runId: string }, ...runs: ReadonlyArray<readonly TypedRow[]>): Promise<SinkResult[]>;
  /** Opens a writer, writes the pages, prepares; aborts on failure. The caller publishes or aborts. */
  prepare(sink: BigQuerySink, context: SinkRunContext, pages: readonly (readonly TypedRow[])[]): Promise<SinkWriter>;
  /** Files left in the temp directory. */
  leftovers(): Promise<string[]>;
  cleanup(): Promise<void>;
}

export async function sinkHarness(client: BigQuery, dataset: string): Promise<SinkHarness> {
  const tempDirectory = await mkdtemp(join(tmpdir(), 'tilehouse-bq-test-'));
  const run: SinkHarness['run'] = async (sink, context, pages) => {
    const writer = await sink.open(context);
    try {
      for (const page of pages) await writer.writeRows(page);
      await writer.prepare();
      return await writer.publish();
    } catch (error) {
      await writer.abort();
      throw error;
    }
  };
  return {
    tempDirectory,
    sink: (config, options = {}) =>
      new BigQuerySink({
        config: { type: 'bigquery', writeMode: 'replace', schema: 'freeze', ...config },
        defaults: { dataset, location: 'US' },
        client,
        tempDirectory,
        ...(options.timezone ? { timezone: options.timezone } : {}),
        ...FAST,
        ...(options.polling ? { polling: options.polling } : {}),
      }),
    run,
    runInTurn: async (sink, { columns, runId }, ...runs) => {
      const results: SinkResult[] = [];
      for (const [index, rows] of runs.entries()) results.push(await run(sink, runContext({ columns, runId: `${runId}-${index + 1}` }), [rows]));
      return results;
    },
    prepare: prepareSink,
    leftovers: () => readdir(tempDirectory),
    cleanup: () => rm(tempDirectory, { recursive: true, force: true }),
  };
}

/** The emulator behind the copy-job proxy, a client, a fresh dataset and a sink harness on it. */
export interface EmulatorSinkSetup {
  readonly emulator: EmulatorWithCopyJobs;
  readonly client: BigQuery;
  readonly dataset: string;
  readonly harness: SinkHarness;
}

/**
 * For the enclosing describe block of an emulator test: the setup is ready in beforeAll and gone
 * in afterAll (read its fields in hooks and tests, not at collection). The publish step's copy
 * jobs go through the proxy, since the emulator has none.
 */
export function useEmulatorSinkSetup(endpoint: EmulatorEndpoint, datasetPrefix?: string): EmulatorSinkSetup {
  let setup: EmulatorSinkSetup | undefined;
  beforeAll(async () => {
    const emulator = await startEmulatorWithCopyJobs(endpoint);
    const client = emulator.client();
    const dataset = uniqueDatasetId(datasetPrefix);
    setup = { emulator, client, dataset, harness: await sinkHarness(client, dataset) };
  });
  afterAll(async () => {
    await setup?.harness.cleanup();
    await setup?.emulator.close();
  });
  const ready = (): EmulatorSinkSetup => {
    if (setup === undefined) throw new Error('the emulator setup is read before its beforeAll ran');
    return setup;
  };
  return {
    get emulator() {
      return ready().emulator;
    },
    get client() {
      return ready().client;
    },
    get dataset() {
      return ready().dataset;
    },
    get harness() {
      return ready().harness;
    },
  };
}

/**
 * For a file of request-shape tests against the scripted fake REST API: `setUp(routes)` starts a
 * fake with those routes and a sink harness on it (through `clientFor`'s client when given); both
 * are closed after each test.
 */
export function useFakeSinkSetup(): (
  routes: FakeRoutes,
  clientFor?: (fake: FakeBigQuery) => BigQuery,
) => Promise<{ fake: FakeBigQuery; harness: SinkHarness }> {
  let fake: FakeBigQuery | undefined;
  let harness: SinkHarness | undefined;
  afterEach(async () => {
    await harness?.cleanup();
    await fake?.close();
    harness = undefined;
    fake = undefined;
  });
  return async (routes, clientFor) => {
    fake = await startFakeBigQuery(routes);
    harness = await sinkHarness(clientFor?.(fake) ?? fake.client(), 'ops');
    return { fake, harness };
  };
}
