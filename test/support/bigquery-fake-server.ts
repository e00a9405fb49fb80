import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { BigQuery, Table } from '@google-cloud/bigquery';
import { localBigQueryClient } from './bigquery-emulator.js';

/**
 * A scripted stand-in for the BigQuery REST API on loopback, for behaviour the emulator cannot
 * show (it has no copy jobs, ignores partition decorators, keeps added columns out of its storage,
 * answers a reused job id with 500 instead of 409, finishes every job at once, ignores cancels,
 * and never fails transiently). The sink talks to it through the real client, so the tests see
 * the exact HTTP requests the client sends, multipart load uploads included.
 */
export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  /** Parsed JSON body, or for a multipart upload, its JSON metadata part. */
  json: unknown;
  /** The data part of a multipart upload (the NDJSON file). */
  upload?: string;
  /** Which API call this was, e.g. `jobs.insert`; see `route`. */
  call: ApiCall;
}

/**
 * `jobs.insert` is a load (a multipart upload); `jobs.copy` is a jobs.insert whose configuration
 * is a copy, `jobs.query` one whose configuration is a query (plain JSON POSTs).
 */
export type ApiCall =
  | 'datasets.get'
  | 'datasets.insert'
  | 'tables.get'
  | 'tables.insert'
  | 'tables.patch'
  | 'tables.delete'
  | 'jobs.insert'
  | 'jobs.copy'
  | 'jobs.query'
  | 'jobs.get'
  | 'jobs.cancel'
  | 'other';

export interface Reply {
  status: number;
  body?: unknown;
}

/** Answers per API call; `attempt` counts calls of that kind (1-based). Defaults: see below. */
export type FakeRoutes = Partial<Record<ApiCall, (request: RecordedRequest, attempt: number) => Reply | Promise<Reply>>>;

export interface FakeBigQuery {
  endpoint: { apiEndpoint: string; projectId: string };
  requests: RecordedRequest[];
  client(): BigQuery;
  /** Requests of one kind, in order. */
  calls(call: ApiCall): RecordedRequest[];
  close(): Promise<void>;
}

export const FAKE_PROJECT_ID = 'fake-project';

let lastTime = 0;

/**
 * BigQuery's clock for `creationTime`s (ms since the epoch, as text): never the same value twice,
 * so "created before" never depends on two calls sharing a millisecond.
 */
export function fakeClock(): string {
  lastTime = Math.max(Date.now(), lastTime + 1);
  return String(lastTime);
}

/** BigQuery's error envelope, as the client parses it into an ApiError. */
export function apiError(status: number, reason: string, message: string): Reply {
  return { status, body: { error: { code: status, message, errors: [{ reason, message, domain: 'global' }] } } };
}

/** A job resource in the given state, echoing the job id of the request. */
export function jobResource(jobId: string, state: 'PENDING' | 'RUNNING' | 'DONE', errorResult?: { reason: string; message: string }): Reply {
  return {
    status: 200,
    body: {
      kind: 'bigquery#job',
      jobReference: { projectId: FAKE_PROJECT_ID, jobId, location: 'US' },
      status: errorResult ? { state, errorResult, errors: [errorResult] } : { state },
      statistics: { creationTime: fakeClock() },
    },
  };
}

/** The job id a recorded jobs.insert, jobs.copy, jobs.get or jobs.cancel request is about. */
export function jobIdOf(request: RecordedRequest): string {
  if (request.call === 'jobs.get') return decodeURIComponent(request.path.split('/').at(-1) ?? '');
  if (request.call === 'jobs.cancel') return decodeURIComponent(request.path.split('/').at(-2) ?? '');
  return (request.json as { jobReference?: { jobId?: string } }).jobReference?.jobId ?? '';
}

/** The table a recorded tables.* request is about. */
export function tableIdOf(request: RecordedRequest): string {
  if (request.call === 'tables.insert') return (request.json as { tableReference?: { tableId?: string } }).tableReference?.tableId ?? '';
  return decodeURIComponent(request.path.split('/').at(-1) ?? '');
}

