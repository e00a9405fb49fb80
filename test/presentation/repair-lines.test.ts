import { describe, expect, it } from 'vitest';
import { repairLines } from '../../src/presentation/repair-lines.js';

const RUN = 'tilehouse run --config env.yaml --jobs jobs --job open_csv';
const CLUSTER = 'kubectl create job -n tilehouse --from=cronjob/tilehouse-open-csv tilehouse-open-csv-$(date +%s)';

describe('repairLines', () => {
  it('prints a plain re-run as the commands, the first after "repair:", with its note', () => {
    expect(repairLines({ commands: [RUN, CLUSTER], note: 'the run catches up every day since the last one its targets hold' })).toEqual([
      `  repair: ${RUN}  # the run catches up every day since the last one its targets hold`,
      `          ${CLUSTER}`,
    ]);
  });

  it('leads with the edit to undo, by file and line, then the run, then the override only if the change is meant', () => {
    expect(
      repairLines({
        fixFirst: [
          { kind: 'undo', part: 'filters on Number', file: 'jobs/open_csv.yaml', line: 13, now: '[{"values":["100000"]}]', was: '[]', sinceRunId: 'R1' },
        ],
        commands: [RUN, CLUSTER],
        ifMeant: { command: `${RUN} --allow-shrink`, note: 'publishes the smaller export' },
      }),
    ).toEqual([
      '  repair: undo the edit since run R1, then run the job again:',
      '            jobs/open_csv.yaml:13: filters on Number is [{"values":["100000"]}]; set it back to []',
      `          ${RUN}`,
      `          ${CLUSTER}`,
      `          if the change is meant: ${RUN} --allow-shrink  # publishes the smaller export`,
    ]);
  });

  it('says how to undo an added and a removed part, and a value too long for a line is cut', () => {
    const long = `[${'"x",'.repeat(60)}"x"]`;
    expect(
      repairLines({
        fixFirst: [
          { kind: 'undo', part: 'item Owner', file: 'jobs/j.yaml', line: 20, now: '{"header":"Owner"}', sinceRunId: 'R1' },
          { kind: 'undo', part: 'columns', file: 'jobs/j.yaml', was: long, sinceRunId: 'R1' },
        ],
        commands: [RUN],
      }),
    ).toEqual([
      '  repair: undo the edits since run R1, then run the job again:',
      '            jobs/j.yaml:20: item Owner is new ({"header":"Owner"}); remove it',
      `            jobs/j.yaml: columns was removed; add it back: ${long.slice(0, 160)}… (whole in --json)`,
      `          ${RUN}`,
    ]);
  });

  it('names the tile id the source refuses, with the one the last publish ran with, or where to find the right one', () => {
    const refused = { kind: 'tile' as const, file: 'jobs/types.yaml', line: 2, tile: 'abc20', refusal: 'HTTP 400: invalid id' };
    expect(repairLines({ fixFirst: [{ ...refused, published: { runId: 'R1', tile: 'abc02' } }], commands: [RUN] })).toEqual([
      "  repair: fix the job's tile id, then run the job again:",
      '            jobs/types.yaml:2: tile "abc20": the source refuses it (HTTP 400: invalid id); run R1 published with tile "abc02"',
      `          ${RUN}`,
    ]);
    expect(
      repairLines({
        fixFirst: [refused, { kind: 'undo', part: 'query options', file: 'jobs/types.yaml', line: 9, now: '{"a":1}', was: '{}', sinceRunId: 'R1' }],
        commands: [RUN],
      }),
    ).toEqual([
      "  repair: fix the job's tile id and undo the edit since run R1, then run the job again:",
      `            jobs/types.yaml:2: tile "abc20": the source refuses it (HTTP 400: invalid id); the reporting module shows a tile's id under its options (export → API)`,
      '            jobs/types.yaml:9: query options is {"a":1}; set it back to {}',
      `          ${RUN}`,
    ]);
  });
});
