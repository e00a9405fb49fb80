import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import type { Sandbox } from '../../sandbox/index.js';
import { writeWorkspace, type Workspace } from './cli-harness.js';

export interface BigQueryWorkspace extends Workspace {
  /** `tempDirectory` of the environment: where the sink's load files go (and must not stay). */
  tempDir: string;
}

/**
 * `writeWorkspace` plus a `sinks.bigquery` section (project, dataset, location) and a temp
 * directory of its own, so a test can check that no load file is left behind.
 */
export async function writeBigQueryWorkspace(
  root: string,
  sandbox: Sandbox,
  jobs: Array<Record<string, unknown>>,
  bigquery: { projectId: string; dataset: string; location?: string },
  source: Record<string, unknown> = {},
): Promise<BigQueryWorkspace> {
  const workspace = await writeWorkspace(root, sandbox, jobs, source);
  const tempDir = path.join(root, 'tmp');
  const environment = parse(await readFile(workspace.configFile, 'utf8')) as { sinks: Record<string, unknown> } & Record<string, unknown>;
  environment.sinks.bigquery = { location: 'US', ...bigquery };
  environment.tempDirectory = tempDir;
  await writeFile(workspace.configFile, stringify(environment));
  return { ...workspace, tempDir };
}
