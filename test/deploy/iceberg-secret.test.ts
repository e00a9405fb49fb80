/** `tilehouse k8s` for a job with an iceberg sink: the REST token or the JDBC catalog's password from the credentials Secret. */
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

async function podOf(catalog: Obj, location = '/var/lib/tilehouse/warehouse'): Promise<Obj> {
  return (await planOf(catalog, location)).pod;
}

async function planOf(catalog: Obj, location: string): Promise<{ pod: Obj; warnings: string[]; serviceAccount: string }> {
  const jobsDir = path.join(temp.path, 'jobs');
  await mkdir(jobsDir, { recursive: true });
  const sinks = [{ type: 'iceberg', table: 'tiles.daily' }];
  await writeFile(path.join(jobsDir, 'daily.yaml'), stringify({ name: 'daily', tile: 't', schedule: { cron: '0 6 * * *' }, query: QUERY, sinks }));
  const configFile = path.join(temp.path, 'prod.yaml');
  await writeFile(configFile, stringify({ source: SOURCE, sinks: { iceberg: { catalog, location }, s3: { region: 'eu-west-1' } } }));
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
  const serviceAccount = plan.files.find((candidate) => path.basename(candidate.file) === 'serviceaccount.yaml')?.text ?? '';
  return { pod: cronJob.spec.jobTemplate.spec.template.spec, warnings: plan.warnings, serviceAccount };
}

const REST = { type: 'rest', uri: 'https://polaris.example.internal/api/catalog', token: '${ICEBERG_TOKEN}' };

describe('tilehouse k8s with an iceberg sink', () => {
  it("gives a ${VAR} REST token the variable from the Secret's iceberg-token key", async () => {
    const pod = await podOf({ type: 'rest', uri: 'https://polaris.example.internal/api/catalog', token: '${ICEBERG_TOKEN}' });
    expect(pod.containers[0].env).toContainEqual({
      name: 'ICEBERG_TOKEN',
      valueFrom: { secretKeyRef: { name: 'tilehouse-credentials', key: 'iceberg-token' } },
    });
  });

  it("mounts the JDBC catalog's passwordFile from the credentials Secret beside the client secret", async () => {
    const pod = await podOf({
      type: 'jdbc',
      catalogName: 'lake',
      host: 'db.internal',
      database: 'lake',
      user: 'loader',
      passwordFile: '/var/run/secrets/tilehouse/iceberg-catalog-password',
    });
    expect(pod.volumes.find((volume: Obj) => volume.name === 'credentials').secret.items).toEqual([
      { key: 'client-secret', path: 'client-secret' },
      { key: 'iceberg-catalog-password', path: 'iceberg-catalog-password' },
    ]);
  });

  for (const location of ['s3://lake-bucket/warehouse', 'gs://lake-bucket/warehouse']) {
    it(`mounts no volume for a warehouse at ${location} and warns of none`, async () => {
      const { pod, warnings, serviceAccount } = await planOf(REST, location);
      expect(pod.volumes.map((volume: Obj) => volume.name)).toEqual(['tmp', 'config', 'jobs', 'credentials']);
      expect(warnings.filter((warning) => /iceberg/i.test(warning))).toEqual([]);
      // An s3:// warehouse is written with the pod's IAM role (IRSA), as an s3:// file sink's objects are.
      if (location.startsWith('s3://')) expect(serviceAccount).toContain('eks.amazonaws.com/role-arn');
      else expect(serviceAccount).not.toContain('eks.amazonaws.com/role-arn');
    });
  }

  it('mounts an emptyDir at a local warehouse and warns that the tables go with the pod, naming the setting', async () => {
    const { pod, warnings } = await planOf(REST, 'file:///var/lib/tilehouse/warehouse');
    const output = pod.containers[0].volumeMounts.find((mount: Obj) => mount.mountPath === '/var/lib/tilehouse/warehouse');
    expect(output).toBeDefined();
    expect(pod.volumes.find((volume: Obj) => volume.name === output.name).emptyDir).toBeDefined();
    expect(warnings.filter((warning) => warning.includes('Iceberg'))).toEqual([
      'daily write Iceberg tables under /var/lib/tilehouse/warehouse (sinks.iceberg.location): in the pod that is an emptyDir, deleted with the pod, ' +
        'while the catalog keeps naming its files; set sinks.iceberg.location to gs://bucket/prefix or s3://bucket/prefix (or patch the volume to a PersistentVolumeClaim: k8s/README.md)',
    ]);
  });
});
