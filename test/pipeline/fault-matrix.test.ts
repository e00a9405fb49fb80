import { readFile, writeFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { SANDBOX_TILE, startSandbox, type FaultRule, type Sandbox } from '../../sandbox/index.js';
import { FAST_RETRY, listFiles, runCli, sandboxEnv, writeWorkspace, type Workspace } from '../support/cli-harness.js';
import { detailQuery } from '../support/queries.js';
import { tempDirForAll } from '../support/temp-dir-hooks.js';

// 237 rows at 20 per page = pages 0..11.
const INCIDENTS = 237;
const ITEMS_PER_PAGE = 20;
const LAST_PAGE = 11;
const MIDDLE_PAGE = 5;
const TIMEOUT_MS = 300;
// undici checks headers/body timeouts on a ~1 s tick, so a 300 ms limit fires within ~1.5 s;
// the sandbox answers well after that, so each try really times out.
const SLOW_ANSWER_MS = 2500;
const job = { name: 'incident_detail', tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] };
const PREVIOUS = 'previous output\r\n';

let sandbox: Sandbox;
const temp = tempDirForAll();
let workspace: Workspace;
let faultFree: Buffer;
let faultFreeRequests: number;
let target: string;

async function runOnce() {
  const before = sandbox.requests.length;
  const result = await runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir], { env: sandboxEnv(sandbox) });
  return { ...result, requests: sandbox.requests.length - before };
}

// A fresh sandbox (same seed, same data) for every case: a request a case abandoned (a timed-out
// answer still on its way) must not reach, and spend, the next case's fault rule.
async function freshSandbox(): Promise<void> {
  sandbox = await startSandbox({ incidents: INCIDENTS });
  workspace = await writeWorkspace(temp.path, sandbox, [job], { itemsPerPage: ITEMS_PER_PAGE, requestTimeoutMs: TIMEOUT_MS });
  target = path.join(workspace.outDir, 'incident_detail.csv');
}

beforeAll(async () => {
  await freshSandbox();
  const clean = await runOnce();
  expect(clean.exitCode).toBe(0);
  faultFree = await readFile(target);
  faultFreeRequests = clean.requests;
  await sandbox.close();
});
beforeEach(freshSandbox);
afterEach(async () => {
  await sandbox.close();
});

type Where = { label: string; endpoint: 'token' } | { label: string; endpoint: 'export'; pageNumber: number };
const WHERE: Where[] = [
  { label: 'the token request', endpoint: 'token' },
  { label: 'the first page', endpoint: 'export', pageNumber: 0 },
  { label: 'a middle page', endpoint: 'export', pageNumber: MIDDLE_PAGE },
  { label: 'the last page', endpoint: 'export', pageNumber: LAST_PAGE },
];

type Fault = { label: string; rules: (where: Where) => FaultRule[] | undefined };
const at = (where: Where) =>
  where.endpoint === 'token' ? { endpoint: 'token' as const, call: 1 } : { endpoint: 'export' as const, pageNumber: where.pageNumber };
const FAULTS: Fault[] = [
  { label: '429 with Retry-After in seconds', rules: (w) => [{ ...at(w), kind: 'rate-limit', retryAfter: 0, times: 2 }] },
  { label: '429 with Retry-After as an HTTP-date', rules: (w) => [{ ...at(w), kind: 'rate-limit', retryAfter: new Date(Date.now() + 100) }] },
  { label: '503', rules: (w) => [{ ...at(w), kind: 'server-error', status: 503, times: 2 }] },
  { label: 'a connection reset', rules: (w) => [{ ...at(w), kind: 'connection-reset' }] },
  { label: 'a timeout', rules: (w) => [{ ...at(w), kind: 'delay', delayMs: SLOW_ANSWER_MS }] },
  { label: 'malformed JSON', rules: (w) => [{ ...at(w), kind: 'malformed-json' }] },
  // A token dies after the export calls made before this page; the page gets a 401.
  { label: 'token expiry', rules: (w) => (w.endpoint === 'token' ? undefined : [{ kind: 'token-expiry', afterExportCalls: w.pageNumber }]) },
  // totalRows drifts once, on this page: one re-read from page 0 sees a settled table.
  { label: 'totalRows drift', rules: (w) => (w.endpoint === 'token' ? undefined : [{ kind: 'total-rows-drift', delta: 3, fromPage: w.pageNumber, times: 1 }]) },
];

const cases = FAULTS.flatMap((fault) =>
  WHERE.flatMap((where) => {
    const rules = fault.rules(where);
    return rules === undefined ? [] : [{ name: `${fault.label} on ${where.label}`, rules }];
  }),
);

describe('a run meeting a transient fault', () => {
  it.each(cases)('$name: ends with the fault-free output, within the retry budget', async ({ rules }) => {
    await writeFile(target, PREVIOUS);
    sandbox.clearFaults();
    for (const rule of rules) sandbox.inject(rule);
    const result = await runOnce();
    sandbox.clearFaults();
    expect(result.stderr).toMatch(/1 succeeded/);
    expect(result.exitCode).toBe(0);
    expect((await readFile(target)).equals(faultFree)).toBe(true);
    // The fault really happened and was worked around (a retry, a re-auth or a re-read).
    expect(result.requests).toBeGreaterThan(faultFreeRequests);
    // Every retry and a restart from page 0 are paid for by the budget: never more requests than
    // a clean run, plus one full re-read, plus the budget.
    expect(result.requests).toBeLessThanOrEqual(2 * faultFreeRequests + FAST_RETRY.budget);
    expect(await listFiles(workspace.outDir)).toEqual(['incident_detail.csv']);
  });
});

describe('a run meeting a lasting fault', () => {
  const lasting: Array<{ name: string; rule: FaultRule; says: RegExp }> = [
    {
      name: '503 on every try of a middle page',
      rule: { endpoint: 'export', pageNumber: MIDDLE_PAGE, kind: 'server-error', status: 503, times: Infinity },
      says: /source_server_error: page 5: the server failed with HTTP 503/,
    },
    {
      name: 'connection resets on every token request',
      rule: { endpoint: 'token', kind: 'connection-reset', times: Infinity },
      says: /source_unreachable: token request/,
    },
    {
      name: 'totalRows drifting on every read',
      rule: { kind: 'total-rows-drift', delta: 3, fromPage: MIDDLE_PAGE },
      says: /export_inconsistent: .*page 5: check "totalRows-stable" failed/,
    },
    {
      name: 'a page whose headers differ on every read',
      rule: { kind: 'header-mismatch', pageNumber: LAST_PAGE, times: Infinity },
      says: /export_inconsistent: .*page 11: check "headers-stable" failed/,
    },
    {
      name: 'timeouts on every try of the last page',
      rule: { endpoint: 'export', pageNumber: LAST_PAGE, kind: 'delay', delayMs: SLOW_ANSWER_MS, times: Infinity },
      says: /source_unreachable: page 11: .*[Tt]imeout/,
    },
  ];

  it.each(lasting)('$name: fails cleanly, names fault and page, leaves the previous output', async ({ rule, says }) => {
    await mkdir(workspace.outDir, { recursive: true });
    await writeFile(target, PREVIOUS);
    sandbox.clearFaults();
    sandbox.inject(rule);
    const result = await runOnce();
    sandbox.clearFaults();
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(says);
    expect(await readFile(target, 'utf8')).toBe(PREVIOUS);
    expect(await listFiles(workspace.outDir)).toEqual(['incident_detail.csv']);
    expect(result.requests).toBeLessThanOrEqual(2 * faultFreeRequests + FAST_RETRY.budget);
  });
});
