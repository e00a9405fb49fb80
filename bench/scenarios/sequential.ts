/**
 * (b) A sequential client: what a user looping over the reporting module's ready-made request
 * would write. One page at a time until hasNext is false, each body JSON.parsed and its rows
 * written naively to a CSV file (quote a field when it needs it, datetimes left as the epoch
 * milliseconds the API sends, no types, no checks, no atomic rename).
 */
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { finished } from 'node:stream/promises';
import { performance } from 'node:perf_hooks';
import { Agent } from 'undici';
import { fetchPageText, fetchSourceToken, type PageBody } from '../support/source-requests.js';
import { scenarioInput, type BaselineInput, type BaselineResult } from './scenario-input.js';

const input = scenarioInput<BaselineInput>();
if (input.outFile === undefined) throw new Error('sequential: outFile is required');
const dispatcher = new Agent({ keepAliveTimeout: 10_000, connections: 1 });
const out = createWriteStream(input.outFile);

const field = (value: unknown): string => {
  if (value === null || value === undefined) return '';
  const text = String(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
};
const write = async (text: string): Promise<void> => {
  if (!out.write(text)) await once(out, 'drain');
};

const started = performance.now();
const token = await fetchSourceToken(input.endpoint, dispatcher);
let rows = 0;
let pages = 0;
let totalPages = 0;
for (let pageNumber = 0; ; pageNumber++) {
  const body = JSON.parse(await fetchPageText(input.endpoint, token, pageNumber, input.itemsPerPage, dispatcher)) as PageBody;
  if (pageNumber === 0) {
    totalPages = Math.max(1, Math.ceil(body.result.navigation.totalRows / input.itemsPerPage));
    await write(`${body.result.headers.map(field).join(',')}\r\n`);
  }
  let text = '';
  for (const row of body.result.rows) text += `${row.map(field).join(',')}\r\n`;
  await write(text);
  rows += body.result.rows.length;
  pages++;
  if (!body.result.navigation.hasNext) break;
  if (input.maxPages && pages >= input.maxPages) break;
}
out.end();
await finished(out);
const result: BaselineResult = { rows, pages, totalPages, loopMs: performance.now() - started };
await dispatcher.close();
process.stdout.write(`${JSON.stringify(result)}\n`);
