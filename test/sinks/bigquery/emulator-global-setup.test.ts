// The test harness itself: how the vitest global setup finds and provides the BigQuery emulator.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provideBigQueryEmulator } from '../../support/global-setup.js';

describe('provideBigQueryEmulator', () => {
  let empty: string;
  const missing = () => ({ env: { PATH: empty }, projectLocal: join(empty, 'bigquery-emulator') });

  beforeAll(async () => {
    empty = await mkdtemp(join(tmpdir(), 'tilehouse-no-emulator-'));
  });

  afterAll(async () => {
    await rm(empty, { recursive: true, force: true });
  });

  it('fails the run under CI when the emulator is not installed, saying how to install it', async () => {
    const provided: unknown[] = [];
    const setup = provideBigQueryEmulator({ provide: (key, value) => provided.push([key, value]) }, { ...missing(), env: { PATH: empty, CI: 'true' } });

    await expect(setup).rejects.toThrow('npm run setup:emulator');
    expect(provided).toEqual([]);
  });

  it('provides null outside CI, so emulator tests are skipped', async () => {
    const provided: unknown[] = [];
    const teardown = await provideBigQueryEmulator({ provide: (key, value) => provided.push([key, value]) }, missing());

    expect(provided).toEqual([['bigqueryEmulatorBinary', null]]);
    await teardown();
  });

  it('refuses a BIGQUERY_EMULATOR_BIN that does not exist instead of looking elsewhere', async () => {
    const setup = provideBigQueryEmulator({ provide: () => undefined }, { ...missing(), env: { BIGQUERY_EMULATOR_BIN: join(empty, 'nope') } });

    await expect(setup).rejects.toThrow(/BIGQUERY_EMULATOR_BIN=.*nope is not an executable file/);
  });
});
