/**
 * The image as Kubernetes runs it (issue 25): the repository's Dockerfile, unchanged, built from
 * what a clean clone holds, then run the way the pod template (src/deploy/pod-template.ts) says:
 * uid/gid 10001 with fsGroup, a read-only root, the ConfigMaps and the credentials Secret mounted
 * read-only, emptyDirs for /tmp and the CSV directory, the image's own Entrypoint/Cmd/Env, and the
 * process as PID 1 of its PID namespace. How, without a container engine: test/support/container-image.ts.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { SANDBOX_TILE, startSandbox, type Sandbox } from '../../sandbox/index.js';
import { loadEnvironment, loadJobs } from '../../src/config/load-config.js';
import { CONFIG_CONFIGMAP, IMAGE_PATHS, JOBS_CONFIGMAP, NODE_ARGS, RUN_AS_USER, SECRET_KEYS } from '../../src/deploy/deploy-settings.js';
import { planPod } from '../../src/deploy/pod-template.js';
import { listFiles, runCli } from '../support/cli-harness.js';
import { exitWithin } from '../support/child-process.js';
import {
  buildImage,
  cleanCloneContext,
  ensureBaseImage,
  imageTestBlocker,
  imageTestMode,
  inspectImage,
  mountImage,
  pidInContainer,
  removeImage,
  startPod,
  type ImageConfig,
  type MountedImage,
  type Pod,
} from '../support/container-image.js';
import { detailQuery } from '../support/queries.js';
import { makeTempDir } from '../support/temp-dir.js';
import { describeUnless } from '../support/skip.js';

const run = promisify(execFile);

const mode = imageTestMode(imageTestBlocker());
if (!mode.run) console.warn(`[tilehouse] image tests skipped: ${mode.reason}`);
const describeImage = describeUnless(mode.run ? null : mode.reason);

const IMAGE = `localhost/tilehouse:test-${process.pid}`;
const JOB = 'incident_detail';
const CLIENT_SECRET_FILE = '/var/run/secrets/tilehouse/client-secret';
const CSV_DIRECTORY = '/exports';

let root: string;
let image: ImageConfig;
let mounted: MountedImage;
let fast: Sandbox;
let slow: Sandbox;
let jobsDir: string;
/** The same job run locally (from src/) against the fast sandbox: the bytes the image must write. */
let reference: Map<string, Buffer>;

/** A config for the pod against `sandbox`, credentials as k8s/ gives them: id from the Secret as env, secret as a file. */
function podEnvironment(sandbox: Sandbox, secretFile: string, csvDirectory: string): string {
  return stringify({
    source: {
      baseUrl: sandbox.url,
      authUrl: sandbox.url,
      clientId: '${TILEHOUSE_CLIENT_ID}',
      clientSecretFile: secretFile,
      itemsPerPage: 20,
      concurrency: 1,
      requestTimeoutMs: 5000,
    },
    sinks: { csv: { directory: csvDirectory } },
  });
}

async function readTree(directory: string): Promise<Map<string, Buffer>> {
  const files = new Map<string, Buffer>();
  for (const file of await listFiles(directory)) files.set(file, await readFile(path.join(directory, file)));
  return files;
}

interface PodRun {
  pod: Pod;
  output: string;
  tmp: string;
}

/** Starts a pod of the image against `sandbox` running `args`, with `jobs` (a directory) as its jobs ConfigMap. */
async function startImagePod(sandbox: Sandbox, args: string[], jobs = jobsDir): Promise<PodRun> {
  const podRoot = await mkdtemp(path.join(root, 'pod-'));
  const configDir = path.join(podRoot, 'config');
  const output = path.join(podRoot, 'output');
  const tmp = path.join(podRoot, 'tmp');
  const secretDirectory = path.join(podRoot, 'secret');
  for (const dir of [configDir, output, tmp, secretDirectory]) await mkdir(dir);
  const configFile = path.join(configDir, 'pod.yaml');
  await writeFile(configFile, podEnvironment(sandbox, CLIENT_SECRET_FILE, CSV_DIRECTORY));
  // The pod template is planned from the config and jobs as `tilehouse k8s` plans it.
  const plan = planPod({ environment: await loadEnvironment(configFile), configFile, jobs: await loadJobs(jobsDir), image: IMAGE });
  const spec = plan.spec(args);
  const pod = await startPod(image, mounted, spec, {
    configMaps: { [CONFIG_CONFIGMAP]: configDir, [JOBS_CONFIGMAP]: jobs },
    secret: { [SECRET_KEYS.clientId]: sandbox.clientId, [SECRET_KEYS.clientSecret]: sandbox.clientSecret },
    emptyDirs: { tmp, output },
    secretDirectory,
  });
  return { pod, output, tmp };
}

