/**
 * A JSON number literal kept as written, because a double cannot represent it exactly. The source
 * makes these while reading a response body (source/json-body.ts); transform reads them into
 * INT64, NUMERIC, STRING and the time types; so the class lives below both.
 */
export class ExactNumber {
  constructor(
    /** The literal exactly as the body wrote it, e.g. "-12345678901234567.5" or "1E+400". */
    readonly text: string,
  ) {
    Object.freeze(this);
  }

  toString(): string {
    return this.text;
  }

  /** JSON.stringify cannot write raw number text in Node 20; the exact text as a string beats a rounded number. */
  toJSON(): string {
    return this.text;
  }
}
