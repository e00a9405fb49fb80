// Issue 35: the credential faults of a two-sink run with Application Default Credentials from
// a (fake) GCE metadata server, Workload Identity's path on GKE, no emulator variables, both
// endpoints from the environment config, each behind a proxy that refuses a request without a
// token the metadata server issued. Every Google request must carry a valid token.
import type { ServerResponse } from 'node:http';
import { expect, it } from 'vitest';
import { TEST_SERVICE_ACCOUNT } from '../../support/fake-metadata-server.js';
import { describeWithGoogleRig, metadataServerEachTest, objectNames, tableNames, type GoogleRig } from '../../support/google-run-harness.js';

describeWithGoogleRig("Google refusing a two-sink run's identity or its permissions (Workload Identity, a fake metadata server)", (rig: GoogleRig) => {
  const google = metadataServerEachTest(rig);
  const exports = () => rig.sandbox.requests.filter((request) => request.endpoint === 'export').length;

  /** A run refused with permission_denied at `targetKind` before it asked for a page, naming the permission and the service account. */
  async function expectRefusedBeforeFirstPage(name: string, targetKind: 'gcs' | 'bigquery', permission: string): Promise<void> {
    const exportsBefore = exports();
    const run = await google.run(name);
    expect(run.exitCode, run.stderr).toBe(1);
    expect(run.summary?.tiles[0]).toMatchObject({ status: 'failed', error: { code: 'permission_denied', targetKind } });
    expect(run.summary?.tiles[0]!.error!.message).toContain(permission);
    expect(run.summary?.tiles[0]!.error!.message).toContain(`service account ${TEST_SERVICE_ACCOUNT}`);
    expect(exports()).toBe(exportsBefore);
  }

  it('answers a 401 with a fresh token and one retry: the run succeeds', async () => {
    await google.start();
    // Each service refuses the first token it sees (and only that one), as if it had been revoked there.
    for (const proxy of [rig.bigquery, rig.gcs]) {
      let refused: string | undefined;
      proxy.setFault(({ token }, response) => {
        refused ??= token;
        if (token !== refused) return false;
        return answerGoogleError(response, 401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials.', {
          reason: 'authError',
          message: 'Invalid Credentials',
        });
      });
    }
    const before = google.mark();
    const run = await google.run('once-401');
    expect(run.exitCode, run.stderr).toBe(0);
    const sent = google.requestsSince(before);
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
    await google.start();
    for (const proxy of [rig.bigquery, rig.gcs]) {
      proxy.setFault((_request, response) => {
        return answerGoogleError(response, 401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials.', {
          reason: 'authError',
          message: 'Invalid Credentials',
        });
      });
    }
    const run = await google.run('always-401');
    expect(run.exitCode, run.stderr).toBe(1);
    expect(run.summary?.tiles[0]).toMatchObject({ status: 'failed', error: { code: 'google_credentials_rejected' } });
    expect(run.summary?.tiles[0]!.error!.message).toMatch(/401.*twice/);
  }, 90_000);

  it('refuses a bucket the identity may not write before the first page, naming the permission and the service account', async () => {
    await google.start();
    rig.gcs.setFault(({ path }, response) => {
      if (!path.includes('/iam/testPermissions')) return false;
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ kind: 'storage#testIamPermissionsResponse', permissions: ['storage.objects.list', 'storage.objects.get'] }));
      return true;
    });
    await expectRefusedBeforeFirstPage('bucket-403', 'gcs', 'storage.objects.create');
  }, 90_000);

  it('refuses a dataset the identity may not read before the first page, naming the permission and the service account', async () => {
    await google.start();
    rig.bigquery.setFault(({ method, path }, response) => {
      if (method !== 'GET' || !/\/datasets\/[^/]+$/.test(path.split('?')[0]!)) return false;
      return answerGoogleError(response, 403, 'PERMISSION_DENIED', 'Access Denied: Dataset: User does not have bigquery.datasets.get permission.', {
        reason: 'accessDenied',
        message: 'Access Denied',
      });
    });
    await expectRefusedBeforeFirstPage('dataset-403', 'bigquery', 'bigquery.datasets.get');
  }, 90_000);

  it('fails a run whose token cannot be refreshed after the load started with google_credentials_unavailable, publishing nothing and naming what it could not remove', async () => {
    // Tokens that never outlive a request, so every request asks the metadata server, which
    // stops answering the moment the proxy sees the staging load sent: the order of events is the
    // fakes', whatever the machine's load. The wait for a token is sized so that no token before
    // that moment can miss it on a busy machine (a token is a loopback request, but the run's own
    // event loop is busy with pages meanwhile: 2 s was missed at a load average of 8); after it,
    // the run waits this long for a metadata server that answers 503, then fails.
    const server = await google.start({ tokenLifetimeSeconds: 1 });
    let metadataRequestsBeforeLoad: number | undefined;
    rig.bigquery.setFault(({ method, path }) => {
      if (method === 'POST' && path.startsWith('/upload/bigquery/') && metadataRequestsBeforeLoad === undefined) {
        metadataRequestsBeforeLoad = server.requests.length;
        server.setUnavailable(true);
      }
      return false;
    });
    const run = await google.run('lost-midway', {
      environment: { googleCredentialsWaitMs: 15_000, stopDeadlineMs: 5_000 },
    });
    // The scenario happened: tokens were had until the load was sent, and refused after it.
    const tokenAnswers = (from: number, to?: number) =>
      server.requests
        .slice(from, to)
        .filter((request) => request.path.endsWith('/token'))
        .map((request) => request.status);
    expect(metadataRequestsBeforeLoad, `the staging load was never sent: ${run.stderr}`).toBeDefined();
    const beforeLoad = tokenAnswers(0, metadataRequestsBeforeLoad);
    expect(beforeLoad.length).toBeGreaterThan(0);
    expect(new Set(beforeLoad)).toEqual(new Set([200]));
    expect(tokenAnswers(metadataRequestsBeforeLoad!)).toContain(503);
    // Then its outcome.
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

/** Answers as a Google API refuses (its JSON error body); true: the proxy's fault handled the request. */
function answerGoogleError(response: ServerResponse, code: number, status: string, message: string, error: { reason: string; message: string }): true {
  response.writeHead(code, { 'content-type': 'application/json' });
  response.end(JSON.stringify({ error: { code, message, status, errors: [error] } }));
  return true;
}