describeImage('the image, built with buildah and run as the pod template runs it', () => {
  beforeAll(async () => {
    root = await makeTempDir('tilehouse-image-');
    await ensureBaseImage();
    const context = await cleanCloneContext();
    try {
      const built = await buildImage(context, IMAGE);
      image = await inspectImage(IMAGE);
      console.warn(`[tilehouse] image built in ${built.seconds.toFixed(1)} s, ${(image.sizeBytes / 1e6).toFixed(0)} MB`);
    } finally {
      await rm(context, { recursive: true, force: true });
    }
    mounted = await mountImage(IMAGE);

    fast = await startSandbox({ incidents: 600 });
    // 30 pages at 200 ms each: a run takes long enough to be found and stopped in the middle.
    slow = await startSandbox({ incidents: 600, latencyMs: 200 });
    jobsDir = path.join(root, 'jobs');
    await mkdir(jobsDir);
    await writeFile(path.join(jobsDir, `${JOB}.yaml`), stringify({ name: JOB, tile: SANDBOX_TILE, query: detailQuery, sinks: [{ type: 'csv' }] }));

    const local = path.join(root, 'local');
    await mkdir(local);
    await writeFile(path.join(local, 'client-secret'), fast.clientSecret);
    await writeFile(path.join(local, 'env.yaml'), podEnvironment(fast, path.join(local, 'client-secret'), path.join(local, 'out')));
    const result = await runCli(['run', '--config', path.join(local, 'env.yaml'), '--jobs', jobsDir], { env: { TILEHOUSE_CLIENT_ID: fast.clientId } });
    expect(result.exitCode, result.stderr).toBe(0);
    reference = await readTree(path.join(local, 'out'));
    expect([...reference.keys()]).toEqual([`${JOB}.csv`]);
  }, 30 * 60_000);

  afterAll(async () => {
    await mounted?.remove();
    await removeImage(IMAGE);
    await fast?.close();
    await slow?.close();
    if (root !== undefined) await rm(root, { recursive: true, force: true });
    // vfs deletes a container and an image file by file: minutes on a loaded 2-core machine.
  }, 10 * 60_000);

  it('holds the bundle and production dependencies only, on the Node of its FROM, for user 10001', async () => {
    expect((await readdir(path.join(mounted.root, 'app'))).sort()).toEqual(['dist', 'node_modules', 'package-lock.json', 'package.json']);
    expect(await readdir(path.join(mounted.root, 'app/dist'))).toEqual(['bundle']);
    const modules = await readdir(path.join(mounted.root, 'app/node_modules'));
    expect(modules).toEqual(expect.arrayContaining(['pino', 'undici', 'yaml', 'zod']));
    for (const devOnly of ['typescript', 'esbuild', 'vitest', 'tsx', 'fast-check']) expect(modules).not.toContain(devOnly);
    // Jobs and config are mounted, never baked in.
    await expect(readdir(path.join(mounted.root, 'etc/tilehouse'))).rejects.toThrow(/ENOENT/);
    const from = /^FROM\s+node:(\d+\.\d+\.\d+)-/m.exec(await readFile('Dockerfile', 'utf8'))![1];
    const { stdout } = await run('chroot', [mounted.root, '/usr/local/bin/node', '--version']);
    expect(stdout.trim()).toBe(`v${from}`);
    expect(image.user).toBe(`${RUN_AS_USER}:${RUN_AS_USER}`);
    expect(image.workingDir).toBe(IMAGE_PATHS.workdir);
    expect(image.entrypoint).toEqual(['node', ...NODE_ARGS, `${IMAGE_PATHS.workdir}/dist/bundle/tilehouse.js`]);
    expect(image.cmd).toEqual(['run']);
  });

  it('run writes byte-identical CSV to a local run of the same job, reading the secret from the mounted Secret', async () => {
    const { pod, output, tmp } = await startImagePod(fast, ['run']);
    const exit = await exitWithin(pod.child, 60_000);
    expect(exit.code, pod.stderr()).toBe(0);
    const written = await readTree(output);
    expect([...written.keys()]).toEqual([...reference.keys()]);
    expect(written.get(`${JOB}.csv`)!.equals(reference.get(`${JOB}.csv`)!)).toBe(true);
    expect(await listFiles(tmp)).toEqual([]);
    // The secret never reaches the logs.
    expect(pod.stderr()).not.toContain(fast.clientSecret);
  });

  it('validate on a broken job exits 2 and names the file and line in the mounted jobs directory', async () => {
    const broken = path.join(root, 'broken-jobs');
    await mkdir(broken);
    await writeFile(
      path.join(broken, 'broken.yaml'),
      [
        'name: broken', // 1
        `tile: ${SANDBOX_TILE}`, // 2
        'schedule:', // 3
        '  cron: "61 * * * *"', // 4: minute 61 does not exist
        '  timezone: UTC', // 5
        `query: ${JSON.stringify(detailQuery)}`, // 6
        'sinks: [{type: csv}]', // 7
        '',
      ].join('\n'),
    );
    const { pod, output } = await startImagePod(fast, ['validate'], broken);
    const exit = await exitWithin(pod.child, 60_000);
    expect(exit.code, pod.stderr()).toBe(2);
    expect(pod.stderr()).toContain(`${IMAGE_PATHS.jobsDirectory}/broken.yaml:4`);
    expect(await listFiles(output)).toEqual([]);
  });

  it('as PID 1, stops on SIGTERM mid-export with exit 143, leaves no partial output or temp file, and the next run is exact', async () => {
    const before = slow.requests.length;
    const { pod, output, tmp } = await startImagePod(slow, ['run']);
    const exited = exitWithin(pod.child, 60_000);
    const pid = await pod.pid();
    // PID 1 gets no default signal handling from the kernel: only tilehouse's own handler stops it.
    expect(await pidInContainer(pid)).toBe(1);
    // The process runs as the pod template says, whatever the harness meant to do: its ids, and
    // its mounts as it sees them (read-only root and ConfigMaps/Secret, writable /tmp and CSV dir).
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    expect(status).toMatch(new RegExp(`^Uid:\\s+${RUN_AS_USER}\\s+${RUN_AS_USER}\\s+${RUN_AS_USER}\\s+${RUN_AS_USER}$`, 'm'));
    expect(status).toMatch(new RegExp(`^Gid:\\s+${RUN_AS_USER}\\s+${RUN_AS_USER}\\s+${RUN_AS_USER}\\s+${RUN_AS_USER}$`, 'm'));
    expect(status).toMatch(new RegExp(`^Groups:\\s+${RUN_AS_USER}\\s*$`, 'm'));
    expect(status).toMatch(/^CapEff:\s+0+$/m);
    const mounts = new Map(
      (await readFile(`/proc/${pid}/mounts`, 'utf8'))
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => line.split(' '))
        .map(([, target, , options]) => [target!, options!.split(',')[0]!]),
    );
    expect(
      Object.fromEntries(
        ['/', '/tmp', CSV_DIRECTORY, IMAGE_PATHS.configDirectory, IMAGE_PATHS.jobsDirectory, '/run/secrets/tilehouse'].map((target) => [
          target,
          mounts.get(target),
        ]),
      ),
    ).toEqual({
      '/': 'ro',
      '/tmp': 'rw',
      [CSV_DIRECTORY]: 'rw',
      [IMAGE_PATHS.configDirectory]: 'ro',
      [IMAGE_PATHS.jobsDirectory]: 'ro',
      // Debian's /var/run is a link to /run: the Secret is where the container's path leads.
      '/run/secrets/tilehouse': 'ro',
    });
    const deadline = Date.now() + 30_000;
    while (slow.requests.slice(before).filter((request) => request.endpoint === 'export').length < 5) {
      if (Date.now() > deadline) throw new Error(`the run never got going: ${pod.stderr()}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    process.kill(pid, 'SIGTERM');
    const exit = await exited;
    expect(exit.code, pod.stderr()).toBe(143);
    expect(pod.stderr()).toMatch(/SIGTERM received; stopping cleanly/);
    // Stopped in the middle: the sandbox saw fewer than the run's 30 pages.
    expect(slow.requests.slice(before).filter((request) => request.endpoint === 'export').length).toBeLessThan(30);
    expect(await listFiles(output)).toEqual([]);
    expect(await listFiles(tmp)).toEqual([]);

    const next = await startImagePod(slow, ['run']);
    const nextExit = await exitWithin(next.pod.child, 60_000);
    expect(nextExit.code, next.pod.stderr()).toBe(0);
    const written = await readTree(next.output);
    expect([...written.keys()]).toEqual([`${JOB}.csv`]);
    expect(written.get(`${JOB}.csv`)!.equals(reference.get(`${JOB}.csv`)!)).toBe(true);
    expect(await listFiles(next.tmp)).toEqual([]);
  });
});
