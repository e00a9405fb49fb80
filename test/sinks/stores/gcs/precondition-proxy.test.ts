// The proxy the gs:// concurrency, kill and two-sink tests rely on (gcs-precondition-proxy.ts):
// it must refuse a rewrite whose ifGenerationMatch does not hold, as Cloud Storage does, and
// let through the ones that hold, or those tests would prove nothing (or fail for its sake).
import { expect, it } from 'vitest';
import { statusOf } from '../../../../src/sinks/stores/gcs/gcs-errors.js';
import { describeWithFakeGcs, usePreconditionProxy } from '../../../support/fake-gcs-server.js';

describeWithFakeGcs('the precondition proxy in front of fake-gcs-server', (gcs) => {
  const through = usePreconditionProxy(gcs);

  const failure = (promise: Promise<unknown>) =>
    promise.then(
      () => undefined,
      (error: unknown) => error,
    );

  it('answers 412 to a rewrite whose ifGenerationMatch does not hold, and performs the ones that hold', async () => {
    const bucket = through.storage.bucket(await gcs.newBucket('proxy'));
    const source = bucket.file('source.csv');
    const target = bucket.file('target.csv');
    await source.save('new\r\n', { resumable: false });

    // Absent target: 0 holds (a first publish).
    await source.copy(target, { preconditionOpts: { ifGenerationMatch: 0 } });
    const [first] = await target.getMetadata();
    expect((await target.download())[0].toString()).toBe('new\r\n');

    // Existing target: 0 no longer holds, nor does a wrong generation; the target stays as it was.
    const refused = through.proxy.preconditionFailures;
    for (const generation of [0, Number(first.generation) + 1]) {
      const error = await failure(source.copy(target, { preconditionOpts: { ifGenerationMatch: generation } }));
      expect(statusOf(error), `ifGenerationMatch ${generation}`).toBe(412);
    }
    expect(through.proxy.preconditionFailures - refused).toBe(2);
    expect((await target.getMetadata())[0].generation).toBe(first.generation);

    // The generation it has holds.
    await source.save('newer\r\n', { resumable: false });
    await source.copy(target, { preconditionOpts: { ifGenerationMatch: Number(first.generation) } });
    expect((await target.download())[0].toString()).toBe('newer\r\n');
  });

  it('answers a scripted failure to rewrites only, and forwards everything else', async () => {
    const bucket = through.storage.bucket(await gcs.newBucket('proxy-fail'));
    const source = bucket.file('source.csv');
    await source.save('x\r\n', { resumable: false });
    through.proxy.failRewrites({ status: 403, message: 'no storage.objects.delete' });
    try {
      const error = await failure(source.copy(bucket.file('target.csv')));
      expect(statusOf(error)).toBe(403);
      expect((error as Error).message).toContain('no storage.objects.delete');
      // Reads, listings and uploads still go through.
      expect((await bucket.getFiles())[0].map((file) => file.name)).toEqual(['source.csv']);
      expect((await source.download())[0].toString()).toBe('x\r\n');
    } finally {
      through.proxy.failRewrites(undefined);
    }
  });
});
