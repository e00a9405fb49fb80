import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { environmentSchema } from '../../src/config/environment-schema.js';
import { jobSchema } from '../../src/config/job-schema.js';
import type { LoadedJob } from '../../src/config/load-config.js';
import { createLogger } from '../../src/log.js';
import { probeTile } from '../../src/pipeline/probe-tile.js';
import { formatProbeReport } from '../../src/presentation/probe-report.js';
import { parseRecording, type Recording } from '../../src/source/recording.js';
import { HOSTILE_QUERY, hostileServersEachTest, tablePage, type HostileScript, type HostileServer, type Table } from '../support/hostile-server.js';

/** `probeTile` reads page 0 a second time to see whether the source keeps its row order between requests. */

const TABLE: Table = {
  headers: ['Type', 'Incidents'],
  dataTypes: ['text', 'number'],
  rows: [
    ['Outage', 3],
    ['Security', 1],
    ['Maintenance', 2],
  ],
};
const ROW_ORDER_LINE =
  '  differs: row order: page 0 came back in a different order on a second read; give the query an order on a unique number or datetime column';

const hostile = hostileServersEachTest();
const dispatcher = hostile.dispatcher;

const job: LoadedJob = {
  ...jobSchema.parse({ name: 'hostile', tile: 't-1', query: HOSTILE_QUERY, sinks: [{ type: 'csv' }] }),
  file: 'jobs/hostile.yaml',
  timezone: 'UTC',
};

async function probe(script: HostileScript): Promise<{ recording: Recording; report: string; source: HostileServer }> {
  const server = await hostile.start(script);
  const environment = environmentSchema.parse({
    source: { baseUrl: server.url, authUrl: server.url, clientId: 'hostile-id', clientSecret: '${HOSTILE_SECRET}', itemsPerPage: 2, requestTimeoutMs: 2000 },
    sinks: { csv: { directory: '/nonexistent' } },
  });
  const logger = await createLogger({ level: 'silent', destination: new Writable({ write: (_chunk, _encoding, done) => done() }) });
  const recording = await probeTile(job, {
    environment,
    credentials: { clientId: 'hostile-id', clientSecret: 'hostile-secret' },
    dispatcher,
    logger,
    pages: 9,
    withValues: false,
    version: 'test',
    retry: { maxAttempts: 3, baseDelayMs: 2, maxDelayMs: 50, budget: 20 },
  });
  return { recording, report: formatProbeReport(recording, 'probe.json'), source: server };
}

describe('probeTile: is the row order stable between requests?', () => {
  it('records rowOrderStable false and reports it when page 0 comes back reversed, with one token for every read', async () => {
    const { recording, report, source } = await probe({
      page: (request, index) => {
        const page = tablePage(TABLE, request);
        // The second request for page 0 (after pages 0 and 1) gets its rows the other way round.
        if (index === 2) (page.result.rows as unknown[][]).reverse();
        return { json: page };
      },
    });
    expect(source.pagesAsked()).toEqual([0, 1, 0]);
    expect(source.requests.filter((request) => request.endpoint === 'token')).toHaveLength(1);
    expect(recording.behaviour?.rowOrderStable).toBe(false);
    expect(recording.failure).toBeUndefined();
    expect(report.split('\n')).toContain(ROW_ORDER_LINE);
    // The field survives the file.
    expect(parseRecording(JSON.stringify(recording), 'probe.json').behaviour?.rowOrderStable).toBe(false);
  });

  it('records rowOrderStable true and prints no such line when page 0 comes back identical', async () => {
    const { recording, report } = await probe({ page: (request) => ({ json: tablePage(TABLE, request) }) });
    expect(recording.behaviour?.rowOrderStable).toBe(true);
    expect(report).not.toContain('row order');
  });

  it('says nothing about the order when the table grew between the reads (other rows, not another order)', async () => {
    const grown: Table = { ...TABLE, rows: [['New', 4], ...TABLE.rows] };
    const { recording, report } = await probe({ page: (request, index) => ({ json: tablePage(index === 2 ? grown : TABLE, request) }) });
    expect(recording.behaviour).toBeDefined();
    expect(recording.behaviour).not.toHaveProperty('rowOrderStable');
    expect(report).not.toContain('row order');
    // As a recording written before the field existed: it still parses.
    expect(parseRecording(JSON.stringify(recording), 'probe.json').behaviour).not.toHaveProperty('rowOrderStable');
  });
});