const DEFAULT_ROUTES: Required<Omit<FakeRoutes, 'other'>> = {
  'datasets.get': () => ({ status: 200, body: { location: 'US' } }),
  'datasets.insert': (request) => ({ status: 200, body: request.json }),
  'tables.get': () => apiError(404, 'notFound', 'Not found: Table'),
  'tables.insert': (request) => ({ status: 200, body: { ...(request.json as object), creationTime: fakeClock() } }),
  'tables.patch': (request) => ({ status: 200, body: request.json }),
  'tables.delete': () => ({ status: 204 }),
  'jobs.insert': (request) => jobResource(jobIdOf(request), 'DONE'),
  'jobs.copy': (request) => jobResource(jobIdOf(request), 'DONE'),
  'jobs.query': (request) => jobResource(jobIdOf(request), 'DONE'),
  'jobs.get': (request) => jobResource(jobIdOf(request), 'DONE'),
  'jobs.cancel': (request) => ({ status: 200, body: { kind: 'bigquery#jobCancelResponse', job: jobResource(jobIdOf(request), 'DONE').body } }),
};

export async function startFakeBigQuery(routes: FakeRoutes = {}): Promise<FakeBigQuery> {
  const requests: RecordedRequest[] = [];
  const attempts = new Map<ApiCall, number>();

  const server = createServer((request, response) => {
    void handle(request, response).catch((error: unknown) => {
      response.writeHead(500, { 'content-type': 'text/plain' }).end(String(error));
    });
  });

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const body = Buffer.concat(await request.toArray());
    const url = new URL(request.url ?? '/', 'http://localhost');
    let call = route(request.method ?? 'GET', url.pathname);
    const recorded: RecordedRequest = { method: request.method ?? 'GET', path: url.pathname, query: url.searchParams, json: undefined, call };
    const contentType = request.headers['content-type'] ?? '';
    if (contentType.startsWith('multipart/')) {
      const [metadata, data] = multipartParts(body, contentType);
      recorded.json = JSON.parse(metadata ?? 'null');
      recorded.upload = data ?? '';
    } else if (body.length > 0) {
      recorded.json = JSON.parse(body.toString('utf8'));
    }
    if (call === 'jobs.copy') {
      const configuration = (recorded.json as { configuration?: { copy?: unknown; query?: unknown } } | undefined)?.configuration;
      if (configuration?.copy === undefined) call = configuration?.query === undefined ? 'other' : 'jobs.query';
    }
    recorded.call = call;
    requests.push(recorded);
    const attempt = (attempts.get(call) ?? 0) + 1;
    attempts.set(call, attempt);
    const handler = routes[call] ?? (call === 'other' ? undefined : DEFAULT_ROUTES[call]);
    const reply = handler ? await handler(recorded, attempt) : apiError(404, 'notFound', `fake BigQuery has no route for ${request.method} ${url.pathname}`);
    if (reply.status === 204) response.writeHead(204).end();
    else response.writeHead(reply.status, { 'content-type': 'application/json' }).end(JSON.stringify(reply.body ?? {}));
  }

  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const endpoint = { apiEndpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, projectId: FAKE_PROJECT_ID };
  return {
    endpoint,
    requests,
    client: () => localBigQueryClient(endpoint),
    calls: (call) => requests.filter((request) => request.call === call),
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

function route(method: string, path: string): ApiCall {
  const p = '/projects/[^/]+';
  if (method === 'POST' && new RegExp(`^/upload/bigquery/v2${p}/jobs$`).test(path)) return 'jobs.insert';
  if (method === 'POST' && new RegExp(`^/bigquery/v2${p}/jobs$`).test(path)) return 'jobs.copy';
  if (method === 'GET' && new RegExp(`^/bigquery/v2${p}/jobs/[^/]+$`).test(path)) return 'jobs.get';
  if (method === 'POST' && new RegExp(`^/bigquery/v2${p}/jobs/[^/]+/cancel$`).test(path)) return 'jobs.cancel';
  const table = new RegExp(`^/bigquery/v2${p}/datasets/[^/]+/tables/[^/]+$`).test(path);
  if (method === 'GET' && table) return 'tables.get';
  if (method === 'PATCH' && table) return 'tables.patch';
  if (method === 'DELETE' && table) return 'tables.delete';
  if (method === 'POST' && new RegExp(`^/bigquery/v2${p}/datasets/[^/]+/tables$`).test(path)) return 'tables.insert';
  if (method === 'GET' && new RegExp(`^/bigquery/v2${p}/datasets/[^/]+$`).test(path)) return 'datasets.get';
  if (method === 'POST' && new RegExp(`^/bigquery/v2${p}/datasets$`).test(path)) return 'datasets.insert';
  return 'other';
}

/** The bodies of a multipart/related request, in order (metadata JSON, then the data). */
function multipartParts(body: Buffer, contentType: string): string[] {
  const boundary = /boundary="?([^";]+)"?/.exec(contentType)?.[1];
  if (!boundary) return [];
  return body
    .toString('utf8')
    .split(`--${boundary}`)
    .slice(1, -1)
    .map((part) => {
      const separator = part.indexOf('\r\n\r\n');
      return part.slice(separator + 4).replace(/\r\n$/, '');
    });
}

