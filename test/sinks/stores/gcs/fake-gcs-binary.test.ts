import { describe, expect, it } from 'vitest';
import { fakeGcsBinaryOrSkip, PROJECT_LOCAL_FAKE_GCS } from '../../../support/fake-gcs-server.js';

describe('fakeGcsBinaryOrSkip', () => {
  const nowhere = '/nonexistent/fake-gcs-server';

  it('fails under CI when the server is not installed, so gs:// tests never pass as skipped', () => {
    expect(() => fakeGcsBinaryOrSkip({ CI: 'true', PATH: '' }, nowhere)).toThrow(/npm run setup:fake-gcs/);
  });

  it('skips (null) outside CI when the server is not installed', () => {
    expect(fakeGcsBinaryOrSkip({ PATH: '' }, nowhere)).toBeNull();
  });

  it('refuses an explicit FAKE_GCS_SERVER_BIN that is not executable instead of looking elsewhere', () => {
    expect(() => fakeGcsBinaryOrSkip({ FAKE_GCS_SERVER_BIN: nowhere, PATH: '' }, PROJECT_LOCAL_FAKE_GCS)).toThrow(/FAKE_GCS_SERVER_BIN/);
  });
});
