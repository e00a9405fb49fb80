// Issue 35: credentials as production runs them. A run with Application Default Credentials from
// a (fake) GCE metadata server, Workload Identity's path on GKE, no emulator variables, both
// endpoints from the environment config, each behind a proxy that refuses a request without a
// token the metadata server issued. Every Google request must carry a valid token.
import { setTimeout as sleep } from 'node:timers/promises';
import { expect, it } from 'vitest';
import { describeWithGoogleRig, metadataServerEachTest, objectNames, tableNames, type GoogleRig } from '../../support/google-run-harness.js';
import { waitUntil } from '../../support/wait-until.js';

describeWithGoogleRig('a two-sink run with Workload Identity (a fake metadata server)', (rig: GoogleRig) => {
  const google = metadataServerEachTest(rig);

  it('publishes to both sinks, and every BigQuery and Cloud Storage request carries a token the metadata server issued', async () => {
    const metadata = await google.start();
    const before = google.mark();
    const run = await google.run('happy');
    expect(run.exitCode, run.stderr).toBe(0);
    expect(await tableNames(rig, run.dataset)).toContain(run.table);
    expect(await objectNames(rig, run.bucket)).toContain('exports/incident_detail.csv');
    const sent = google.requestsSince(before);
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
    const metadata = await google.start({ unavailableForMs: 2_500 });
    const run = await google.run('late-503');
    expect(run.exitCode, run.stderr).toBe(0);
    expect(metadata.requests.some((request) => request.status === 503)).toBe(true);
    expect(run.stderr).toContain('Google credentials not available yet');
    expect(await objectNames(rig, run.bucket)).toContain('exports/incident_detail.csv');
  }, 90_000);

  it('rides out a metadata server that refuses connections for its first seconds: the run succeeds', async () => {
    // Refused until 3 s after the run first reaches the source (15 s at most): a time from the
    // server's start would pass unmet while a loaded machine starts the CLI.
    const before = rig.sandbox.requests.length;
    const reached = waitUntil(() => rig.sandbox.requests.length > before, 'the run reached the source', { withinMs: 15_000 }).catch(() => undefined);
    const metadata = await google.start({ refuseUntil: reached.then(() => sleep(3_000)) });
    const run = await google.run('late-refused');
    expect(run.exitCode, run.stderr).toBe(0);
    // A first try met the refusal, and the run said so and tried again.
    expect(run.stderr).toContain('Google credentials not available yet from Application Default Credentials');
    expect(metadata.requests.some((request) => request.path.endsWith('/token') && request.status === 200)).toBe(true);
    expect(await tableNames(rig, run.dataset)).toContain(run.table);
  }, 90_000);

  it('fails with google_credentials_unavailable, exit 1, once googleCredentialsWaitMs has passed, before the first page, publishing nothing', async () => {
    const metadata = await google.start({ unavailableForMs: 600_000 });
    const exportsBefore = rig.sandbox.requests.filter((request) => request.endpoint === 'export').length;
    const run = await google.run('never', { environment: { googleCredentialsWaitMs: 2_000 } });
    expect(run.exitCode, run.stderr).toBe(1);
    expect(run.summary?.tiles[0]).toMatchObject({ status: 'failed', error: { code: 'google_credentials_unavailable' } });
    // The wait is bounded by the allowance, not by the library's nor the request's limits.
    expect(run.summary?.tiles[0]!.error!.message).toMatch(/within 2000 ms \(googleCredentialsWaitMs/);
    expect(run.summary?.tiles[0]!.error!.message).toContain(metadata.host);
    expect(rig.sandbox.requests.filter((request) => request.endpoint === 'export').length).toBe(exportsBefore);
    expect(await objectNames(rig, run.bucket)).toEqual([]);
    expect(await tableNames(rig, run.dataset)).toEqual([]);
  }, 90_000);

  it('refreshes tokens that live 2 s during a run that outlasts several of them, and never sends an expired one', async () => {
    await google.start({ tokenLifetimeSeconds: 2 });
    rig.bigquery.setDelayMs(250);
    rig.gcs.setDelayMs(200);
    const before = google.mark();
    const issuedBefore = rig.book.issued.length;
    const run = await google.run('short-tokens');
    expect(run.exitCode, run.stderr).toBe(0);
    const sent = google.requestsSince(before);
    expect(sent.filter((request) => request.verdict !== 'valid')).toEqual([]);
    const used = new Set(sent.map((request) => request.token));
    expect(used.size).toBeGreaterThan(1);
    expect(rig.book.issued.length - issuedBefore).toBeGreaterThan(1);
  }, 90_000);
});
