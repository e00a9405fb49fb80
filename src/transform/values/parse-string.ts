import { ExactNumber } from '../../value-types/exact-number.js';
import { FAILURES, type ValueFailure } from './value-failure.js';

// ES2024 String well-formedness methods: present in Node 20, absent from the ES2023 lib typings.
interface WellFormedString {
  isWellFormed(): boolean;
  toWellFormed(): string;
}

/**
 * STRING, kept exactly as sent: no trimming, no normalisation — whitespace and composed vs
 * decomposed accents can matter to whoever reads the text.
 *
 * Numbers and booleans become their JSON text (12.5 → "12.5", true → "true"). A `text` column can
 * carry them when a formula yields a number (e.g. [incident.number]); the JSON text is exactly what
 * the API sent, so keeping it loses nothing, whereas failing would make the whole tile unusable.
 * A literal the JSON reader kept exact (ExactNumber) is its text as sent, digit for digit.
 * Objects and arrays fail: there is no single obvious text for them.
 *
 * A lone UTF-16 surrogate (e.g. an emoji cut in half by the service truncating a description)
 * cannot be written as UTF-8; every encoder replaces it with U+FFFD. We do so here so that all
 * sinks see the same value and a 1M-row tile does not fail over one broken character.
 */
export function parseString(value: unknown): string | null | ValueFailure {
  if (typeof value === 'string') {
    const text = value as unknown as WellFormedString;
    return text.isWellFormed() ? value : text.toWellFormed();
  }
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : FAILURES.notFinite;
  if (value instanceof ExactNumber) return value.text;
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'bigint') return String(value);
  if (value === null || value === undefined) return null;
  return FAILURES.notText;
}
