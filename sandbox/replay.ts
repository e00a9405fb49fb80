import { type RecordedPage, type Recording, type ValueShape } from '../src/source/recording.js';
import type { HttpAnswer } from './http-answer.js';
import { toObjectRow, type WireCell } from './wire-format.js';

/**
 * Serves a tenant's recording (`tilehouse probe --record FILE`) as the export endpoint: the same
 * navigation, headers, dataTypes, echo and row shape, and values of the recorded shapes.
 *
 * - Row `i` of the whole result (pages are contiguous from 0) is the recorded row `i` when the
 *   recording carries values, else a value synthesized from `i` and the column's recorded shapes
 *   (deterministic: the same request always gets the same bytes).
 * - Pages beyond the recorded ones are synthesized until the recorded totalRows, so a probe of 3
 *   pages of a 40-page tile replays as the whole tile.
 * - A page the recording holds, asked with the recorded itemsPerPage, gets its recorded navigation
 *   verbatim (an odd hasNext included); other pages get navigation computed from totalRows, the
 *   page size (the recorded cap, if the tenant served fewer rows than asked) and the recorded
 *   hasPrev behaviour.
 * - The echo follows the recorded behaviour: `request` → the recorded echo with this request's
 *   pageNumber and itemsPerPage; `saved-query` / `mixed` → the recorded echo as is (page 0's for
 *   pages not recorded); `absent` → no `query`.
 */
export interface Replay {
  recording: Recording;
  /** The tile id to accept (the recording's). */
  tile: string;
  /** The export answer to a valid, authenticated request body. */
  answer(body: unknown): HttpAnswer;
}

const isRecord = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** All recorded pages' shapes of each column, merged (counts added, lengths widened). */
function mergedShapes(pages: readonly RecordedPage[], columns: number): ValueShape[][] {
  return Array.from({ length: columns }, (_, column) => {
    const merged = new Map<string, ValueShape>();
    for (const page of pages) {
      for (const shape of page.columns[column] ?? []) {
        const key = `${shape.type}/${shape.class}`;
        const known = merged.get(key);
        if (known === undefined) {
          merged.set(key, { ...shape });
          continue;
        }
        known.count += shape.count;
        if (shape.minLength !== undefined) known.minLength = Math.min(known.minLength ?? shape.minLength, shape.minLength);
        if (shape.maxLength !== undefined) known.maxLength = Math.max(known.maxLength ?? shape.maxLength, shape.maxLength);
      }
    }
    return [...merged.values()];
  });
}

const BASE_MS = Date.UTC(2026, 0, 1);
const pad = (n: number, width = 2): string => String(n).padStart(width, '0');

function isoParts(ms: number): { date: string; time: string; millis: string } {
  const d = new Date(ms);
  return {
    date: `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`,
    time: `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`,
    millis: `.${pad(d.getUTCMilliseconds(), 3)}`,
  };
}

/** A length within the recorded range, varying with the row. */
function targetLength(shape: ValueShape, row: number): number {
  const min = shape.minLength ?? 0;
  const max = Math.max(shape.maxLength ?? min, min);
  return min + (row % (max - min + 1));
}

/** A value of `shape` for row `row`, column `column`: deterministic, distinct per row where the shape allows. */
export function synthesizeValue(shape: ValueShape, row: number, column: number): unknown {
  const ms = BASE_MS + row * 60_000 + column * 1000;
  const withMillis = (longest: number): boolean => (shape.maxLength ?? 0) >= longest;
  switch (shape.class) {
    case 'null':
      return null;
    case 'boolean':
      return row % 2 === 0;
    case 'integer':
      return row + 1;
    case 'decimal':
      return row + 0.25;
    case 'epoch-ms':
      return ms;
    case 'epoch-s':
      return Math.floor(ms / 1000);
    case 'timestamp-object':
      return { $date: ms };
    case 'object':
      return {};
    case 'array':
      return [];
    case 'empty':
      return '';
    case 'numeric':
      return String(row + 1).padStart(shape.minLength ?? 1, '0');
    case 'iso-utc': {
      const { date, time, millis } = isoParts(ms);
      return `${date}T${time}${withMillis(24) ? millis : ''}Z`;
    }
    case 'iso-offset': {
      // +02:00: the wall clock two hours ahead of UTC, the same instant.
      const { date, time, millis } = isoParts(ms + 2 * 3_600_000);
      return `${date}T${time}${withMillis(29) ? millis : ''}+02:00`;
    }
    case 'iso-local': {
      const { date, time, millis } = isoParts(ms);
      return `${date}T${time}${withMillis(23) ? millis : ''}`;
    }
    case 'date':
      return isoParts(BASE_MS + row * 86_400_000).date;
    case 'year-month':
      return isoParts(BASE_MS + row * 86_400_000 * 31).date.slice(0, 7);
    case 'percentage':
      return `${(row % 1000) / 10}%`;
    case 'url':
      return `https://replay.invalid/r/${row}`;
    case 'text': {
      const text = `r${row}c${column}`;
      return text.length >= targetLength(shape, row) ? text : text.padEnd(targetLength(shape, row), 'x');
    }
  }
}

