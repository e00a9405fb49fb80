// Issue 35: credentials as production runs them. A run with Application Default Credentials from
// a (fake) GCE metadata server, Workload Identity's path on GKE, no emulator variables, both
// endpoints from the environment config, each behind a proxy that refuses a request without a
// token the metadata server issued. Every Google request must carry a valid token.
import { afterEach, expect, it } from 'vitest';
import { startFakeMetadataServer, type FakeMetadataServer } from '../../support/fake-metadata-server.js';
import { describeWithGoogleRig, googleRun, objectNames, tableNames, type GoogleRig } from '../../support/google-run-harness.js';

describeWithGoogleRig('a two-sink run with Workload Identity (a fake metadata server)', (rig: GoogleRig) => {
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

  it('publishes to both sinks, and every BigQuery and Cloud Storage request carries a token the metadata server issued', async () => {
    metadata = await startFakeMetadataServer({ book: rig.book });
    const before = mark();
    const run = await googleRun(rig, 'happy', { env: { GCE_METADATA_HOST: metadata.host } });
    expect(run.exitCode, run.stderr).toBe(0);
    expect(await tableNames(rig, run.dataset)).toContain(run.table);
    expect(await objectNames(rig, run.bucket)).toContain('exports/incident_detail.csv');
    const sent = requestsSince(before);
    expect(sent.filter((request) => request.path.includes('/bigquery/v2/')).length).toBeGreaterThan(3);
    expect(sent.filter((request) => request.path.includes('/storage/v1/')).length).toBeGreaterThan(2);
    // None anonymous, none with a token the metadata server did not issue or that had expired.
    expect(sent.filter((request) => request.verdict !== 'valid')).toEqual([]);
    // The metadata server was asked the way the real one requires, and only so.
    expect(metadata.requests.length).toBeGreaterThan(0);
    expect(metadata.requests.every((request) => request.flavored)).toBe(true);
    expect(metadata.requests.some((request) => request.path.endsWith('/token'))).toBe(true);
    // No token reaches any output.
    for (const issued of rig.book.issued) expect(run.stdout + run.stderr).not.toContain(issued.token);
  }, 90_000);

  it('rides out a metadata server that answers 503 for its first seconds (a new pod): the run succeeds', async () => {
    metadata = await startFakeMetadataServer({ book: rig.book, unavailableForMs: 2_500 });
    const run = await googleRun(rig, 'late-503', { env: { GCE_METADATA_HOST: metadata.host } });
    expect(run.exitCode, run.stderr).toBe(0);
    expect(metadata.requests.some((request) => request.status === 503)).toBe(true);
    expect(run.stderr).toContain('Google credentials not available yet');
    expect(await objectNames(rig, run.bucket)).toContain('exports/incident_detail.csv');
  }, 90_000);

  it('rides out a metadata server that refuses connections for its first seconds: the run succeeds', async () => {
    metadata = await startFakeMetadataServer({ book: rig.book, refuseForMs: 3_000 });
    const run = await googleRun(rig, 'late-refused', { env: { GCE_METADATA_HOST: metadata.host } });
    expect(run.exitCode, run.stderr).toBe(0);
    expect(await tableNames(rig, run.dataset)).toContain(run.table);
  }, 90_000);

  it('fails with google_credentials_unavailable, exit 1, once googleCredentialsWaitMs has passed, before the first page, publishing nothing', async () => {
    metadata = await startFakeMetadataServer({ book: rig.book, unavailableForMs: 600_000 });
    const exportsBefore = rig.sandbox.requests.filter((request) => request.endpoint === 'export').length;
    const run = await googleRun(rig, 'never', { env: { GCE_METADATA_HOST: metadata.host }, environment: { googleCredentialsWaitMs: 2_000 } });
    expect(run.exitCode, run.stderr).toBe(1);
    expect(run.summary?.tiles[0]).toMatchObject({ status: 'failed', error: { code: 'google_credentials_unavailable' } });
    expect(run.summary?.tiles[0]!.error!.message).toMatch(/within 2000 ms \(googleCredentialsWaitMs/);
    expect(run.summary?.tiles[0]!.error!.message).toContain(metadata.host);
    // The wait is bounded by the allowance, not by the library's nor the request's limits.
    expect(run.elapsedMs).toBeLessThan(20_000);
    expect(rig.sandbox.requests.filter((request) => request.endpoint === 'export').length).toBe(exportsBefore);
    expect(await objectNames(rig, run.bucket)).toEqual([]);
    expect(await tableNames(rig, run.dataset)).toEqual([]);
  }, 90_000);

  it('refreshes tokens that live 2 s during a run that outlasts several of them, and never sends an expired one', async () => {
    metadata = await startFakeMetadataServer({ book: rig.book, tokenLifetimeSeconds: 2 });
    rig.bigquery.setDelayMs(250);
    rig.gcs.setDelayMs(200);
    const before = mark();
    const issuedBefore = rig.book.issued.length;
    const run = await googleRun(rig, 'short-tokens', { env: { GCE_METADATA_HOST: metadata.host } });
    expect(run.exitCode, run.stderr).toBe(0);
    const sent = requestsSince(before);
    expect(sent.filter((request) => request.verdict !== 'valid')).toEqual([]);
    const used = new Set(sent.map((request) => request.token));
    expect(used.size).toBeGreaterThan(1);
    expect(rig.book.issued.length - issuedBefore).toBeGreaterThan(1);
  }, 90_000);
});
