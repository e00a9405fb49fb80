import { daysFromCivil, MS_PER_DAY } from '../../value-types/civil-date.js';

const MS_PER_HOUR = 3_600_000;
// Beyond this many cached hours the cache starts over; a page of timestamps rarely spans more
// than a few thousand distinct hours, and the bound keeps a long-running worker's memory flat.
const MAX_CACHED_HOURS = 100_000;
const MIXED = Number.NaN;

/**
 * Conversions between instants and wall-clock time in one IANA time zone, using only Intl (the
 * tz database that ships with Node), without a date library.
 *
 * Intl is slow per call (~microseconds), and the transform is the hot path for million-row tiles,
 * so offsets are cached per UTC hour: an hour whose first and last second have the same offset
 * is taken to have that offset throughout (the tz database never changes offset twice within an
 * hour); an hour containing a transition is marked and computed exactly on every call.
 */
export class ZoneClock {
  private readonly formatter: Intl.DateTimeFormat | undefined;
  private readonly offsets = new Map<number, number>();

  constructor(readonly timeZone: string) {
    // UTC, every job's default, needs no tz data: creating the first Intl.DateTimeFormat loads
    // ICU's locale and zone data into the process (~8 MB RSS, measured), a quarter of a small
    // run's footprint. Other spellings of UTC (Etc/UTC) still go through Intl and resolve below.
    if (timeZone === 'UTC') {
      this.formatter = undefined;
      return;
    }
    const formatter = new Intl.DateTimeFormat('en-US', {
      timeZone,
      calendar: 'gregory',
      numberingSystem: 'latn',
      hourCycle: 'h23',
      era: 'short',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    this.formatter = formatter.resolvedOptions().timeZone === 'UTC' ? undefined : formatter;
  }

  /** Offset of the zone from UTC at `epochMs`, in ms (local = UTC + offset). */
  offsetAt(epochMs: number): number {
    if (this.formatter === undefined) return 0;
    const hour = Math.floor(epochMs / MS_PER_HOUR);
    let offset = this.offsets.get(hour);
    if (offset === undefined) {
      const atStart = this.computeOffset(hour * MS_PER_HOUR);
      const atEnd = this.computeOffset(hour * MS_PER_HOUR + MS_PER_HOUR - 1000);
      offset = atStart === atEnd ? atStart : MIXED;
      if (this.offsets.size >= MAX_CACHED_HOURS) this.offsets.clear();
      this.offsets.set(hour, offset);
    }
    return Number.isNaN(offset) ? this.computeOffset(epochMs) : offset;
  }

  /** The wall-clock time at `epochMs`, as epoch ms of the same wall-clock reading in UTC. */
  toWallMs(epochMs: number): number {
    return epochMs + this.offsetAt(epochMs);
  }

  /**
   * The instant at which clocks in this zone show `wallMs` (wall-clock time read as UTC).
   *
   * Around DST changes a wall-clock time can be missing (spring forward) or happen twice (fall
   * back). We resolve both like Temporal's default `disambiguation: 'compatible'` and java.time:
   * - in an overlap, the earlier instant (the first time the clock showed it, still in DST);
   * - in a gap, the time is moved forward by the length of the gap (02:30 on the day Berlin skips
   *   02:00–03:00 becomes 03:30 CEST), i.e. it is read with the offset in force before the gap.
   * Both rules are deterministic and agree with what most databases and libraries do, so the
   * same export always yields the same instants.
   */
  toInstant(wallMs: number): number {
    if (this.formatter === undefined) return wallMs;
    // Offsets a day either side bracket any transition near wallMs (no zone has two within 2 days).
    const before = this.offsetAt(wallMs - MS_PER_DAY);
    const after = this.offsetAt(wallMs + MS_PER_DAY);
    if (before === after) {
      const candidate = wallMs - before;
      if (this.offsetAt(candidate) === before) return candidate;
    }
    const earlier = wallMs - before;
    const later = wallMs - after;
    const earlierValid = this.offsetAt(earlier) === before;
    const laterValid = this.offsetAt(later) === after;
    if (earlierValid && laterValid) return Math.min(earlier, later);
    if (earlierValid) return earlier;
    if (laterValid) return later;
    return wallMs - before;
  }

  private computeOffset(epochMs: number): number {
    const wholeSecond = epochMs - (((epochMs % 1000) + 1000) % 1000);
    let era = 'AD';
    let year = 0;
    let month = 0;
    let day = 0;
    let hour = 0;
    let minute = 0;
    let second = 0;
    for (const part of this.formatter!.formatToParts(wholeSecond)) {
      switch (part.type) {
        case 'era':
          era = part.value;
          break;
        case 'year':
          year = Number(part.value);
          break;
        case 'month':
          month = Number(part.value);
          break;
        case 'day':
          day = Number(part.value);
          break;
        case 'hour':
          // Some ICU versions print midnight as 24 even with h23.
          hour = Number(part.value) % 24;
          break;
        case 'minute':
          minute = Number(part.value);
          break;
        case 'second':
          second = Number(part.value);
          break;
        default:
          break;
      }
    }
    // Intl counts years before 1 AD as "1 BC", "2 BC"…; astronomical year numbering has a year 0.
    if (era === 'BC' || era === 'B') year = 1 - year;
    const wall = daysFromCivil(year, month, day) * MS_PER_DAY + ((hour * 60 + minute) * 60 + second) * 1000;
    return wall - wholeSecond;
  }
}

const clocks = new Map<string, ZoneClock>();

/** The shared clock for `timeZone` (caches live as long as the process; zones are few). */
export function zoneClock(timeZone: string): ZoneClock {
  let clock = clocks.get(timeZone);
  if (clock === undefined) {
    clock = new ZoneClock(timeZone);
    clocks.set(timeZone, clock);
  }
  return clock;
}
