import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { tempDirForAll } from '../support/temp-dir-hooks.js';

/**
 * scripts/build-node-base-image.sh takes its Debian mirror from the machine's apt sources (or
 * TILEHOUSE_DEBIAN_MIRROR), never from a host written in the repository. Every run here stops
 * before any work: an image name the script refuses ends it right after the mirror and tool checks.
 */
const run = promisify(execFile);
const SCRIPT = path.resolve('scripts/build-node-base-image.sh');

const temp = tempDirForAll();

async function script(env: Record<string, string>): Promise<{ code: number; stderr: string }> {
  try {
    const { stderr } = await run('bash', [SCRIPT, 'not-a-node-image'], { env: { ...process.env, TILEHOUSE_DEBIAN_MIRROR: '', ...env }, timeout: 30_000 });
    return { code: 0, stderr };
  } catch (error) {
    const failed = error as { code: number; stderr: string };
    return { code: failed.code, stderr: failed.stderr };
  }
}

describe('build-node-base-image.sh', () => {
  it('fails with a clear message when the apt sources name no mirror', async () => {
    const result = await script({ TILEHOUSE_APT_SOURCES: path.join(temp.path, 'missing.sources') });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("error: no Debian mirror in this machine's apt sources");
    expect(result.stderr).toContain('TILEHOUSE_DEBIAN_MIRROR');
  });

  it("takes the first non-security mirror of a deb822 file, or of a one-line 'deb' list", async () => {
    const deb822 = path.join(temp.path, 'debian.sources');
    await writeFile(
      deb822,
      'Types: deb\nURIs: http://security.apt.invalid/debian-security\nSuites: bookworm-security\n\nTypes: deb\nURIs: http://apt.invalid/debian\nSuites: bookworm\n',
    );
    const fromDeb822 = await script({ TILEHOUSE_APT_SOURCES: deb822 });
    expect(fromDeb822.stderr).toContain('Debian mirror: http://apt.invalid/debian\n');
    expect(fromDeb822.code).toBe(2);

    const list = path.join(temp.path, 'sources.list');
    await writeFile(list, '# comment\ndeb [arch=amd64] http://list.apt.invalid/debian bookworm main\n');
    expect((await script({ TILEHOUSE_APT_SOURCES: list })).stderr).toContain('Debian mirror: http://list.apt.invalid/debian\n');
    expect((await script({ TILEHOUSE_APT_SOURCES: list, TILEHOUSE_DEBIAN_MIRROR: 'http://chosen.invalid/debian' })).stderr).toContain(
      'Debian mirror: http://chosen.invalid/debian\n',
    );
  });

  it('names no mirror host of its own', async () => {
    expect(await readFile(SCRIPT, 'utf8')).not.toMatch(/https?:\/\/[a-z]/i);
  });
});
