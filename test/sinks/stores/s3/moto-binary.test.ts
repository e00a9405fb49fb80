import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { motoBinaryOrSkip } from '../../../support/s3-server.js';
import { PROJECT_LOCAL_MOTO } from '../../../support/moto-process.js';

describe('motoBinaryOrSkip', () => {
  const nowhere = '/nonexistent/moto_server';

  it('fails under CI when moto is not installed, so s3:// tests never pass as skipped', () => {
    expect(() => motoBinaryOrSkip({ CI: 'true', PATH: '' }, nowhere)).toThrow(/npm run setup:moto/);
  });

  it('skips (null) outside CI when moto is not installed', () => {
    expect(motoBinaryOrSkip({ PATH: '' }, nowhere)).toBeNull();
  });

  it('refuses an explicit MOTO_SERVER_BIN that is not executable instead of looking elsewhere', () => {
    expect(() => motoBinaryOrSkip({ MOTO_SERVER_BIN: nowhere, PATH: '' }, PROJECT_LOCAL_MOTO)).toThrow(/MOTO_SERVER_BIN/);
  });
});

describe('scripts/install-moto.sh', () => {
  it('pins the moto version its requirements pin, and is part of setup:tools', async () => {
    const script = await readFile('scripts/install-moto.sh', 'utf8');
    const version = /readonly VERSION='([^']+)'/.exec(script)?.[1];
    expect(await readFile('scripts/moto/requirements.txt', 'utf8')).toContain(`moto[server]==${version}\n`);
    const scripts = (JSON.parse(await readFile('package.json', 'utf8')) as { scripts: Record<string, string> }).scripts;
    expect(scripts['setup:tools']).toContain('npm run -s setup:moto');
  });

  it('is a no-op when the pinned moto is installed (the shared install is)', async (context) => {
    if (motoBinaryOrSkip() === null) context.skip('moto is not installed here');
    const { stdout } = await promisify(execFile)('bash', ['scripts/install-moto.sh'], { env: { ...process.env } });
    expect(stdout).toMatch(/already installed .*nothing to do/);
  }, 60_000);
});