export interface EmulatorWithCopyJobs {
  endpoint: { apiEndpoint: string; projectId: string };
  client(): BigQuery;
  /** The copy jobs.insert requests the proxy carried out itself, in order. */
  copies: RecordedRequest[];
  /** The WRITE_TRUNCATE_DATA query jobs the proxy carried out itself, in order. */
  truncateDataQueries: RecordedRequest[];
  close(): Promise<void>;
}

/**
 * The BigQuery emulator behind a loopback proxy that adds the one thing the publish step needs
 * and the emulator lacks: copy jobs (goccy/bigquery-emulator 0.8.1 refuses any jobs.insert that
 * is not a query, load or extract with "unspecified job configuration query").
 *
 * Every other request goes to the emulator unchanged, so loads, staging tables, schemas and rows
 * are the emulator's own. A copy is carried out with the emulator's own SQL: WRITE_TRUNCATE (or a
 * missing destination under CREATE_IF_NEEDED) drops and re-creates the destination with the
 * source's schema, as a truncating copy takes the source's schema; then `INSERT INTO dest (cols)
 * SELECT cols FROM source`. Unlike BigQuery this is not atomic. A copy onto a partition decorator
 * of a column-partitioned table (`table$p`, whose timePartitioning the emulator stores but does
 * not act on) replaces or appends to the rows of that partition with DML; ingestion-time
 * decorators are refused. Query jobs with WRITE_TRUNCATE_DATA (which the emulator would treat as
 * an append) are carried out as DELETE + INSERT. A reused job id is answered 409 duplicate, as
 * BigQuery does (the emulator says 500 for loads); copies' outcomes are served to jobs.get by the
 * proxy. What this shows is the sink's
 * flow over real storage; the copy request's exact shape is tested against the scripted fake.
 */
