import { describe, expect, it } from 'vitest';
import { PartiallyPublishedError, publishAll, RunStoppedError } from '../../src/pipeline/publish-sinks.js';
import { FakeWriter, silentLogger, type FakeWriterOptions } from '../support/fake-sinks.js';

function writers(specs: Array<[string, FakeWriterOptions?]>): { log: string[]; writers: FakeWriter[] } {
  const log: string[] = [];
  return { log, writers: specs.map(([target, options]) => new FakeWriter(target, log, options)) };
}

const options = { jobName: 'weekly', logger: silentLogger };

describe('publishAll', () => {
  it('prepares every sink before publishing any, then publishes in the given order', async () => {
    const { log, writers: all } = writers([['bq'], ['a.csv'], ['b.csv']]);
    const outcome = await publishAll(all, options);
    expect(log).toEqual(['prepare bq', 'prepare a.csv', 'prepare b.csv', 'publish bq', 'publish a.csv', 'publish b.csv']);
    expect(outcome).toEqual({ outputs: all.map((w) => ({ sink: 'csv', target: w.target, rows: 0 })) });
  });

  it('on a prepare failure publishes nothing, aborts every writer and rethrows', async () => {
    const { log, writers: all } = writers([['bq'], ['a.csv', { failIn: ['prepare'] }], ['b.csv']]);
    await expect(publishAll(all, options)).rejects.toThrow('a.csv prepare failed');
    expect(log.filter((line) => line.startsWith('publish'))).toEqual([]);
    expect(log.filter((line) => line.startsWith('abort'))).toEqual(['abort bq', 'abort a.csv', 'abort b.csv']);
    // Sinks after the failing one are not prepared.
    expect(log).not.toContain('prepare b.csv');
  });

  it('on a failure at the first publish reports a plain failure and aborts everything', async () => {
    const { log, writers: all } = writers([['bq', { failIn: ['publish'] }], ['a.csv']]);
    const outcome = publishAll(all, options);
    await expect(outcome).rejects.toThrow('bq publish failed');
    await expect(outcome).rejects.not.toBeInstanceOf(PartiallyPublishedError);
    expect(log).toEqual(['prepare bq', 'prepare a.csv', 'publish bq', 'abort bq', 'abort a.csv']);
  });

  it('on a failure at the second publish reports partially_published, naming published and unpublished targets', async () => {
    const { log, writers: all } = writers([['bq'], ['a.csv', { failIn: ['publish'] }], ['b.csv']]);
    const outcome = await publishAll(all, options);
    expect(outcome.outputs.map((o) => o.target)).toEqual(['bq']);
    expect(outcome.partial).toBeInstanceOf(PartiallyPublishedError);
    expect(outcome.partial).toMatchObject({ code: 'partially_published', unpublished: ['a.csv', 'b.csv'], published: [{ target: 'bq' }] });
    expect(outcome.partial!.message).toContain('a.csv failed to publish');
    expect(outcome.partial!.message).toContain('new run in: bq');
    expect(outcome.partial!.message).toContain('previous run still in: a.csv, b.csv');
    expect((outcome.partial!.cause as Error).message).toBe('a.csv publish failed');
    // The published writer is not aborted; the failed one and the rest are, and the rest never publish.
    expect(log).toEqual(['prepare bq', 'prepare a.csv', 'prepare b.csv', 'publish bq', 'publish a.csv', 'abort a.csv', 'abort b.csv']);
  });

  describe('a publish that changed its own target in part (partialPublish: true)', () => {
    /** What a sink throws when some of its atomic steps published (BigQuery: some partition copies). */
    const changedInPart = (target: string) => () => {
      throw Object.assign(new Error(`${target}: partitions 20240301 hold the new run, 20240302 still the previous one`), { partialPublish: true as const });
    };

    it('at the first publish is partially_published, naming that target among the unpublished ones', async () => {
      const { log, writers: all } = writers([['bq', { during: { publish: changedInPart('bq') } }], ['a.csv']]);
      const outcome = await publishAll(all, options);
      expect(outcome.outputs).toEqual([]);
      expect(outcome.partial).toBeInstanceOf(PartiallyPublishedError);
      expect(outcome.partial).toMatchObject({ code: 'partially_published', published: [], unpublished: ['bq', 'a.csv'], changedInPart: true });
      expect(outcome.partial!.message).toBe(
        'job weekly: bq failed to publish after changing part of it (bq: partitions 20240301 hold the new run, 20240302 still the previous one); ' +
          'new run in: part of bq; previous run still in: the rest of bq, a.csv. A re-run replaces all of them' +
          ' (append: re-run with the same --run-id so the rows are not appended twice)',
      );
      // The later sink never publishes: the run stops at the first failure, as at any index.
      expect(log).toEqual(['prepare bq', 'prepare a.csv', 'publish bq', 'abort bq', 'abort a.csv']);
    });

    it('at a later publish lists the earlier targets and part of the failed one as holding the new run', async () => {
      const { writers: all } = writers([['a.csv'], ['bq', { during: { publish: changedInPart('bq') } }], ['b.csv']]);
      const outcome = await publishAll(all, options);
      expect(outcome.partial).toMatchObject({ published: [{ target: 'a.csv' }], unpublished: ['bq', 'b.csv'], changedInPart: true });
      expect(outcome.partial!.message).toContain('new run in: a.csv, part of bq; previous run still in: the rest of bq, b.csv.');
    });

    it('only partialPublish === true counts: any other value at the first publish is a plain failure', async () => {
      for (const value of [false, 'true', 1]) {
        const failure = Object.assign(new Error('bq publish failed'), { partialPublish: value });
        const { writers: all } = writers([['bq', { during: { publish: () => Promise.reject(failure) } }], ['a.csv']]);
        await expect(publishAll(all, options)).rejects.toBe(failure);
      }
    });
  });

  describe('a publish whose outcome is unknown (publishOutcomeUnknown: true)', () => {
    /** What the gs:// writer throws when its rewrite got no answer and the target could not be read. */
    const unknown = (target: string) => () => {
      throw Object.assign(new Error(`csv ${target}: whether the target now holds this run's object is unknown`), { publishOutcomeUnknown: true as const });
    };

    it('at a later publish names the target as unknown, never as still holding the previous run', async () => {
      const { writers: all } = writers([['a.csv'], ['gs://b/x.csv', { during: { publish: unknown('gs://b/x.csv') } }], ['b.csv']]);
      const outcome = await publishAll(all, options);
      expect(outcome.partial).toMatchObject({
        published: [{ target: 'a.csv' }],
        unpublished: ['gs://b/x.csv', 'b.csv'],
        changedInPart: false,
        outcomeUnknown: true,
      });
      expect(outcome.partial!.message).toContain(
        'new run in: a.csv; outcome unknown for: gs://b/x.csv (the new run or the previous one); previous run still in: b.csv. A re-run',
      );
    });

    it('as the last publish says no target still holds the previous run', async () => {
      const { writers: all } = writers([['a.csv'], ['gs://b/x.csv', { during: { publish: unknown('gs://b/x.csv') } }]]);
      const outcome = await publishAll(all, options);
      expect(outcome.partial!.message).toContain(
        'new run in: a.csv; outcome unknown for: gs://b/x.csv (the new run or the previous one); A re-run replaces all of them',
      );
      expect(outcome.partial!.message).not.toContain('previous run still in');
    });

    it('at the first publish with targets after it is a possible partial publish: it may hold the new run, they keep the previous one', async () => {
      const { writers: all } = writers([['gs://b/x.csv', { during: { publish: unknown('gs://b/x.csv') } }], ['a.csv']]);
      const outcome = await publishAll(all, options);
      expect(outcome.partial).toMatchObject({ published: [], unpublished: ['gs://b/x.csv', 'a.csv'], outcomeUnknown: true });
      expect(outcome.partial!.message).toContain('failed to publish (');
      expect(outcome.partial!.message).toContain(
        '); outcome unknown for: gs://b/x.csv (the new run or the previous one); previous run still in: a.csv. A re-run',
      );
    });

    it("as the only target is the sink's own failure, rethrown", async () => {
      const { writers: all } = writers([['gs://b/x.csv', { during: { publish: unknown('gs://b/x.csv') } }]]);
      await expect(publishAll(all, options)).rejects.toMatchObject({ publishOutcomeUnknown: true });
    });
  });

  it('a failing abort does not hide the run error', async () => {
    const { log, writers: all } = writers([['bq', { failIn: ['prepare', 'abort'] }], ['a.csv']]);
    await expect(publishAll(all, options)).rejects.toThrow('bq prepare failed');
    expect(log).toContain('abort a.csv');
  });

  it('a signal aborted before phase 2 stops the run with run_stopped and publishes nothing', async () => {
    const controller = new AbortController();
    const { log, writers: all } = writers([['bq'], ['a.csv', { during: { prepare: () => controller.abort(new Error('SIGTERM received')) } }]]);
    const outcome = publishAll(all, { ...options, signal: controller.signal });
    await expect(outcome).rejects.toBeInstanceOf(RunStoppedError);
    await expect(outcome).rejects.toMatchObject({ code: 'run_stopped', message: expect.stringContaining('SIGTERM received') });
    expect(log.filter((line) => line.startsWith('publish'))).toEqual([]);
    expect(log.filter((line) => line.startsWith('abort'))).toEqual(['abort bq', 'abort a.csv']);
  });

  it('a signal already aborted before prepare publishes nothing', async () => {
    const controller = new AbortController();
    controller.abort(new Error('stopped'));
    const { log, writers: all } = writers([['a.csv']]);
    await expect(publishAll(all, { ...options, signal: controller.signal })).rejects.toMatchObject({ code: 'run_stopped' });
    expect(log).not.toContain('publish a.csv');
  });

  it('a signal aborted during phase 2 does not interrupt it: every sink publishes', async () => {
    const controller = new AbortController();
    const { log, writers: all } = writers([['bq', { during: { publish: () => controller.abort(new Error('SIGTERM received')) } }], ['a.csv'], ['b.csv']]);
    const outcome = await publishAll(all, { ...options, signal: controller.signal });
    expect(outcome.partial).toBeUndefined();
    expect(outcome.outputs.map((o) => o.target)).toEqual(['bq', 'a.csv', 'b.csv']);
    expect(log.filter((line) => line.startsWith('publish'))).toEqual(['publish bq', 'publish a.csv', 'publish b.csv']);
    expect(log.filter((line) => line.startsWith('abort'))).toEqual([]);
  });

  it('publishes nothing and reports nothing for no writers', async () => {
    expect(await publishAll([], options)).toEqual({ outputs: [] });
  });
});

