import type { CsvSinkConfig } from '../../config/job-schema.js';
import type { Sink, SinkPlan, SinkRunContext, SinkWriter } from '../sink.js';
import { CsvFileWriter } from './csv-file-writer.js';
import { manifestPathOf } from './manifest.js';
import { CsvPathTemplate, defaultCsvPathTemplate } from './csv-path.js';
import { readCsvHeader } from './read-header.js';
import { removeStaleTempFiles, tempPathFor } from './temp-files.js';
import { calendarDateIn } from '../../transform/calendar.js';

export interface CsvSinkOptions {
  config: CsvSinkConfig;
  /** The environment's CSV directory; relative path templates resolve under it. */
  directory: string;
  /** The job's IANA zone; `{date}` of a scheduled run is the run's start date there. */
  timezone: string;
}

/**
 * Writes each run of a tile to one CSV file (optionally gzip-compressed), replacing the previous
 * file atomically on commit. See CSV_DIALECT for the exact format.
 */
export class CsvSink implements Sink {
  readonly kind = 'csv' as const;
  // Last: a rename in a directory we just wrote to is the publish least likely to fail.
  readonly publishRank = 10;
  private readonly template: CsvPathTemplate;

  /** Throws CsvPathInvalidError for a bad path template, so configuration checks catch it. */
  constructor(private readonly options: CsvSinkOptions) {
    this.template = new CsvPathTemplate(options.config.path ?? defaultCsvPathTemplate(options.config.gzip));
  }

  /** The output path for a run (exposed for `validate`/dry runs and tests). */
  targetFor(context: Pick<SinkRunContext, 'jobName' | 'tileId' | 'runId' | 'startedAt' | 'window'>): string {
    return this.template.resolve(
      {
        name: context.jobName,
        tile: context.tileId,
        runId: context.runId,
        date: context.window?.from ?? calendarDateIn(context.startedAt, this.options.timezone),
      },
      this.options.directory,
    );
  }

  /** Temp files of dead runs, looked for only where this sink's template can put files. */
  sweep(): Promise<string[]> {
    const { root, recursive } = this.template.sweepScope(this.options.directory);
    return removeStaleTempFiles(root, { recursive });
  }

  /** Compares the run's headers with the existing file's header row (CSV has no types to compare). */
  async plan(context: SinkRunContext): Promise<SinkPlan> {
    const target = this.targetFor(context);
    const existing = await readCsvHeader(target, this.options.config.gzip);
    if (existing === undefined) return { sink: 'csv', target, action: 'create', details: [] };
    const headers = context.columns.map((column) => column.header);
    const details = [
      ...headers.filter((header) => !existing.includes(header)).map((header) => `+ ${header}`),
      ...existing.filter((header) => !headers.includes(header)).map((header) => `- ${header}`),
    ];
    if (details.length === 0 && existing.join('\u0000') !== headers.join('\u0000')) details.push(`~ column order: ${existing.join(', ')} → ${headers.join(', ')}`);
    return { sink: 'csv', target, action: details.length === 0 ? 'unchanged' : 'change', details };
  }

  async open(context: SinkRunContext): Promise<SinkWriter> {
    const target = this.targetFor(context);
    const options = {
      jobName: context.jobName,
      target,
      tempPath: tempPathFor(target, context.runId),
      columns: context.columns,
      gzip: this.options.config.gzip,
      logger: context.logger,
      ...(context.signal ? { signal: context.signal } : {}),
      ...(this.options.config.manifest === true
        ? { manifest: { tempPath: tempPathFor(manifestPathOf(target), context.runId), runId: context.runId, ...(context.window ? { window: context.window } : {}) } }
        : {}),
    };
    return CsvFileWriter.open(options);
  }
}
