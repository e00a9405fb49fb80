import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FilePathInvalidError } from '../../../src/sinks/files/file-errors.js';
import { FilePathTemplate, templateDirectory } from '../../../src/sinks/files/path-template.js';
import { csvFormat } from '../../../src/sinks/csv/csv-format.js';
import { CsvSink } from '../../../src/sinks/csv/csv-sink.js';
import { makeContext, makeSink } from '../csv/csv-test-support.js';

const directory = resolve('/srv/exports');
const context = makeContext([]);

describe('CSV output path', () => {
  it('defaults to {name}.csv under the CSV directory', () => {
    expect(makeSink(directory).targetFor(context)).toBe(join(directory, 'weekly_incidents.csv'));
  });

  it('defaults to {name}.csv.gz when gzip is on', () => {
    expect(makeSink(directory, { gzip: true }).targetFor(context)).toBe(join(directory, 'weekly_incidents.csv.gz'));
  });

  it('substitutes {name}, {tile}, {date} and {runId}', () => {
    const sink = makeSink(directory, { path: '{tile}/{date}/{name}-{runId}.csv' });
    expect(sink.targetFor(context)).toBe(join(directory, 'tile-42/2026-11-21/weekly_incidents-20261121T213005Z-9f2c1a.csv'));
  });

  it('uses the run start date in the job zone for {date}', () => {
    const sink = makeSink(directory, { path: '{date}.csv' }, 'Pacific/Auckland');
    // 2026-11-21T21:30:05Z is already the 22nd in New Zealand.
    expect(sink.targetFor(context)).toBe(join(directory, '2026-11-22.csv'));
    expect(makeSink(directory, { path: '{date}.csv' }, 'America/Los_Angeles').targetFor(context)).toBe(join(directory, '2026-11-21.csv'));
  });

  it('uses the window start for {date} in backfills', () => {
    const sink = makeSink(directory, { path: '{date}.csv' });
    expect(sink.targetFor({ ...context, window: { from: '2026-01-01', to: '2026-02-01' } })).toBe(join(directory, '2026-01-01.csv'));
  });

  it('sanitises the tile id for file names', () => {
    const sink = makeSink(directory, { path: '{tile}.csv' });
    expect(sink.targetFor({ ...context, tileId: 'a/b c:d' })).toBe(join(directory, 'a_b_c_d.csv'));
    expect(sink.targetFor({ ...context, tileId: '..' })).toBe(join(directory, '_..csv'));
    expect(sink.targetFor({ ...context, tileId: '../../etc/passwd' })).toBe(join(directory, '_._.._etc_passwd.csv'));
  });

  it('keeps absolute templates where they point', () => {
    expect(makeSink(directory, { path: '/var/out/{name}.csv' }).targetFor(context)).toBe(resolve('/var/out/weekly_incidents.csv'));
  });

  it.each([
    ['{nmae}.csv', 'unknown placeholder {nmae}'],
    ['{}.csv', 'unknown placeholder {}'],
    ['{name.csv', 'unbalanced'],
    ['name}.csv', 'unbalanced'],
    ['../{name}.csv', '".."'],
    ['out/../../{name}.csv', '".."'],
    ['/var/out/../{name}.csv', '".."'],
    ['out/', 'directory'],
  ])('refuses the template %j at construction (%s)', (path, reason) => {
    const build = () => new CsvSink({ config: { type: 'csv', gzip: false, path }, directory, timezone: 'UTC' });
    expect(build).toThrow(FilePathInvalidError);
    expect(build).toThrow(expect.objectContaining({ code: 'path_invalid', exitCode: 2, message: expect.stringContaining(reason) }));
  });

  it('refuses a {date} that is not YYYY-MM-DD, naming the job whose run resolved it', () => {
    expect(() => new FilePathTemplate(csvFormat, '{date}.csv').resolve({ name: 'n', tile: 't', runId: 'r', date: '../x' }, directory)).toThrow(
      expect.objectContaining({
        code: 'path_invalid',
        format: 'csv',
        targetKind: 'local',
        message: 'job n: csv path "{date}.csv": {date} must be YYYY-MM-DD, got "../x"',
      }),
    );
  });

  it('never resolves outside the CSV directory for a relative template', () => {
    for (const tile of ['..', '../..', '/', '\\..\\..', '.hidden', '']) {
      const target = new FilePathTemplate(csvFormat, '{tile}/{tile}.csv').resolve({ name: 'n', tile, runId: 'r', date: '2026-01-01' }, directory);
      expect(target.startsWith(`${directory}/`)).toBe(true);
    }
  });

  it('resolves under a CSV directory that is the file-system root', () => {
    expect(new FilePathTemplate(csvFormat, '{name}.csv').resolve({ name: 'n', tile: 't', runId: 'r', date: '2026-01-01' }, '/')).toBe('/n.csv');
  });
});

describe('FilePathTemplate (CSV).sweepScope', () => {
  it('sweeps only the directory a template writes into, recursively only below a placeholder', () => {
    const scope = (template: string) => new FilePathTemplate(csvFormat, template).sweepScope(directory);
    expect(scope('{name}.csv')).toEqual({ root: directory, recursive: false });
    expect(scope('exports/{name}.csv')).toEqual({ root: join(directory, 'exports'), recursive: false });
    expect(scope('{name}/{date}.csv')).toEqual({ root: directory, recursive: true });
    expect(scope('a/b/{tile}/{date}/{name}.csv')).toEqual({ root: join(directory, 'a', 'b'), recursive: true });
    expect(scope('/abs/out/{tile}/x.csv')).toEqual({ root: '/abs/out', recursive: true });
    expect(scope('/abs/x.csv')).toEqual({ root: '/abs', recursive: false });
    expect(scope('/{tile}.csv')).toEqual({ root: '/', recursive: false });
  });
});

describe('FilePathTemplate.targetKey (what validate compares before a run)', () => {
  const key = (template: string, under: string) => new FilePathTemplate(csvFormat, template).targetKey({ name: 'daily/../x', tile: 'T 1' }, under);

  it('fills {name} and {tile} file-name-safe, keeps {date} and {runId}, and places the key as a run places its target', () => {
    expect(key('{name}/{date}.csv', directory)).toBe(join(directory, 'daily_.._x', '{date}.csv'));
    expect(key('/abs/{tile}-{runId}.csv', directory)).toBe('/abs/T_1-{runId}.csv');
    expect(key('{tile}.csv', 'gs://bucket/prefix/')).toBe('gs://bucket/prefix/T_1.csv');
    expect(key('gs://bucket/{name}.csv', directory)).toBe('gs://bucket/daily_.._x.csv');
    // An absolute template ignores a gs:// directory, as resolve does.
    expect(key('/abs/{name}.csv', 'gs://bucket')).toBe('/abs/daily_.._x.csv');
  });
});

describe('templateDirectory (the pod directory of an absolute template)', () => {
  it('is the folders before the first placeholder, or the root', () => {
    expect(templateDirectory('/exports/{tile}/{date}.csv')).toBe('/exports');
    expect(templateDirectory('/a/b/{name}.csv')).toBe('/a/b');
    expect(templateDirectory('/x.csv')).toBe('/');
    expect(templateDirectory('/{tile}/x.csv')).toBe('/');
  });
});
