import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/config-error.js';
import { environmentSchema } from '../../src/config/environment-schema.js';
import { jobSchema } from '../../src/config/job-schema.js';
import type { LoadedJob } from '../../src/config/load-config.js';
import type { Workspace } from '../../src/workspace/load-workspace.js';
import { validateWorkspace } from '../../src/workspace/workspace-checks.js';
import { detailQuery } from '../support/queries.js';
import { tempDirEachTest } from '../support/temp-dir-hooks.js';

const temp = tempDirEachTest();
beforeEach(async () => {
  await mkdir(path.join(temp.path, 'out'));
});

function workspaceOf(jobs: Array<{ name: string; sinks: unknown[] }>): Workspace {
  const environment = environmentSchema.parse({
    source: { baseUrl: 'http://127.0.0.1:1', authUrl: 'http://127.0.0.1:1', clientId: '${TH_TEST_CLIENT_ID}', clientSecret: '${TH_TEST_CLIENT_SECRET}' },
    sinks: { csv: { directory: path.join(temp.path, 'out') } },
  });
  const loaded = jobs.map(
    (job): LoadedJob => ({
      ...jobSchema.parse({ tile: `tile-${job.name}`, query: detailQuery, ...job }),
      file: path.join(temp.path, 'jobs', `${job.name}.yaml`),
      timezone: 'UTC',
    }),
  );
  return { environment, configFile: path.join(temp.path, 'config.yaml'), jobs: loaded, jobsDirectory: path.join(temp.path, 'jobs') };
}

describe('validateWorkspace (what validate decides without the network)', () => {
  it('reports the secrets it cannot check here, and never needs their values', async () => {
    const findings = await validateWorkspace(workspaceOf([{ name: 'daily', sinks: [{ type: 'csv' }] }]), { TH_TEST_CLIENT_ID: 'id' });
    expect(findings.unchecked.map((problem) => problem.field)).toEqual(['source.clientSecret']);
    expect(findings.errors).toEqual([]);
    const all = await validateWorkspace(workspaceOf([{ name: 'daily', sinks: [{ type: 'csv' }] }]), { TH_TEST_CLIENT_ID: 'id', TH_TEST_CLIENT_SECRET: 's' });
    expect(all.unchecked).toEqual([]);
  });

  it("builds every job's sinks: one that cannot be built is a configuration error naming its job file and field", async () => {
    const workspace = workspaceOf([
      { name: 'fine', sinks: [{ type: 'csv' }] },
      { name: 'broken', sinks: [{ type: 'csv', path: 'gs://Not_A_Bucket/{date}.csv' }] },
    ]);
    const error = await validateWorkspace(workspace, {}).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConfigError);
    expect(error).toMatchObject({ code: 'config_invalid' });
    expect((error as ConfigError).problems).toMatchObject([{ file: path.join(temp.path, 'jobs', 'broken.yaml'), field: 'sinks[0].path' }]);
  });

  it('finds two jobs writing one file, and accepts one job writing two files', async () => {
    const clash = await validateWorkspace(
      workspaceOf([
        { name: 'a', sinks: [{ type: 'csv', path: 'same.csv' }] },
        { name: 'b', sinks: [{ type: 'csv', path: 'same.csv' }] },
      ]),
      {},
    );
    expect(clash.errors.map((problem) => problem.message)).toEqual([expect.stringContaining('is also written by job a')]);
    const two = await validateWorkspace(
      workspaceOf([
        {
          name: 'a',
          sinks: [
            { type: 'csv', path: 'one.csv' },
            { type: 'csv', path: 'two.csv' },
          ],
        },
      ]),
      {},
    );
    expect(two.errors).toEqual([]);
  });
});
