import { describe, expect, it } from 'vitest';
import { createStorageClient, emulatorOrigin, storageOptionsFor } from '../../../../src/sinks/stores/gcs/storage-client.js';
import { describeWithFakeGcs } from '../../../support/fake-gcs-server.js';

describe('emulatorOrigin', () => {
  it('takes the conventional http://host:port, the /storage/v1 form and a bare host:port', () => {
    expect(emulatorOrigin({ STORAGE_EMULATOR_HOST: 'http://127.0.0.1:4443' })).toBe('http://127.0.0.1:4443');
    expect(emulatorOrigin({ STORAGE_EMULATOR_HOST: 'http://127.0.0.1:4443/storage/v1' })).toBe('http://127.0.0.1:4443');
    expect(emulatorOrigin({ STORAGE_EMULATOR_HOST: 'localhost:4443' })).toBe('http://localhost:4443');
  });

  it('means real Cloud Storage (ADC, no endpoint) when unset or empty', () => {
    expect(emulatorOrigin({})).toBeUndefined();
    expect(emulatorOrigin({ STORAGE_EMULATOR_HOST: '' })).toBeUndefined();
    const options = storageOptionsFor({});
    expect(options.apiEndpoint).toBeUndefined();
    // Credentials of the process's one identity, not the client's own anonymous default.
    expect(options.authClient).toBeDefined();
  });

  it('sends credentials to sinks.gcs.apiEndpoint (a custom endpoint gets none unless told), and the variable wins for local work', () => {
    expect(storageOptionsFor({}, { apiEndpoint: 'https://storage.europe-west3.rep.googleapis.com' })).toMatchObject({
      apiEndpoint: 'https://storage.europe-west3.rep.googleapis.com',
      useAuthWithCustomEndpoint: true,
    });
    const local = storageOptionsFor({ STORAGE_EMULATOR_HOST: 'http://127.0.0.1:4443' }, { apiEndpoint: 'https://storage.europe-west3.rep.googleapis.com' });
    expect(local).toEqual({ apiEndpoint: 'http://127.0.0.1:4443', projectId: 'local-emulator' });
  });

  it('refuses a value that is no URL', () => {
    expect(() => emulatorOrigin({ STORAGE_EMULATOR_HOST: 'http://[::1' })).toThrow(/STORAGE_EMULATOR_HOST/);
  });
});

describeWithFakeGcs('createStorageClient with STORAGE_EMULATOR_HOST', (gcs) => {
  // The Node client alone gets one of the two halves wrong for each form of the variable (see
  // storage-client.ts); a whole cycle is the proof that both reach the server.
  it.each(['', '/storage/v1'])('runs upload, rewrite and delete through the form origin%s', async (suffix) => {
    const before = process.env.STORAGE_EMULATOR_HOST;
    const storage = await createStorageClient({ STORAGE_EMULATOR_HOST: `${gcs.origin}${suffix}` });
    expect(process.env.STORAGE_EMULATOR_HOST).toBe(before);
    const bucketName = await gcs.newBucket('client');
    const bucket = storage.bucket(bucketName);
    const source = bucket.file('a.tmp');
    await new Promise<void>((resolve, reject) => {
      const upload = source.createWriteStream({ resumable: true, validation: 'crc32c' });
      upload.on('error', reject).on('finish', resolve);
      upload.end('id\r\n1\r\n');
    });
    await source.copy(bucket.file('a.csv'), { preconditionOpts: { ifGenerationMatch: 0 } });
    await source.delete();
    const [files] = await bucket.getFiles();
    expect(files.map((file) => file.name)).toEqual(['a.csv']);
    expect(String((await bucket.file('a.csv').download())[0])).toBe('id\r\n1\r\n');
  });
});
