import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lineageSchema, type LineageConfig } from '../../src/config/lineage-schema.js';
import { postgresConnectionSchema } from '../../src/config/postgres-connection-schema.js';
import { LineageConfigError, lineageSettingsOf } from '../../src/lineage/lineage-settings.js';

const RUN = '01936f2b-4c5d-7e8f-9a0b-1c2d3e4f5a6b';
const ROOT = '01936f2b-0000-7000-8000-000000000001';
const URL_ONLY = { OPENLINEAGE_URL: 'http://127.0.0.1:5000' };

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'ol-settings-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true });
});

async function configFile(text: string): Promise<string> {
  const file = path.join(dir, `openlineage-${Math.random().toString(36).slice(2)}.yml`);
  await writeFile(file, text);
  return file;
}

describe('lineageSettingsOf', () => {
  it('is off with no transport anywhere, and with OPENLINEAGE_DISABLED=true whatever is set', async () => {
    expect(await lineageSettingsOf({}, undefined)).toBeUndefined();
    expect(await lineageSettingsOf({ ...URL_ONLY, OPENLINEAGE_DISABLED: 'true' }, undefined)).toBeUndefined();
    const section = lineageSchema.parse({ transport: { type: 'console' } });
    expect(await lineageSettingsOf({ OPENLINEAGE_DISABLED: 'TRUE' }, section)).toBeUndefined();
  });

  it('reads OPENLINEAGE_URL, _ENDPOINT and _API_KEY as the http transport, over the config file and the section', async () => {
    const file = await configFile('transport:\n  type: file\n  log_file_path: /tmp/x.jsonl\n');
    const section = lineageSchema.parse({ namespace: 'analytics', transport: { type: 'console' } });
    const settings = await lineageSettingsOf(
      { ...URL_ONLY, OPENLINEAGE_ENDPOINT: 'api/v2/lineage', OPENLINEAGE_API_KEY: 'k', OPENLINEAGE_CONFIG: file },
      section,
    );
    expect(settings).toMatchObject({
      namespace: 'analytics',
      transport: { type: 'http', url: 'http://127.0.0.1:5000', endpoint: 'api/v2/lineage', timeout: 5, auth: { type: 'api_key', apiKey: 'k' } },
    });
    expect((await lineageSettingsOf({ OPENLINEAGE_CONFIG: file }, section))?.transport).toEqual({ type: 'file', log_file_path: '/tmp/x.jsonl', append: true });
  });

  it('takes the namespace from OPENLINEAGE_NAMESPACE first, and single keys from OPENLINEAGE__TRANSPORT__*', async () => {
    const settings = await lineageSettingsOf(
      { ...URL_ONLY, OPENLINEAGE_NAMESPACE: 'prod', OPENLINEAGE__TRANSPORT__TIMEOUT: '2.5', OPENLINEAGE__TRANSPORT__COMPRESSION: 'gzip' },
      undefined,
    );
    expect(settings).toMatchObject({ namespace: 'prod', transport: { type: 'http', timeout: 2.5, compression: 'gzip' } });
  });

  it('names the variable and the field of a transport it cannot use', async () => {
    const error = await lineageSettingsOf({ OPENLINEAGE_URL: 'not a url' }, undefined).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(LineageConfigError);
    expect((error as LineageConfigError).code).toBe('lineage_config_invalid');
    expect((error as Error).message).toMatch(/^lineage: OPENLINEAGE_URL: url: /);
    const file = await configFile('transport:\n  type: kafka\n');
    await expect(lineageSettingsOf({ OPENLINEAGE_CONFIG: file }, undefined)).rejects.toThrow(/OPENLINEAGE_CONFIG .*openlineage-.*\.yml: transport: type: /);
  });

  it('refuses a user or password in the URL wherever it is given, pointing at OPENLINEAGE_API_KEY, without showing them', async () => {
    const file = await configFile('transport:\n  type: http\n  url: http://svc-user:file%40secret@marquez:5000\n');
    // The section's schema refuses it already (test/cli/validate-lineage.test.ts); the settings refuse it again.
    const raw = { transport: { type: 'http', url: 'http://svc-user:section-secret@marquez:5000' } };
    expect(lineageSchema.safeParse(raw).success).toBe(false);
    const section = { namespace: 'tilehouse', disabled: false, transport: { ...raw.transport, endpoint: 'api/v1/lineage', timeout: 5 } } as LineageConfig;
    const sources: Array<[string, NodeJS.ProcessEnv, typeof section | undefined, string]> = [
      ['OPENLINEAGE_URL', { OPENLINEAGE_URL: 'http://svc-user:env-secret@marquez:5000' }, undefined, 'env-secret'],
      ['OPENLINEAGE_URL', { OPENLINEAGE_URL: 'http://only-a-user@marquez:5000' }, undefined, 'only-a-user'],
      [
        'OPENLINEAGE__TRANSPORT__URL',
        { OPENLINEAGE__TRANSPORT__TYPE: 'http', OPENLINEAGE__TRANSPORT__URL: 'https://u:nested-secret@marquez' },
        undefined,
        'nested-secret',
      ],
      ['OPENLINEAGE_CONFIG', { OPENLINEAGE_CONFIG: file }, undefined, 'file@secret'],
      ['lineage.transport of the environment file', {}, section, 'section-secret'],
    ];
    for (const [where, env, given, secret] of sources) {
      const error = await lineageSettingsOf(env, given).catch((caught: unknown) => caught);
      expect(error, where).toBeInstanceOf(LineageConfigError);
      const message = (error as Error).message;
      expect(message).toContain(`lineage: ${where}`);
      expect(message).toContain('OPENLINEAGE_API_KEY');
      expect(message).not.toContain(secret);
      expect(message).not.toContain(encodeURIComponent(secret));
      expect(message).not.toContain('svc-user');
    }
    // A URL without them is taken as it is.
    expect((await lineageSettingsOf(URL_ONLY, undefined))?.transport).toMatchObject({ type: 'http', url: 'http://127.0.0.1:5000' });
  });

  it("reads the parent from OPENLINEAGE_PARENT_ID, a job name with '/' included, the root being the parent when none is given", async () => {
    const settings = await lineageSettingsOf({ ...URL_ONLY, OPENLINEAGE_PARENT_ID: `airflow/team/nightly.export/${RUN}` }, undefined);
    const parent = { namespace: 'airflow', name: 'team/nightly.export', runId: RUN };
    expect(settings?.parent).toEqual({ run: parent, root: parent });
  });

  it("reads the parent and its root from Airflow's three-variable form", async () => {
    const settings = await lineageSettingsOf(
      {
        ...URL_ONLY,
        OPENLINEAGE_PARENT_RUN_ID: RUN,
        OPENLINEAGE_PARENT_JOB_NAMESPACE: 'airflow',
        OPENLINEAGE_PARENT_JOB_NAME: 'nightly.export',
        OPENLINEAGE_ROOT_PARENT_RUN_ID: ROOT,
        OPENLINEAGE_ROOT_PARENT_JOB_NAMESPACE: 'airflow',
        OPENLINEAGE_ROOT_PARENT_JOB_NAME: 'nightly',
      },
      undefined,
    );
    expect(settings?.parent).toEqual({
      run: { namespace: 'airflow', name: 'nightly.export', runId: RUN },
      root: { namespace: 'airflow', name: 'nightly', runId: ROOT },
    });
  });

  it('refuses a parent that is not namespace/job/runId with a UUID', async () => {
    await expect(lineageSettingsOf({ ...URL_ONLY, OPENLINEAGE_PARENT_ID: 'airflow/nightly' }, undefined)).rejects.toThrow(
      'lineage: OPENLINEAGE_PARENT_ID: "airflow/nightly" is not namespace/job/runId',
    );
    await expect(lineageSettingsOf({ ...URL_ONLY, OPENLINEAGE_PARENT_ID: 'airflow/nightly/run-7' }, undefined)).rejects.toThrow(
      'the run id "run-7" is not a UUID',
    );
  });
});

