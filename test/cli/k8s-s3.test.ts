/** `tilehouse k8s` for a config that writes to S3: the service account it scaffolds carries IRSA's role annotation. */
import { cp, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeEach, expect, it } from 'vitest';
import { parse } from 'yaml';
import { runCli } from '../support/cli-harness.js';
import { tempDirEachTest } from '../support/temp-dir-hooks.js';

const temp = tempDirEachTest();
let jobsDir: string;
beforeEach(async () => {
  jobsDir = path.join(temp.path, 'jobs');
  await cp('jobs', jobsDir, { recursive: true });
});

async function serviceAccountFor(directory: string): Promise<{ text: string; annotations: Record<string, string>; stderr: string }> {
  const config = path.join(temp.path, `${directory.replace(/\W/g, '_')}.yaml`);
  await writeFile(config, (await readFile('config/production.example.yaml', 'utf8')).replace(/directory: gs:\/\/.*/, `directory: ${directory}`));
  const out = path.join(temp.path, directory.replace(/\W/g, '_'), 'cronjobs.yaml');
  const result = await runCli(['k8s', '--config', config, '--jobs', jobsDir, '--out', out], { env: {} });
  expect(result.exitCode, result.stderr).toBe(0);
  const text = await readFile(path.join(path.dirname(out), 'serviceaccount.yaml'), 'utf8');
  return { text, annotations: (parse(text) as { metadata: { annotations: Record<string, string> } }).metadata.annotations, stderr: result.stderr };
}

it('annotates the service account with an IRSA role when the CSV directory is an s3:// prefix, and not otherwise', async () => {
  const s3 = await serviceAccountFor('s3://acme-exports/tilehouse');
  expect(s3.annotations['eks.amazonaws.com/role-arn']).toBe('arn:aws:iam::ACCOUNT_ID:role/tilehouse');
  expect(s3.text).toContain('IRSA maps this account to an IAM role');
  // An object in a bucket needs no volume: no emptyDir warning.
  expect(s3.stderr).toBe('');
  const gcs = await serviceAccountFor('gs://acme-exports/tilehouse');
  expect(gcs.annotations['eks.amazonaws.com/role-arn']).toBeUndefined();
  expect(gcs.text).not.toContain('IRSA');
});