describe('publishAll: one answer per run id (a run id given, its targets asked after prepare and before any publish)', () => {
  const given = (kinds: number) => ({
    runId: 'r1',
    exportedRows: 145,
    kinds: Array.from({ length: kinds }, () => 'csv' as const),
    earlier: { readable: true as const, published: new Map<string, number>(), unsettled: [] as string[] },
  });

  it('every target holds it: nothing is published, every writer is aborted, each output says adopted with the rows it holds', async () => {
    const { log, writers: all } = writers([
      ['bq', { held: { held: 'yes', rows: 130 } }],
      ['a.csv', { held: { held: 'yes', rows: 145 } }],
    ]);
    const outcome = await publishAll(all, { ...options, runHeld: given(2) });
    expect(log).toEqual(['prepare bq', 'prepare a.csv', 'heldRun bq', 'heldRun a.csv', 'abort bq', 'abort a.csv']);
    expect(outcome.outputs).toEqual([
      {
        sink: 'csv',
        target: 'bq',
        rows: 130,
        adopted: true,
        keptEarlierPublish: true,
        details: { adopted: true, heldFrom: 'the test', sentRows: 145 },
        warnings: [
          "bq: run id r1 was already published there with 130 rows (the test); this run's 145 rows were not published (a run id publishes once; re-run with a new --run-id to publish the current data)",
        ],
      },
      { sink: 'csv', target: 'a.csv', rows: 145, adopted: true, details: { adopted: true, heldFrom: 'the test', sentRows: 145 } },
    ]);
  });

  it('some hold it and the others know they do not (a partial publish re-run): those adopt, the others publish, in publish order', async () => {
    const { log, writers: all } = writers([
      ['bq', { held: { held: 'yes', rows: 145 } }],
      ['a.csv', { held: { held: 'no' } }],
    ]);
    const outcome = await publishAll(all, { ...options, runHeld: given(2) });
    expect(log).toEqual(['prepare bq', 'prepare a.csv', 'heldRun bq', 'heldRun a.csv', 'abort bq', 'publish a.csv']);
    expect(outcome.outputs.map((output) => [output.target, output.adopted === true])).toEqual([
      ['bq', true],
      ['a.csv', false],
    ]);
    expect(outcome.partial).toBeUndefined();
  });

  it('a repair whose publish fails is partially_published: the adopted target holds the run, the failed one the previous', async () => {
    const { writers: all } = writers([
      ['bq', { held: { held: 'yes', rows: 145 } }],
      ['a.csv', { held: { held: 'no' }, failIn: ['publish'] }],
    ]);
    const outcome = await publishAll(all, { ...options, runHeld: given(2) });
    expect(outcome.partial).toMatchObject({ code: 'partially_published', unpublished: ['a.csv'] });
    expect(outcome.outputs).toEqual([expect.objectContaining({ target: 'bq', adopted: true })]);
  });

  it('a target that cannot tell while another holds the run: run_id_unverified, every writer aborted, nothing published', async () => {
    const { log, writers: all } = writers([
      ['bq', { held: { held: 'yes', rows: 130 } }],
      ['a.csv', { held: { held: 'unknown' } }],
    ]);
    // The run history has a try of the run id that never said what it published (killed after its publish).
    const killed = { readable: true as const, published: new Map<string, number>(), unsettled: 'every target' as const };
    await expect(publishAll(all, { ...options, runHeld: { ...given(2), earlier: killed } })).rejects.toMatchObject({
      code: 'run_id_unverified',
      message:
        'job weekly: run id r1 may already be published, and its targets cannot be shown to hold one answer for it: bq holds it (the test); ' +
        'a.csv cannot tell (the test; the run history has a try of run r1 that ended without saying what it published (killed, or still running)). ' +
        'Nothing was published: publishing the current data where a target cannot tell could leave two answers under one run id. ' +
        'Re-run with a new --run-id to publish the current data to every target (a file sink with manifest: true can tell next time)',
    });
    expect(log.filter((line) => line.startsWith('publish'))).toEqual([]);
    expect(log.filter((line) => line.startsWith('abort'))).toEqual(['abort bq', 'abort a.csv']);
  });

  it('a target that cannot tell is settled by the run history: a finished try that published it, or no try that may have', async () => {
    const { writers: named } = writers([
      ['bq', { held: { held: 'yes', rows: 130 } }],
      ['a.csv', { held: { held: 'unknown' } }],
    ]);
    const history = { readable: true as const, published: new Map([['a.csv', 130]]), unsettled: [] };
    const adopted = await publishAll(named, { ...options, runHeld: { ...given(2), earlier: history } });
    expect(adopted.outputs).toEqual([
      expect.objectContaining({ target: 'bq', adopted: true }),
      expect.objectContaining({
        target: 'a.csv',
        adopted: true,
        rows: 130,
        details: { adopted: true, heldFrom: "the run history's record of run r1", sentRows: 145 },
      }),
    ]);
    const { log, writers: unnamed } = writers([['a.csv', { held: { held: 'unknown' } }]]);
    const published = await publishAll(unnamed, { ...options, runHeld: given(1) });
    expect(published.outputs).toEqual([{ sink: 'csv', target: 'a.csv', rows: 0 }]);
    expect(log).toContain('publish a.csv');
    const { writers: unreadable } = writers([['a.csv', { held: { held: 'unknown' } }]]);
    await expect(publishAll(unreadable, { ...options, runHeld: { ...given(1), earlier: { readable: false, reason: 'gs://b/h: 403' } } })).rejects.toMatchObject(
      { code: 'run_id_unverified', message: expect.stringContaining('a.csv cannot tell (the test; the run history could not be read: gs://b/h: 403)') },
    );
  });

  it('a run id the run drew itself (no word from the history): no target is asked', async () => {
    const { log, writers: all } = writers([['a.csv', { held: { held: 'yes', rows: 1 } }]]);
    await publishAll(all, { ...options, runHeld: { ...given(1), earlier: undefined } });
    expect(log).toEqual(['prepare a.csv', 'publish a.csv']);
  });
});
