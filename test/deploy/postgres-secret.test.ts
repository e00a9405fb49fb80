/** `tilehouse k8s` for a job with a postgres sink: the password from the credentials Secret, never from the ConfigMap. */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import { loadEnvironment, loadJobs } from '../../src/config/load-config.js';
import { planManifests } from '../../src/deploy/plan-manifests.js';
import { tempDirEachTest } from '../support/temp-dir-hooks.js';

type Obj = Record<string, any>;

const SOURCE = {
  baseUrl: 'https://acme.incidents.example.com',
  authUrl: 'https://auth.incidents.example.com',
  clientId: '${TILEHOUSE_CLIENT_ID}',
  clientSecretFile: '/var/run/secrets/tilehouse/client-secret',
};
const QUERY = { items: [{ header: 'Type', formula: '[incident.type]', dataType: 'text', grouped: true, filters: [] }], options: {} };
const temp = tempDirEachTest();

async function podOf(postgres: Obj, sinks: Obj[] = [{ type: 'postgres' }]): Promise<Obj> {
  const jobsDir = path.join(temp.path, 'jobs');
  await mkdir(jobsDir, { recursive: true });
  await writeFile(path.join(jobsDir, 'daily.yaml'), stringify({ name: 'daily', tile: 't', schedule: { cron: '0 6 * * *' }, query: QUERY, sinks }));
  const configFile = path.join(temp.path, 'prod.yaml');
  await writeFile(configFile, stringify({ source: SOURCE, sinks: { postgres: { host: 'db.internal', database: 'wh', user: 'loader', ...postgres } } }));
  const plan = await planManifests({
    jobs: await loadJobs(jobsDir),
    environment: await loadEnvironment(configFile),
    configFile,
    outFile: path.join(temp.path, 'k8s', 'cronjobs.yaml'),
    command: 'tilehouse k8s --config prod.yaml',
  });
  const file = plan.files.find((candidate) => path.basename(candidate.file) === 'cronjobs.yaml')!;
  const cronJob = parseAllDocuments(file.text)
    .map((document) => document.toJS() as Obj | null)
    .find((object) => object?.kind === 'CronJob')!;
  return cronJob.spec.jobTemplate.spec.template.spec;
}

describe('tilehouse k8s with a postgres sink', () => {
  it('mounts passwordFile from the credentials Secret beside the client secret', async () => {
    const pod = await podOf({ passwordFile: '/var/run/secrets/tilehouse/postgres-password' });
    expect(pod.volumes.find((volume: Obj) => volume.name === 'credentials').secret.items).toEqual([
      { key: 'client-secret', path: 'client-secret' },
      { key: 'postgres-password', path: 'postgres-password' },
    ]);
  });

  it('gives a ${VAR} password the variable from the Secret, and nothing when no job writes PostgreSQL', async () => {
    const pod = await podOf({ password: '${PGPASSWORD_LOADER}' });
    expect(pod.containers[0].env).toContainEqual({
      name: 'PGPASSWORD_LOADER',
      valueFrom: { secretKeyRef: { name: 'tilehouse-credentials', key: 'postgres-password' } },
    });
    const csvOnly = await podOf({ password: '${PGPASSWORD_LOADER}' }, [{ type: 'csv' }]);
    expect(csvOnly.containers[0].env.map((entry: Obj) => entry.name)).not.toContain('PGPASSWORD_LOADER');
  });

  it('refuses a passwordFile outside the one Secret mount, naming the field', async () => {
    await expect(podOf({ passwordFile: '/etc/pg/password' })).rejects.toThrow(
      /sinks\.postgres\.passwordFile = "\/etc\/pg\/password": must be in the same directory as the other secret file \(\/var\/run\/secrets\/tilehouse\)/,
    );
  });
});