/** Row `row`'s cell of a column with these shapes: shapes are spread over the rows in proportion to their counts. */
function synthesizeCell(shapes: readonly ValueShape[], row: number, column: number): unknown {
  const total = shapes.reduce((sum, shape) => sum + shape.count, 0);
  if (total === 0) return null;
  let pick = (Math.imul(row + 1, 0x9e3779b1) ^ Math.imul(column + 1, 0x85ebca6b)) >>> 0;
  pick %= total;
  for (const shape of shapes) {
    if (pick < shape.count) return synthesizeValue(shape, row, column);
    pick -= shape.count;
  }
  return null;
}

export function createReplay(recording: Recording): Replay {
  const pages = [...recording.pages].sort((a, b) => a.pageNumber - b.pageNumber);
  const first = pages[0];
  if (first === undefined || first.pageNumber !== 0) throw new Error('the recording holds no page 0 to replay (the probe failed before it)');
  const behaviour = recording.behaviour;
  const byNumber = new Map(pages.map((page) => [page.pageNumber, page]));
  const totalRows = first.navigation.totalRows;
  // Recorded rows by their index in the whole result: pages 0..k in a row, each with its values.
  const recordedRows: unknown[] = [];
  for (const [index, page] of pages.entries()) {
    if (page.pageNumber !== index || page.values === undefined) break;
    recordedRows.push(...page.values);
  }
  const shapes = mergedShapes(pages, first.headers.length);

  const hasPrevOf = (pageNumber: number): boolean => {
    switch (behaviour?.hasPrev) {
      case 'always-false':
        return false;
      case 'always-true':
        return true;
      default:
        return pageNumber > 0;
    }
  };

  const echoOf = (recorded: RecordedPage | undefined, pageNumber: number, itemsPerPage: number): { query?: unknown } => {
    const source = recorded ?? first;
    if (!('query' in source) || behaviour?.echo === 'absent') return {};
    if (behaviour?.echo === 'request' && isRecord(source.query)) {
      const options = isRecord(source.query.options) ? source.query.options : {};
      return { query: { ...source.query, options: { ...options, pageNumber, itemsPerPage } } };
    }
    return { query: source.query };
  };

  return {
    recording,
    tile: recording.tile,
    answer(body) {
      const options = isRecord(body) && isRecord(body.options) ? body.options : {};
      const pageNumber = Number.isInteger(options.pageNumber) && (options.pageNumber as number) >= 0 ? (options.pageNumber as number) : 0;
      const asked = Number.isInteger(options.itemsPerPage) && (options.itemsPerPage as number) > 0 ? (options.itemsPerPage as number) : recording.itemsPerPage;
      const pageSize = Math.min(asked, behaviour?.pageSizeCap ?? asked);
      const recorded = byNumber.get(pageNumber);
      const template = recorded ?? first;
      const start = Math.min(pageNumber * pageSize, totalRows);
      const end = Math.min(start + pageSize, totalRows);
      const rows: unknown[] = [];
      for (let row = start; row < end; row++) {
        if (row < recordedRows.length) {
          rows.push(recordedRows[row]);
          continue;
        }
        const cells = template.headers.map((_header, column) => synthesizeCell(shapes[column] ?? [], row, column));
        rows.push(template.rowShape === 'object' ? toObjectRow(template.headers, cells as WireCell[]) : cells);
      }
      const navigation =
        recorded !== undefined && recorded.itemsPerPage === asked
          ? recorded.navigation
          : { hasPrev: hasPrevOf(pageNumber), hasNext: end < totalRows, rowsCount: rows.length, totalRows };
      return {
        status: 200,
        body: {
          ok: true,
          result: {
            navigation,
            headers: [...template.headers],
            dataTypes: [...template.dataTypes],
            rows,
            sourceImported: false,
            ...echoOf(recorded, pageNumber, asked),
          },
        },
      };
    },
  };
}
