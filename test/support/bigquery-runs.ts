import type { BigQuery } from '@google-cloud/bigquery';
import { afterAll, beforeAll } from 'vitest';
import type { Sandbox, SandboxOptions } from '../../sandbox/index.js';
import type { EmulatorEndpoint } from './bigquery-emulator.js';
import { startEmulatorWithCopyJobs, type EmulatorWithCopyJobs } from './bigquery-fake-server.js';
import type { BigQueryWorkspace } from './bigquery-workspace.js';
import { runCli, sandboxEnv, type CliResult } from './cli-harness.js';
import { sandboxAndRootForAll, withSandboxAndRoot, type SandboxAndRoot } from './sandbox-fixture.js';

export interface CopyJobProxyForAll {
  /** The emulator behind the copy-job proxy (the emulator has no copy jobs, a publish needs them). */
  readonly proxy: EmulatorWithCopyJobs;
  /** A client through the proxy: the one the runs use, and the tests read tables with. */
  readonly client: BigQuery;
}

/** The copy-job proxy in front of a describeWithEmulator block's emulator, started in beforeAll and closed in afterAll. */
export function copyJobProxyForAll(endpoint: EmulatorEndpoint): CopyJobProxyForAll {
  let proxy: EmulatorWithCopyJobs | undefined;
  let client: BigQuery | undefined;
  beforeAll(async () => {
    proxy = await startEmulatorWithCopyJobs(endpoint);
    client = proxy.client();
  });
  afterAll(async () => {
    await proxy?.close();
  });
  const started = (): { proxy: EmulatorWithCopyJobs; client: BigQuery } => {
    if (proxy === undefined || client === undefined) throw new Error('the copy-job proxy is started in beforeAll: read it from a hook or a test');
    return { proxy, client };
  };
  return {
    get proxy() {
      return started().proxy;
    },
    get client() {
      return started().client;
    },
  };
}

/** `tilehouse run` of a workspace in-process against `sandbox`, its BigQuery sinks on `client`, with `flags` after. */
export function runOnBigQuery(workspace: BigQueryWorkspace, sandbox: Sandbox, client: BigQuery, flags: readonly string[] = []): Promise<CliResult> {
  return runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir, ...flags], {
    env: sandboxEnv(sandbox),
    seams: { sinkOptions: { bigqueryClient: client } },
  });
}

export interface BigQueryRunsForAll extends SandboxAndRoot, CopyJobProxyForAll {
  /** runOnBigQuery against the block's sandbox and through its proxy. */
  run(workspace: BigQueryWorkspace, flags?: readonly string[]): Promise<CliResult>;
}

/**
 * What the CLI tests of a BigQuery run share, for a describeWithEmulator body: sandboxAndRootForAll
 * and copyJobProxyForAll, started in beforeAll (before the caller's own hooks registered after this
 * call) and closed in afterAll.
 */
export function bigQueryRunsForAll(endpoint: EmulatorEndpoint, options: SandboxOptions): BigQueryRunsForAll {
  const fixture = sandboxAndRootForAll(options);
  const bigquery = copyJobProxyForAll(endpoint);
  return withSandboxAndRoot<Omit<BigQueryRunsForAll, keyof SandboxAndRoot>>(fixture, {
    get proxy() {
      return bigquery.proxy;
    },
    get client() {
      return bigquery.client;
    },
    run: (workspace, flags = []) => runOnBigQuery(workspace, fixture.sandbox, bigquery.client, flags),
  });
}