export async function startEmulatorWithCopyJobs(emulator: { apiEndpoint: string; projectId: string }): Promise<EmulatorWithCopyJobs> {
  const upstream = localBigQueryClient(emulator);
  const copyJobs = new Map<string, unknown>();
  const copies: RecordedRequest[] = [];
  const truncateDataQueries: RecordedRequest[] = [];

  const server = createServer((request, response) => {
    void handle(request, response).catch((error: unknown) => {
      response.writeHead(500, { 'content-type': 'text/plain' }).end(String(error));
    });
  });

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const body = Buffer.concat(await request.toArray());
    const url = new URL(request.url ?? '/', 'http://localhost');
    const call = route(request.method ?? 'GET', url.pathname);
    const json = call === 'jobs.copy' && body.length > 0 ? (JSON.parse(body.toString('utf8')) as CopyJobRequest) : undefined;
    const send = (reply: Reply): void => {
      response.writeHead(reply.status, { 'content-type': 'application/json' }).end(JSON.stringify(reply.body ?? {}));
    };

    if (json?.configuration?.copy) {
      copies.push({ method: 'POST', path: url.pathname, query: url.searchParams, json, call });
      const jobId = json.jobReference?.jobId ?? `copy_${copyJobs.size + 1}`;
      if (copyJobs.has(jobId)) return send(apiError(409, 'duplicate', `Already Exists: Job ${emulator.projectId}:US.${jobId}`));
      const job = await runCopy(upstream, { ...json, jobReference: { projectId: emulator.projectId, jobId, location: 'US' } });
      copyJobs.set(jobId, job);
      return send({ status: 200, body: job });
    }
    if (json?.configuration?.query?.writeDisposition === 'WRITE_TRUNCATE_DATA') {
      truncateDataQueries.push({ method: 'POST', path: url.pathname, query: url.searchParams, json, call: 'jobs.query' });
      const jobId = json.jobReference?.jobId ?? `query_${copyJobs.size + 1}`;
      if (copyJobs.has(jobId)) return send(apiError(409, 'duplicate', `Already Exists: Job ${emulator.projectId}:US.${jobId}`));
      const job = await runTruncateDataQuery(upstream, { ...json, jobReference: { projectId: emulator.projectId, jobId, location: 'US' } });
      copyJobs.set(jobId, job);
      return send({ status: 200, body: job });
    }
    if (call === 'jobs.get' || call === 'jobs.cancel') {
      const jobId = decodeURIComponent(url.pathname.split('/').at(call === 'jobs.get' ? -1 : -2) ?? '');
      const job = copyJobs.get(jobId);
      if (job !== undefined) return send({ status: 200, body: call === 'jobs.get' ? job : { kind: 'bigquery#jobCancelResponse', job } });
    }
    const headers = Object.fromEntries(
      Object.entries(request.headers).filter(([name, value]) => typeof value === 'string' && !HOP_BY_HOP_HEADERS.has(name)),
    ) as Record<string, string>;
    const answer = await fetch(`${emulator.apiEndpoint}${request.url ?? '/'}`, {
      method: request.method ?? 'GET',
      headers,
      ...(body.length > 0 ? { body } : {}),
    });
    const answerBody = Buffer.from(await answer.arrayBuffer());
    // The emulator refuses a reused job id with 500 "job … is already created"; BigQuery says 409
    // duplicate, which is what the sink's adoption logic reads.
    const reused = answer.status === 500 && /failed to add job: job (\S+) is already created/.exec(answerBody.toString('utf8'));
    if (reused) return send(apiError(409, 'duplicate', `Already Exists: Job ${emulator.projectId}:US.${reused[1]}`));
    // No content type invented: the client parses an empty 204 (tables.delete) that claims JSON,
    // fails, and the staging table the sink deleted looked left behind.
    const type = answer.headers.get('content-type');
    response.writeHead(answer.status, type === null ? {} : { 'content-type': type }).end(answerBody);
  }

  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const endpoint = { apiEndpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, projectId: emulator.projectId };
  return {
    endpoint,
    client: () => localBigQueryClient(endpoint),
    copies,
    truncateDataQueries,
    close: async () => {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}

// Headers of one connection, not of the request; fetch refuses some of them (transfer-encoding).
const HOP_BY_HOP_HEADERS = new Set(['host', 'content-length', 'connection', 'keep-alive', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'expect']);

type TableReference = { projectId: string; datasetId: string; tableId: string };
interface CopyJobRequest {
  jobReference?: { projectId?: string; jobId?: string; location?: string };
  configuration?: {
    copy?: { sourceTable: TableReference; destinationTable: TableReference; writeDisposition?: string; createDisposition?: string };
    query?: { query: string; destinationTable: TableReference; writeDisposition?: string };
    labels?: Record<string, string>;
  };
}

function finishedJob(job: CopyJobRequest, jobType: 'COPY' | 'QUERY') {
  return (status: Record<string, unknown>, statistics: Record<string, unknown> = {}) => ({
    kind: 'bigquery#job',
    jobReference: job.jobReference,
    configuration: { jobType, ...job.configuration },
    status: { state: 'DONE', ...status },
    statistics: { creationTime: String(Date.now()), ...statistics },
  });
}

/**
 * A query job with WRITE_TRUNCATE_DATA, which the emulator takes for an append: carried out as
 * `DELETE` of every row, then `INSERT INTO dest (its columns) <query>` (the sink's query selects
 * the table's columns in the table's order). The table itself, and so its metadata, stays. Not
 * atomic here, unlike BigQuery.
 */
async function runTruncateDataQuery(client: BigQuery, job: CopyJobRequest): Promise<unknown> {
  const { query, destinationTable: to } = job.configuration!.query!;
  const done = finishedJob(job, 'QUERY');
  const destination = client.dataset(to.datasetId, { projectId: to.projectId }).table(to.tableId);
  const [exists] = await destination.exists();
  if (!exists) return done({ errorResult: { reason: 'notFound', message: `Not found: Table ${to.tableId}` } });
  const [metadata] = await destination.getMetadata();
  const columns = (((metadata as { schema?: { fields?: { name: string }[] } }).schema?.fields ?? []) as { name: string }[]).map((field) => `\`${field.name}\``);
  const name = `\`${to.projectId}.${to.datasetId}.${to.tableId}\``;
  try {
    await client.query(`DELETE FROM ${name} WHERE TRUE`);
    await client.query(`INSERT INTO ${name} (${columns.join(', ')}) ${query}`);
  } catch (error) {
    return done({ errorResult: { reason: 'invalid', message: `truncate-data shim: ${(error as Error).message}` } });
  }
  return done({});
}

/** The SQL expression giving a row's partition id (`YYYYMMDD`/`YYYYMM`) of a column-partitioned table. */
async function partitionExpression(table: Table): Promise<string | undefined> {
  const [metadata] = await table.getMetadata();
  const { timePartitioning, schema } = metadata as {
    timePartitioning?: { type?: string; field?: string };
    schema?: { fields?: { name: string; type: string }[] };
  };
  if (!timePartitioning?.field) return undefined;
  const field = schema?.fields?.find((candidate) => candidate.name.toLowerCase() === timePartitioning.field!.toLowerCase());
  const format = timePartitioning.type === 'MONTH' ? '%Y%m' : '%Y%m%d';
  return field?.type === 'TIMESTAMP' ? `FORMAT_TIMESTAMP('${format}', \`${field.name}\`, 'UTC')` : `FORMAT_DATE('${format}', \`${timePartitioning.field}\`)`;
}

/**
 * A copy onto a partition decorator of a column-partitioned table (`dest$p`), from `source$p` or
 * from a whole table: as BigQuery, refused when the rows copied are not all of partition p; then
 * partition p is replaced (WRITE_TRUNCATE) or added to (WRITE_APPEND) with the emulator's DML.
 */
async function runPartitionCopy(client: BigQuery, job: CopyJobRequest): Promise<unknown> {
  const copy = job.configuration!.copy!;
  const done = finishedJob(job, 'COPY');
  const failed = (reason: string, message: string) => done({ errorResult: { reason, message }, errors: [{ reason, message }] });
  const [toTable, toId] = copy.destinationTable.tableId.split('$') as [string, string];
  const [fromTable, fromId] = copy.sourceTable.tableId.split('$') as [string, string | undefined];
  const destination = client.dataset(copy.destinationTable.datasetId, { projectId: copy.destinationTable.projectId }).table(toTable);
  const source = client.dataset(copy.sourceTable.datasetId, { projectId: copy.sourceTable.projectId }).table(fromTable);
  if (!(await destination.exists())[0]) return failed('notFound', `Not found: Table ${toTable}`);
  if (!(await source.exists())[0]) return failed('notFound', `Not found: Table ${fromTable}`);
  const destinationPartition = await partitionExpression(destination);
  if (destinationPartition === undefined)
    return failed('invalid', `copy shim: ${toTable} is not column-partitioned (the emulator has no ingestion-time partitions)`);
  const sourcePartition = fromId === undefined ? destinationPartition : await partitionExpression(source);
  if (sourcePartition === undefined) return failed('invalid', `copy shim: ${fromTable} is not column-partitioned, cannot read its partition ${fromId}`);
  const name = (reference: TableReference, table: string) => `\`${reference.projectId}.${reference.datasetId}.${table}\``;
  const from = name(copy.sourceTable, fromTable);
  const to = name(copy.destinationTable, toTable);
  const selected = fromId === undefined ? '' : ` WHERE ${sourcePartition} = '${fromId}'`;
  const [[outside]] = (await client.query(
    `SELECT COUNT(*) AS n FROM ${from}${selected ? `${selected} AND` : ' WHERE'} NOT (${sourcePartition} = '${toId}')`,
  )) as [[{ n: number }]];
  if (outside.n > 0) return failed('invalid', `Some rows belong to different partitions rather than destination partition ${toId}`);
  const [metadata] = await source.getMetadata();
  const columns = (((metadata as { schema?: { fields?: { name: string }[] } }).schema?.fields ?? []) as { name: string }[])
    .map((field) => `\`${field.name}\``)
    .join(', ');
  const [[count]] = (await client.query(`SELECT COUNT(*) AS n FROM ${from}${selected}`)) as [[{ n: number }]];
  try {
    if (copy.writeDisposition === 'WRITE_TRUNCATE') await client.query(`DELETE FROM ${to} WHERE ${destinationPartition} = '${toId}'`);
    if (count.n > 0) await client.query(`INSERT INTO ${to} (${columns}) SELECT ${columns} FROM ${from}${selected}`);
  } catch (error) {
    return failed('invalid', `copy shim: ${(error as Error).message}`);
  }
  return done({}, { copy: { copiedRows: String(count.n) } });
}

/** Carries out one copy job with the emulator's SQL; resolves with the finished job resource. */
async function runCopy(client: BigQuery, job: CopyJobRequest): Promise<unknown> {
  const copy = job.configuration!.copy!;
  const { sourceTable: from, destinationTable: to } = copy;
  const done = (status: Record<string, unknown>, statistics: Record<string, unknown> = {}) => ({
    kind: 'bigquery#job',
    jobReference: job.jobReference,
    configuration: { jobType: 'COPY', copy },
    status: { state: 'DONE', ...status },
    statistics: { creationTime: String(Date.now()), ...statistics },
  });
  const failed = (reason: string, message: string) => done({ errorResult: { reason, message }, errors: [{ reason, message }] });
  if (to.tableId.includes('$')) return runPartitionCopy(client, job);

  const source = client.dataset(from.datasetId, { projectId: from.projectId }).table(from.tableId);
  const destination = client.dataset(to.datasetId, { projectId: to.projectId }).table(to.tableId);
  const [sourceExists] = await source.exists();
  if (!sourceExists) return failed('notFound', `Not found: Table ${from.projectId}:${from.datasetId}.${from.tableId}`);
  const [destinationExists] = await destination.exists();
  if (!destinationExists && copy.createDisposition === 'CREATE_NEVER') {
    return failed('notFound', `Not found: Table ${to.projectId}:${to.datasetId}.${to.tableId}`);
  }
  if (destinationExists) {
    const [target] = await destination.getMetadata();
    if ((target as { type?: string }).type === 'VIEW') return failed('invalid', `Cannot copy into ${to.tableId}: it is a view`);
  }
  const [metadata] = await source.getMetadata();
  const fields = ((metadata as { schema?: { fields?: { name: string }[] } }).schema?.fields ?? []) as { name: string }[];
  const name = (table: TableReference) => `\`${table.projectId}.${table.datasetId}.${table.tableId}\``;
  const [[count]] = (await client.query(`SELECT COUNT(*) AS n FROM ${name(from)}`)) as [[{ n: number }]];
  if (copy.writeDisposition === 'WRITE_EMPTY' && destinationExists) {
    const [[existing]] = (await client.query(`SELECT COUNT(*) AS n FROM ${name(to)}`)) as [[{ n: number }]];
    if (existing.n > 0) return failed('duplicate', `Already Exists: Table ${to.tableId} is not empty`);
  }
  try {
    if (!destinationExists || copy.writeDisposition === 'WRITE_TRUNCATE') {
      if (destinationExists) await destination.delete();
      await destination.create({ schema: (metadata as { schema?: unknown }).schema });
    }
    const columns = fields.map((field) => `\`${field.name}\``).join(', ');
    if (count.n > 0) await client.query(`INSERT INTO ${name(to)} (${columns}) SELECT ${columns} FROM ${name(from)}`);
  } catch (error) {
    return failed('invalid', `copy shim: ${(error as Error).message}`);
  }
  return done({}, { copy: { copiedRows: String(count.n) } });
}
