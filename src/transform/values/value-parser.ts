import type { TypedValue } from '../column.js';
import type { ColumnType } from '../../value-types/column-types.js';
import { parseDateIn } from './parse-date.js';
import { parseFloat64 } from './parse-float64.js';
import { parseInt64 } from './parse-int64.js';
import { parseNumeric } from './parse-numeric.js';
import { parseString } from './parse-string.js';
import { parseTimestampIn } from './parse-timestamp.js';
import type { ValueFailure } from './value-failure.js';
import { zoneClock } from './zone-clock.js';

/** Raw API value → TypedValue of one column type, or why not. */
export type ValueParser = (value: unknown) => TypedValue | ValueFailure;

/**
 * The parser for a column, chosen once per page rather than per value. Zone-dependent types get
 * a parser bound to the zone's shared clock, so its offset cache carries over between pages.
 */
export function parserFor(type: ColumnType, timeZone: string): ValueParser {
  switch (type) {
    case 'FLOAT64':
      return parseFloat64;
    case 'INT64':
      return parseInt64;
    case 'NUMERIC':
      return parseNumeric;
    case 'STRING':
      return parseString;
    case 'TIMESTAMP': {
      const clock = zoneClock(timeZone);
      return (value) => parseTimestampIn(value, clock);
    }
    case 'DATE': {
      const clock = zoneClock(timeZone);
      return (value) => parseDateIn(value, clock);
    }
  }
}
