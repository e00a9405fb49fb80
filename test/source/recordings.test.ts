import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseRecording, type Recording } from '../../src/source/recording.js';
import { listFiles, runCli, sandboxEnv, writeWorkspace } from '../support/cli-harness.js';
import { readCsv } from '../support/csv-read.js';
import { sandboxesEachTest } from '../support/sandbox-fixture.js';

/**
 * Issue 19: every recording in test/fixtures/recordings/ is a test. A user's `tilehouse probe
 * --record FILE` attached to a bug report becomes one by dropping the file there: the sandbox
 * replays it (same navigation, headers, dataTypes, echo, value shapes), tilehouse runs the
 * recorded job against the replay, and the export must be exact: exit 0, one CSV row per
 * totalRows, and where the recording carries values, the CSV holds exactly those values.
 */

const DIRECTORY = fileURLToPath(new URL('../fixtures/recordings/', import.meta.url));
const FILES = readdirSync(DIRECTORY)
  .filter((name) => name.endsWith('.json'))
  .sort();

const isRecord = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** The CSV text tilehouse writes for a recorded wire value of this dataType (null: an empty field). */
function expectedCell(value: unknown, dataType: string): string | null {
  if (value === null || value === undefined) return null;
  if (dataType === 'datetime') {
    const ms = isRecord(value) && '$date' in value ? value.$date : value;
    return new Date(typeof ms === 'number' ? ms : Date.parse(String(ms))).toISOString();
  }
  return String(value);
}

/** The recorded rows in order, as positional cells (object rows read by header). */
function recordedRows(recording: Recording): { headers: string[]; dataTypes: string[]; rows: unknown[][] } | undefined {
  const pages = [...recording.pages].sort((a, b) => a.pageNumber - b.pageNumber);
  if (pages.length === 0 || pages.some((page, index) => page.pageNumber !== index || page.values === undefined)) return undefined;
  const { headers, dataTypes } = pages[0]!;
  const rows = pages.flatMap((page) =>
    page.values!.map((row) => (Array.isArray(row) ? row : headers.map((header) => (row as Record<string, unknown>)[header]))),
  );
  return { headers, dataTypes, rows };
}

describe('recordings in test/fixtures/recordings/', () => {
  it('holds the sandbox-made fixtures at least, one of them with its values (so a CSV is compared cell by cell below)', () => {
    expect(FILES).toEqual(expect.arrayContaining(['sandbox-saved-query-echo.json', 'sandbox-gzip-objects-iso-no-echo.json']));
    const withValues = parseRecording(readFileSync(path.join(DIRECTORY, 'sandbox-gzip-objects-iso-no-echo.json'), 'utf8'), 'with values');
    expect(withValues.withValues).toBe(true);
  });

  const each = sandboxesEachTest();
  for (const name of FILES) {
    it(`${name}: replayed, tilehouse exports it exactly`, async () => {
      const file = path.join(DIRECTORY, name);
      const recording = parseRecording(readFileSync(file, 'utf8'), file);
      const replay = await each.sandbox({ replay: recording });
      const root = await each.tempDir();
      const workspace = await writeWorkspace(root, replay, [{ name: recording.job, tile: recording.tile, query: recording.query, sinks: [{ type: 'csv' }] }], {
        tileParam: recording.tileParam,
        itemsPerPage: recording.itemsPerPage,
      });
      const result = await runCli(['run', '--config', workspace.configFile, '--jobs', workspace.jobsDir], { env: sandboxEnv(replay) });
      const failure = result.logs.find((line) => typeof line.code === 'string' && line.level !== undefined && Number(line.level) >= 50);
      expect({ exitCode: result.exitCode, code: failure?.code }).toEqual({ exitCode: 0, code: undefined });
      const [csv, ...others] = await listFiles(workspace.outDir);
      expect(others.filter((other) => other.endsWith('.csv'))).toEqual([]);
      const written = await readCsv(path.join(workspace.outDir, csv!));
      const totalRows = recording.pages[0]!.navigation.totalRows;
      expect(written.rows).toHaveLength(totalRows);
      // Where the recording carries the values (withValues), the CSV holds exactly them; a
      // recording without them is checked by its counts only.
      const recorded = recordedRows(recording);
      expect(recorded !== undefined, 'every page recorded with values, in order').toBe(recording.withValues);
      if (recorded !== undefined) {
        expect(recorded.rows).toHaveLength(totalRows);
        const expected = recorded.rows.map((row) => row.map((value, column) => expectedCell(value, recorded.dataTypes[column]!)));
        expect(written.rows).toEqual(expected);
      }
    });
  }
});
