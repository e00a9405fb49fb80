import { readFile } from 'node:fs/promises';
import { expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { k8sToolOrSkip, printedBackfillJob, runTool } from './k8s-tools.js';
import { describeUnless, missing } from '../support/skip.js';

/**
 * Every manifest tilehouse ships or prints, decoded strictly into the Kubernetes API's Go types
 * (k8s.io/api, scripts/k8s-decode, built by scripts/install-k8s-decode.sh): a misspelled or unknown
 * field, or a value of the wrong type, fails here as the API server's strict validation would.
 * Skipped when the decoder is not built, outside CI; under CI its absence fails.
 */
const decoder = k8sToolOrSkip('k8s-decode', 'K8S_DECODE_BIN');

const decode = (text: string) => runTool(decoder!, [], { input: text });

describeUnless(missing('k8s-decode', decoder))('manifests decoded strictly into the Kubernetes API types (k8s-decode)', () => {
  it.each([
    'examples/k8s-demo/cronjobs.yaml',
    'examples/k8s-demo/backfill-job.yaml',
    'examples/k8s-demo/namespace.yaml',
    'examples/k8s-demo/serviceaccount.yaml',
    'k8s/secret.example.yaml',
  ])('%s', async (file) => {
    const text = await readFile(file, 'utf8');
    const result = decode(text);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    // One line per object decoded, `apiVersion kind name`: every document of the file, none dropped.
    const objects = parseAllDocuments(text)
      .map((document) => document.toJS() as { apiVersion: string; kind: string; metadata: { name?: string; generateName?: string } } | null)
      .filter((object) => object !== null);
    expect(objects.length).toBeGreaterThan(0);
    // A Job made from a template has a generateName instead of a name: the decoder names it by that.
    const named = objects.map((object) => `${object.apiVersion} ${object.kind} ${object.metadata.name ?? object.metadata.generateName}\n`);
    expect(result.stdout).toBe(named.join(''));
  });

  it('the Indexed Job that tilehouse k8s --backfill prints', async () => {
    const result = decode(await printedBackfillJob());
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(/^batch\/v1 Job tilehouse-backfill-daily-incidents-by-se-\n$/);
  });

  it('refuses a misspelled field and a value of the wrong type (the check can fail)', async () => {
    const job = await readFile('examples/k8s-demo/backfill-job.yaml', 'utf8');
    const misspelled = decode(job.replace('ttlSecondsAfterFinished:', 'ttlSecondAfterFinished:'));
    expect(misspelled.status).toBe(1);
    expect(misspelled.stderr).toMatch(/unknown field "ttlSecondAfterFinished"/);
    const wrongType = decode(job.replace('backoffLimit: 2', 'backoffLimit: two'));
    expect(wrongType.status).toBe(1);
  });
});
