// Issue 35: the credential faults of a two-sink run with Application Default Credentials from
// a (fake) GCE metadata server, Workload Identity's path on GKE, no emulator variables, both
// endpoints from the environment config, each behind a proxy that refuses a request without a
// token the metadata server issued. Every Google request must carry a valid token.
import { afterEach, expect, it } from 'vitest';
import { startFakeMetadataServer, TEST_SERVICE_ACCOUNT, type FakeMetadataServer } from '../../support/fake-metadata-server.js';
import { describeWithGoogleRig, googleRun, objectNames, tableNames, type GoogleRig } from '../../support/google-run-harness.js';

describeWithGoogleRig("Google refusing a two-sink run's identity or its permissions (Workload Identity, a fake metadata server)", (rig: GoogleRig) => {
  let metadata: FakeMetadataServer | undefined;
  afterEach(async () => {
    await metadata?.close();
    metadata = undefined;
    rig.bigquery.setFault(undefined);
    rig.gcs.setFault(undefined);
    rig.bigquery.setDelayMs(0);
    rig.gcs.setDelayMs(0);
  });

  function requestsSince(before: { bigquery: number; gcs: number }) {
    return [...rig.bigquery.requests.slice(before.bigquery), ...rig.gcs.requests.slice(before.gcs)];
  }
  const mark = () => ({ bigquery: rig.bigquery.requests.length, gcs: rig.gcs.requests.length });

  it('answers a 401 with a fresh token and one retry: the run succeeds', async () => {
    metadata = await startFakeMetadataServer({ book: rig.book });
    // Each service refuses the first token it sees (and only that one), as if it had been revoked there.
    for (const proxy of [rig.bigquery, rig.gcs]) {
      let refused: string | undefined;
      proxy.setFault(({ token }, response) => {
        refused ??= token;
        if (token !== refused) return false;
        response.writeHead(401, { 'content-type': 'application/json' });
        response.end(
          JSON.stringify({
            error: {
              code: 401,
              message: 'Request had invalid authentication credentials.',
              status: 'UNAUTHENTICATED',
              errors: [{ reason: 'authError', message: 'Invalid Credentials' }],
            },
          }),
        );
        return true;
      });
    }
    const before = mark();
    const run = await googleRun(rig, 'once-401', { env: { GCE_METADATA_HOST: metadata.host } });
    expect(run.exitCode, run.stderr).toBe(0);
    const sent = requestsSince(before);
    const refused = sent.filter((request) => request.status === 401);
    expect(refused.length).toBeGreaterThanOrEqual(2);
    // Every refused request was sent again, with another token, and answered.
    for (const request of refused) {
      expect(sent.some((again) => again.method === request.method && again.path === request.path && again.token !== request.token && again.status < 400)).toBe(
        true,
      );
    }
    expect(await objectNames(rig, run.bucket)).toContain('exports/incident_detail.csv');
    expect(await tableNames(rig, run.dataset)).toContain(run.table);
  }, 90_000);

  it('fails with google_credentials_rejected when Google refuses every token (401 again after a refresh)', async () => {
    metadata = await startFakeMetadataServer({ book: rig.book });
    for (const proxy of [rig.bigquery, rig.gcs]) {
      proxy.setFault((_request, response) => {
        response.writeHead(401, { 'content-type': 'application/json' });
        response.end(
          JSON.stringify({
            error: {
              code: 401,
              message: 'Request had invalid authentication credentials.',
              status: 'UNAUTHENTICATED',
              errors: [{ reason: 'authError', message: 'Invalid Credentials' }],
            },
          }),
        );
        return true;
      });
    }
    const run = await googleRun(rig, 'always-401', { env: { GCE_METADATA_HOST: metadata.host } });
    expect(run.exitCode, run.stderr).toBe(1);
    expect(run.summary?.tiles[0]).toMatchObject({ status: 'failed', error: { code: 'google_credentials_rejected' } });
    expect(run.summary?.tiles[0]!.error!.message).toMatch(/401.*twice/);
  }, 90_000);

  it('refuses a bucket the identity may not write before the first page, naming the permission and the service account', async () => {
    metadata = await startFakeMetadataServer({ book: rig.book });
    rig.gcs.setFault(({ path }, response) => {
      if (!path.includes('/iam/testPermissions')) return false;
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ kind: 'storage#testIamPermissionsResponse', permissions: ['storage.objects.list', 'storage.objects.get'] }));
      return true;
    });
    const exportsBefore = rig.sandbox.requests.filter((request) => request.endpoint === 'export').length;
    const run = await googleRun(rig, 'bucket-403', { env: { GCE_METADATA_HOST: metadata.host } });
    expect(run.exitCode, run.stderr).toBe(1);
    expect(run.summary?.tiles[0]).toMatchObject({ status: 'failed', error: { code: 'permission_denied', targetKind: 'gcs' } });
    expect(run.summary?.tiles[0]!.error!.message).toContain('storage.objects.create');
    expect(run.summary?.tiles[0]!.error!.message).toContain(`service account ${TEST_SERVICE_ACCOUNT}`);
    expect(rig.sandbox.requests.filter((request) => request.endpoint === 'export').length).toBe(exportsBefore);
  }, 90_000);

  it('refuses a dataset the identity may not read before the first page, naming the permission and the service account', async () => {
    metadata = await startFakeMetadataServer({ book: rig.book });
    rig.bigquery.setFault(({ method, path }, response) => {
      if (method !== 'GET' || !/\/datasets\/[^/]+$/.test(path.split('?')[0]!)) return false;
      response.writeHead(403, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({
          error: {
            code: 403,
            message: `Access Denied: Dataset: User does not have bigquery.datasets.get permission.`,
            status: 'PERMISSION_DENIED',
            errors: [{ reason: 'accessDenied', message: 'Access Denied' }],
          },
        }),
      );
      return true;
    });
    const exportsBefore = rig.sandbox.requests.filter((request) => request.endpoint === 'export').length;
    const run = await googleRun(rig, 'dataset-403', { env: { GCE_METADATA_HOST: metadata.host } });
    expect(run.exitCode, run.stderr).toBe(1);
    expect(run.summary?.tiles[0]).toMatchObject({ status: 'failed', error: { code: 'permission_denied', targetKind: 'bigquery' } });
    expect(run.summary?.tiles[0]!.error!.message).toContain('bigquery.datasets.get');
    expect(run.summary?.tiles[0]!.error!.message).toContain(`service account ${TEST_SERVICE_ACCOUNT}`);
    expect(rig.sandbox.requests.filter((request) => request.endpoint === 'export').length).toBe(exportsBefore);
  }, 90_000);

  it('fails a run whose token cannot be refreshed after the load started with google_credentials_unavailable, publishing nothing and naming what it could not remove', async () => {
    // Tokens that never outlive a request, so every request asks the metadata server, which
    // stops answering the moment the staging load is sent.
    metadata = await startFakeMetadataServer({ book: rig.book, tokenLifetimeSeconds: 1 });
    const server = metadata;
    rig.bigquery.setFault(({ method, path }) => {
      if (method === 'POST' && path.startsWith('/upload/bigquery/')) server.setUnavailable(true);
      return false;
    });
    const run = await googleRun(rig, 'lost-midway', {
      env: { GCE_METADATA_HOST: metadata.host },
      environment: { googleCredentialsWaitMs: 2_000, stopDeadlineMs: 5_000 },
    });
    expect(run.exitCode, run.stderr).toBe(1);
    expect(run.summary?.tiles[0]).toMatchObject({ status: 'failed', error: { code: 'google_credentials_unavailable' } });
    // Nothing published: no target table, no target object.
    expect(await tableNames(rig, run.dataset)).not.toContain(run.table);
    expect(await objectNames(rig, run.bucket)).not.toContain('exports/incident_detail.csv');
    // What the cleanup could not remove without credentials is named, as after any failure: the
    // staging table (it expires within a day) and the temp object the next run's sweep removes.
    const leftBehind = run.summary?.tiles[0]!.leftBehind ?? [];
    const staging = (await tableNames(rig, run.dataset)).filter((name) => name.startsWith('_tilehouse_staging_'));
    expect(staging.length).toBeGreaterThan(0);
    for (const table of staging) expect(leftBehind.join('\n')).toContain(table);
    const temps = (await objectNames(rig, run.bucket)).filter((name) => name.includes('.tilehouse-'));
    for (const object of temps) expect(leftBehind.join('\n')).toContain(object);
  }, 90_000);
});
