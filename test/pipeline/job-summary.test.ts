import { describe, expect, it } from 'vitest';
import type { LoadedJob } from '../../src/config/load-config.js';
import { failedSummary, publishedSummary, type SessionCounters } from '../../src/pipeline/job-summary.js';
import { PartiallyPublishedError } from '../../src/pipeline/publish-sinks.js';
import { GcsPublishOutcomeUnknownError } from '../../src/sinks/stores/gcs/gcs-errors.js';
import type { ReadStats } from '../../src/pipeline/read-into-sinks.js';
import type { SinkResult } from '../../src/sinks/sink.js';
import { BigQuerySinkStateError, BigQueryValueError } from '../../src/sinks/bigquery/bigquery-errors.js';
import { LoadFileError } from '../../src/sinks/bigquery/ndjson-file.js';
import { GcsError } from '../../src/sinks/stores/gcs/gcs-errors.js';
import { ParquetFileInvalidError, ParquetSchemaError, ParquetValueError } from '../../src/sinks/parquet/encoder/parquet-errors.js';
import { StopDeadlineError } from '../../src/stop-deadline.js';
import { csvFormat } from '../../src/sinks/csv/csv-format.js';
import { FileWriteError } from '../../src/sinks/stores/store-errors.js';
import { ExportInconsistentError, ExportPageMismatchError } from '../../src/source/export-endpoint/export-errors.js';
import { ColumnCountMismatchError } from '../../src/transform/transform-errors.js';

// publishedSummary reads only the job's name and tile, and takes the counters as they are.
const job = {
  name: 'daily',
  tile: 't-1',
  query: { items: [{ header: 'Number', formula: '[incident.number]', dataType: 'number' }] },
  sinks: [],
} as unknown as LoadedJob;
const counters = { runId: 'nightly-1', retries: 0, throttled: 0, tokenFetches: 1, reauthentications: 0, restarts: 0, bytes: 0, targets: [] } as SessionCounters;
const stats = { rows: 160, rowsDropped: 0, pages: 4, columns: [], warnings: ['a column warning'], nulledValues: 0 } as ReadStats;
const csv: SinkResult = { sink: 'csv', target: '/out/daily.csv', rows: 160 };
const kept: SinkResult = {
  sink: 'bigquery',
  target: 'p.ops.daily',
  rows: 120,
  keptEarlierPublish: true,
  warnings: ['p.ops.daily: run id nightly-1 was already published there'],
};

describe('publishedSummary of a target that kept an earlier publish of the run id', () => {
  it("succeeds with the sink's warning added to the tile's warnings", () => {
    const summary = publishedSummary(job, Date.now(), stats, counters, { outputs: [csv, kept] });
    expect(summary).toMatchObject({
      status: 'succeeded',
      outputs: [csv, kept],
      warnings: ['a column warning', 'p.ops.daily: run id nightly-1 was already published there'],
    });
    expect(summary.error).toBeUndefined();
  });

  it('fails with run_id_already_published under --strict, naming the run id and the target', () => {
    const summary = publishedSummary(job, Date.now(), stats, counters, { outputs: [csv, kept] }, { strict: true });
    expect(summary.status).toBe('failed');
    expect(summary.error).toEqual({
      code: 'run_id_already_published',
      retryable: false,
      message:
        "job daily: run id nightly-1 was already published to p.ops.daily with other rows, which it keeps; this run's rows were not published there. Re-run with a new --run-id to publish the current data",
    });
  });

  it('stays succeeded under --strict when every target took this run (a legal re-run that changed nothing)', () => {
    const adoptedSame: SinkResult = { sink: 'bigquery', target: 'p.ops.daily', rows: 160, details: { adopted: true } };
    expect(publishedSummary(job, Date.now(), stats, counters, { outputs: [csv, adoptedSame] }, { strict: true })).toMatchObject({
      status: 'succeeded',
      warnings: ['a column warning'],
    });
  });
});

describe('a gs:// publish whose outcome is unknown', () => {
  const target = 'gs://exports/daily.csv';
  const unknown = new GcsPublishOutcomeUnknownError(
    target,
    "rewriting the temp object onto the target failed (no answer); whether the target now holds this run's object is unknown",
  );

  it('after another sink published: the target is listed as unknown, not among those still holding the previous run', () => {
    const partial = new PartiallyPublishedError('daily', [csv], [target, 'p.ops.daily'], unknown, false, true);
    const summary = publishedSummary(job, Date.now(), stats, counters, { outputs: [csv], partial });
    expect(summary).toMatchObject({ status: 'partially_published', outcomeUnknown: [target], unpublished: ['p.ops.daily'] });
    expect(summary.mixed).toBeUndefined();
    expect(summary.error?.message).not.toMatch(/previous run still in: [^.]*gs:\/\/exports/);
  });

  it('after a stop keeps its own error: "every target still holds its previous run" is not known', () => {
    const stop = new AbortController();
    stop.abort(new Error('stopped by SIGTERM'));
    const summary = failedSummary(job, Date.now(), stats, counters, unknown, stop.signal);
    expect(summary.error).toEqual({ code: 'publish_outcome_unknown', message: `job daily: ${unknown.message}`, retryable: true, targetKind: 'gcs' });
  });
});