describe("the environment file's lineage section", () => {
  it('refuses an API key written in it, without echoing it', () => {
    const parsed = lineageSchema.safeParse({ transport: { type: 'http', url: 'http://m:5000', auth: { type: 'api_key', apiKey: 'literal-key' } } });
    expect(parsed.success).toBe(false);
    expect(JSON.stringify(parsed.error?.issues)).toContain('OPENLINEAGE_API_KEY');
    expect(JSON.stringify(parsed.error?.issues)).not.toContain('literal-key');
  });
});

describe('sinks.postgres.lineageNamespace', () => {
  const connection = { host: 'pgbouncer', database: 'app', user: 'loader', password: '${PG_PASSWORD}' };

  it('takes the server as postgres://host:port, lower-cased as a URL writes it', () => {
    expect(postgresConnectionSchema.parse({ ...connection, lineageNamespace: 'postgres://DB.internal:5432', lineageDatabase: 'warehouse' })).toMatchObject({
      lineageNamespace: 'postgres://db.internal:5432',
      lineageDatabase: 'warehouse',
    });
  });

  it.each([
    ['postgresql://db.internal:5432', /must start with postgres:\/\//],
    ['postgres://db.internal', /names no port/],
    ['postgres://db.internal:5432/warehouse', /host:port only/],
    ['postgres://db.internal:5432?sslmode=require', /host:port only/],
    ['db.internal:5432', /must start with postgres:\/\/|must be postgres:\/\/host:port/],
    ['postgres://admin:hunter2@db.internal:5432', /must not carry a user or password/],
  ])('refuses %s', (value, message) => {
    const parsed = postgresConnectionSchema.safeParse({ ...connection, lineageNamespace: value });
    expect(parsed.success).toBe(false);
    const issue = parsed.error?.issues.find((candidate) => candidate.path[0] === 'lineageNamespace');
    expect(issue?.message).toMatch(message);
    expect(issue?.message).not.toContain('hunter2');
  });
});
