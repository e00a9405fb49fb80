/**
 * A problem of one sink of a job, at its path in the job: what each kind's `<kind>-sink-schema.ts`
 * reports of an incremental job and `sink-schemas.ts` gathers. Its own module, so that the kinds'
 * schema files and the union that imports them do not import each other.
 */
export interface SinkIssue {
  path: PropertyKey[];
  input: unknown;
  message: string;
}
