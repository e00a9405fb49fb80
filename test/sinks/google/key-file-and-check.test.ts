// Issue 35: a deployment outside GKE (a service-account key file) and `check`, which says which
// identity each Google sink runs as, so the Workload Identity binding is seen working before the
// first night. Both against the emulator and fake-gcs-server behind bearer proxies.
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { startFakeMetadataServer, TEST_SERVICE_ACCOUNT, type FakeMetadataServer } from '../../support/fake-metadata-server.js';
import { makeServiceAccountKey, startFakeOAuthServer, writeKeyFile, type FakeOAuthServer } from '../../support/fake-oauth-server.js';
import { describeWithGoogleRig, googleRun, objectNames, tableNames, type GoogleRig } from '../../support/google-run-harness.js';

describeWithGoogleRig('Google credentials from a key file, and check', (rig: GoogleRig) => {
  let oauth: FakeOAuthServer | undefined;
  let metadata: FakeMetadataServer | undefined;
  afterEach(async () => {
    await oauth?.close();
    await metadata?.close();
    oauth = undefined;
    metadata = undefined;
  });

  it("runs with GOOGLE_APPLICATION_CREDENTIALS: every Google request carries the token the key file's token_uri issued", async () => {
    const key = makeServiceAccountKey();
    oauth = await startFakeOAuthServer({ book: rig.book, publicKey: key.publicKey, email: key.email });
    const file = path.join(rig.root, 'runner-key.json');
    await writeKeyFile(file, key, oauth.tokenUri);
    // A metadata server is there too, as on a GCE VM: the key file comes first in the ADC chain.
    metadata = await startFakeMetadataServer({ book: rig.book });
    const before = { bigquery: rig.bigquery.requests.length, gcs: rig.gcs.requests.length };
    const run = await googleRun(rig, 'key-file', { env: { GOOGLE_APPLICATION_CREDENTIALS: file, GCE_METADATA_HOST: metadata.host } });
    expect(run.exitCode, run.stderr).toBe(0);
    expect(await tableNames(rig, run.dataset)).toContain(run.table);
    expect(await objectNames(rig, run.bucket)).toContain('exports/incident_detail.csv');
    const sent = [...rig.bigquery.requests.slice(before.bigquery), ...rig.gcs.requests.slice(before.gcs)];
    expect(sent.length).toBeGreaterThan(5);
    expect(sent.filter((request) => request.verdict !== 'valid')).toEqual([]);
    const issuers = new Set(sent.map((request) => rig.book.issued.find((issued) => issued.token === request.token)?.issuer));
    expect([...issuers]).toEqual(['oauth']);
    expect(oauth.grants.length).toBeGreaterThan(0);
    expect(oauth.grants.every((grant) => grant.verified && grant.issuer === key.email)).toBe(true);
    expect(metadata.requests.filter((request) => request.path.endsWith('/token'))).toEqual([]);
  }, 90_000);

  it('check names the service account of each Google sink (Workload Identity)', async () => {
    metadata = await startFakeMetadataServer({ book: rig.book });
    const run = await googleRun(rig, 'check', { env: { GCE_METADATA_HOST: metadata.host }, command: ['check'] });
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.stdout).toContain(
      `bigquery dataset ${rig.projectId}.${run.dataset}: absent; a run creates it in US (as service account ${TEST_SERVICE_ACCOUNT})`,
    );
    expect(run.stdout).toContain(
      `gs://${run.bucket}/exports/: bucket found; permissions not tested (this endpoint has no IAM) (as service account ${TEST_SERVICE_ACCOUNT})`,
    );
  }, 90_000);

  it("check names the key file's service account", async () => {
    const key = makeServiceAccountKey('nightly-export@other-project.iam.gserviceaccount.com');
    oauth = await startFakeOAuthServer({ book: rig.book, publicKey: key.publicKey, email: key.email });
    const file = path.join(rig.root, 'check-key.json');
    await writeKeyFile(file, key, oauth.tokenUri);
    const run = await googleRun(rig, 'check-key', { env: { GOOGLE_APPLICATION_CREDENTIALS: file }, command: ['check'] });
    expect(run.exitCode, run.stderr).toBe(0);
    expect(run.stdout).toContain(`(as service account ${key.email})`);
    expect(run.stdout).not.toContain(TEST_SERVICE_ACCOUNT);
  }, 90_000);
});
