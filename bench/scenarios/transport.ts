/**
 * (a) The transport limit: the same pages tilehouse reads, fetched by a bare undici loop at the
 * same concurrency (page 0 first for totalRows, then workers take pages 1..N-1 in any order),
 * each body read as text and JSON.parsed, then discarded. No validation, ordering, typing or
 * writing: whatever tilehouse does beyond this is its own cost.
 */
import { performance } from 'node:perf_hooks';
import { Agent } from 'undici';
import { fetchPageText, fetchSourceToken, type PageBody } from '../support/source-requests.js';
import { scenarioInput, type BaselineInput, type BaselineResult } from './scenario-input.js';

const input = scenarioInput<BaselineInput>();
// The same connection pool settings as tilehouse's run (src/pipeline/run-tiles.ts).
const dispatcher = new Agent({ keepAliveTimeout: 10_000, connections: 16 });
const started = performance.now();
const token = await fetchSourceToken(input.endpoint, dispatcher);
const first = JSON.parse(await fetchPageText(input.endpoint, token, 0, input.itemsPerPage, dispatcher)) as PageBody;
const totalPages = Math.max(1, Math.ceil(first.result.navigation.totalRows / input.itemsPerPage));
let rows = first.result.rows.length;
let next = 1;
const worker = async (): Promise<void> => {
  while (next < totalPages) {
    const pageNumber = next++;
    const body = JSON.parse(await fetchPageText(input.endpoint, token, pageNumber, input.itemsPerPage, dispatcher)) as PageBody;
    rows += body.result.rows.length;
  }
};
await Promise.all(Array.from({ length: input.concurrency }, worker));
const result: BaselineResult = { rows, pages: totalPages, totalPages, loopMs: performance.now() - started };
await dispatcher.close();
process.stdout.write(`${JSON.stringify(result)}\n`);