// What throws deep in a run often cannot know the job (a value encoder, a page's shape, a deadline):
// the tile's summary, which orchestrators and the run ledger read on their own, names it all the same.
describe('a failed tile names its job, whatever raised the error', () => {
  it.each([
    ['a Parquet value', new ParquetValueError('n', 1n, 'does not fit'), 'parquet_value_invalid'],
    ['a Parquet schema', new ParquetSchemaError('a Parquet file needs at least one column'), 'parquet_schema_invalid'],
    ['a Parquet target read back', new ParquetFileInvalidError('/out/x.parquet', '3 bytes'), 'target_unreadable'],
    ['a BigQuery value', new BigQueryValueError('n', '1e999', 'is not a finite FLOAT64'), 'bigquery_value_invalid'],
    ['a BigQuery row of the wrong width', new BigQuerySinkStateError('a row has 2 values for 3 columns'), 'internal_error'],
    ["a page's columns", new ColumnCountMismatchError(3, 2), 'column_count_mismatch'],
    ['the stop deadline', new StopDeadlineError(5000, 'SIGTERM'), 'stop_deadline_passed'],
    ['a temp object met in an upload', new GcsError('write_failed', 'gs://b/.x.tmp', 'session gone'), 'write_failed'],
    ['a bug', new TypeError('x is undefined'), 'internal_error'],
  ])('%s', (_, error, code) => {
    const summary = failedSummary(job, Date.now(), stats, counters, error);
    expect(summary.error).toMatchObject({ code, message: `job daily: ${error.message}` });
  });

  it("the BigQuery load file names the job itself, and its sink's kind", () => {
    const error = new LoadFileError('daily', '/tmp/x.ndjson', 'writing it', new Error('EIO'));
    expect(failedSummary(job, Date.now(), stats, counters, error).error).toEqual({
      code: 'write_failed',
      message: 'job daily: load file /tmp/x.ndjson: writing it failed: EIO',
      retryable: true,
      targetKind: 'bigquery',
    });
  });

  it('names it once when the message does already', () => {
    const named = new GcsError('write_failed', { jobName: 'daily', format: 'csv', url: 'gs://b/x.csv' }, 'rewriting failed');
    expect(failedSummary(job, Date.now(), stats, counters, named).error).toEqual({
      code: 'write_failed',
      message: 'job daily: csv gs://b/x.csv: rewriting failed',
      retryable: true,
      targetKind: 'gcs',
      format: 'csv',
    });
  });
});

// An error that quotes another error of the same job (a partial publish its cause, an inconsistent
// export its two reads) names the job once, at its start, as every message does.
describe('an error quoting another of the same job names the job once', () => {
  it('a partial publish whose failed target names the job', () => {
    const cause = new FileWriteError(csvFormat, 'daily', '/out/daily.csv', 'renaming the temp file', new Error('EIO'));
    const partial = new PartiallyPublishedError('daily', [kept], ['/out/daily.csv'], cause);
    expect(publishedSummary(job, Date.now(), stats, counters, { outputs: [kept], partial }).error).toEqual({
      code: 'partially_published',
      retryable: true,
      message:
        'job daily: /out/daily.csv failed to publish (write_failed: csv /out/daily.csv: renaming the temp file failed: EIO); new run in: p.ops.daily; ' +
        'previous run still in: /out/daily.csv. A re-run replaces all of them (append: re-run with the same --run-id so the rows are not appended twice)',
    });
  });

  it('an export inconsistent on both reads', () => {
    const read = (page: number) => new ExportPageMismatchError('daily', page, 'totalRows', 'was 160, now 161', true);
    expect(failedSummary(job, Date.now(), stats, counters, new ExportInconsistentError('daily', read(2), read(0))).error).toEqual({
      code: 'export_inconsistent',
      retryable: true,
      message:
        'job daily: export inconsistent twice; first read: page 2: check "totalRows" failed: was 160, now 161; re-read from page 0: page 0: check "totalRows" failed: was 160, now 161',
    });
  });
});

describe('failedSummary', () => {
  it('lists no target as written: what the run opened is attempted', () => {
    const opened = { ...counters, targets: ['/out/daily.csv', 'p.ops.daily'] };
    const summary = failedSummary(job, Date.now(), stats, opened, new Error('boom'));
    expect(summary).toMatchObject({ status: 'failed', targets: [], attempted: ['/out/daily.csv', 'p.ops.daily'], outputs: [] });
  });

  it('carries the fingerprint of the job it ran, as a succeeded one does', () => {
    const failed = failedSummary(job, Date.now(), stats, counters, new Error('boom'));
    expect(failed.definition?.fingerprint).toMatch(/^[0-9a-f]{12}$/);
    expect(publishedSummary(job, Date.now(), stats, counters, { outputs: [csv] }).definition).toEqual(failed.definition);
  });
});
