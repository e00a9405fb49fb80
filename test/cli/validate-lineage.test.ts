import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { runCli } from '../support/cli-harness.js';
import { detailCsvJob } from '../support/queries.js';
import { offlineEnvironmentText } from '../support/config-files.js';
import { tempDirEachTest } from '../support/temp-dir-hooks.js';

// `tilehouse validate` checks the OpenLineage settings as a run reads them: the environment
// file's lineage: section by its schema (file:line), the OPENLINEAGE_* variables and the
// OPENLINEAGE_CONFIG file as lineage_config_invalid would refuse them.
const ENV = { TEST_CLIENT_ID: 'validate-client', TEST_CLIENT_SECRET: 'validate-secret-3141' };
const temp = tempDirEachTest();
let configFile: string;
let jobsDir: string;

async function writeEnvironment(lineage: string[]): Promise<void> {
  await writeFile(configFile, offlineEnvironmentText(path.join(temp.path, 'out'), lineage));
}

beforeEach(async () => {
  configFile = path.join(temp.path, 'env.yaml');
  jobsDir = path.join(temp.path, 'jobs');
  await mkdir(jobsDir);
  await writeFile(path.join(jobsDir, 'incident_detail.yaml'), stringify(detailCsvJob));
});

function validate(env: Record<string, string> = {}) {
  return runCli(['validate', '--config', configFile, '--jobs', jobsDir], { env: { ...ENV, ...env } });
}

describe('tilehouse validate and lineage', () => {
  it("passes a lineage: section with Google's Data Lineage as its transport", async () => {
    await writeEnvironment([
      'lineage:',
      '  namespace: analytics',
      '  transport:',
      '    type: gcplineage',
      '    project_id: acme-prod',
      '    location: europe-west3',
    ]);
    const result = await validate();
    expect(result.stderr).toBe('');
    expect(result.exitCode).toBe(0);
  });

  it.each([
    ['refuses an API key written in the lineage: section, naming its line and field', 'http', /env\.yaml:\d+: lineage\.transport\.auth.*OPENLINEAGE_API_KEY/],
    ['refuses a transport it cannot read, which may hold a key', 'htp', /env\.yaml:\d+: lineage\.transport\.type = "htp": /],
  ])('%s, without printing the key', async (_name, type, refusal) => {
    const key = `literal-key-${type}`;
    await writeEnvironment([
      'lineage:',
      '  transport:',
      `    type: ${type}`,
      '    url: http://marquez:5000',
      '    auth:',
      '      type: api_key',
      `      apiKey: ${key}`,
    ]);
    const result = await validate();
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(refusal);
    expect(result.stderr).not.toContain(key);
  });

  it('refuses a user or password in the lineage: section url, naming its line and OPENLINEAGE_API_KEY, without printing them', async () => {
    await writeEnvironment(['lineage:', '  transport:', '    type: http', '    url: http://svc-writer:section-pass-5150@marquez:5000']);
    const result = await validate();
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toMatch(/env\.yaml:\d+: lineage\.transport\.url.*a user or password in the URL is refused.*OPENLINEAGE_API_KEY/);
    for (const line of [...result.stdout.split('\n'), ...result.stderr.split('\n')]) {
      expect(line).not.toContain('section-pass-5150');
      expect(line).not.toContain('svc-writer');
    }
  });

  it('refuses OPENLINEAGE_* variables a run would refuse, naming the variable', async () => {
    await writeEnvironment([]);
    const result = await validate({ OPENLINEAGE_URL: 'http://127.0.0.1:5000', OPENLINEAGE_PARENT_ID: 'airflow/nightly' });
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain('lineage: OPENLINEAGE_PARENT_ID: "airflow/nightly" is not namespace/job/runId');
  });
});
