import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { chmod, chown, copyFile, lstat, mkdir, readdir, readFile, readlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { makeTempDir } from './temp-dir.js';
import { shellQuote } from './shell-quote.js';
import { underCi } from './ci.js';

/**
 * The image, built and run without a container engine:
 * `buildah bud` (vfs storage, chroot isolation) builds the repository's Dockerfile as is, and a pod
 * is reproduced around the image's root filesystem with util-linux alone: a mount and PID
 * namespace (`unshare`), the pod's volumes bound onto their mount points, the root remounted
 * read-only, then `chroot --userspec` into it with the image's environment. podman cannot run
 * containers on these VMs (no CAP_SYS_RESOURCE for crun's setrlimit), which is why.
 */

const run = promisify(execFile);
const STORAGE = ['--storage-driver', 'vfs'];

type Manifest = Record<string, unknown>;

export const IMAGE_TEST_TOOLS = ['buildah', 'debootstrap', 'unshare', 'chroot', 'mount'] as const;

function installed(tool: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' }).status === 0;
}

/** Why the image tests cannot run here, or null when they can. */
export function imageTestBlocker(host: { uid?: number; installed?: (tool: string) => boolean } = {}): string | null {
  const uid = host.uid ?? process.getuid?.();
  const has = host.installed ?? installed;
  if (uid !== 0) return 'they must run as root (buildah vfs storage, mount and chroot)';
  for (const tool of IMAGE_TEST_TOOLS) {
    if (!has(tool)) return `${tool} is not installed (apt-get install -y buildah debootstrap)`;
  }
  return null;
}

/**
 * Whether the image tests run: skipped (with the reason) only outside CI; under CI a machine that
 * cannot build the image throws, so it can never pass as a green build (as the emulator's setup).
 */
export function imageTestMode(blocker: string | null, env: NodeJS.ProcessEnv = process.env): { run: true } | { run: false; reason: string } {
  if (blocker === null) return { run: true };
  if (underCi(env)) throw new Error(`CI is set but the image tests cannot run: ${blocker}. .ci/run installs buildah and debootstrap as root.`);
  return { run: false, reason: blocker };
}

/** The `FROM` of the Dockerfile's last stage, e.g. `node:24.21.0-bookworm-slim`. */
export async function runtimeBaseImage(dockerfile = 'Dockerfile'): Promise<string> {
  const froms = [...(await readFile(dockerfile, 'utf8')).matchAll(/^FROM\s+(\S+)/gim)].map((match) => match[1]!);
  if (froms.length === 0) throw new Error(`${dockerfile}: no FROM line`);
  return froms.at(-1)!;
}

/**
 * Makes the Dockerfile's base image available to `bud --pull=never`: the registry cannot be
 * reached, so scripts/build-node-base-image.sh builds a local stand-in under the same name when
 * buildah's storage lacks it (and says so on stderr); the storage persists, so that happens once
 * per machine.
 */
export async function ensureBaseImage(): Promise<void> {
  const child = spawn('bash', ['scripts/build-node-base-image.sh', await runtimeBaseImage()], { stdio: ['ignore', 'ignore', 'inherit'] });
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`scripts/build-node-base-image.sh exited ${code}: the base image could not be built`);
}

/**
 * The build context a clean clone has: the files git tracks or would track (not ignored), copied
 * out of the worktree. A build that leans on dist/, node_modules or a local leftover fails here as
 * it would for a new user.
 */
export async function cleanCloneContext(): Promise<string> {
  const { stdout } = await run('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { maxBuffer: 64 * 1024 * 1024 });
  const directory = await makeTempDir('tilehouse-image-context-');
  for (const file of stdout.split('\0').filter((name) => name !== '')) {
    const target = path.join(directory, file);
    await mkdir(path.dirname(target), { recursive: true });
    try {
      await copyFile(file, target);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error; // deleted, not yet committed
    }
  }
  return directory;
}

/** `buildah bud` of `context`'s Dockerfile, unchanged, tagged `name`; the time it took. */
export async function buildImage(context: string, name: string): Promise<{ seconds: number; log: string }> {
  const started = Date.now();
  // No --layers: with vfs every cached step is a full copy of the root filesystem (~0.4-0.5 GB
  // each, kept for every distinct src/), and committing them cost more than the `npm ci` they save.
  const args = [...STORAGE, 'bud', '--isolation', 'chroot', '--network', 'host', '--pull=never', '-t', name, context];
  const child = spawn('buildah', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  // Seconds since the start on each chunk: on a loaded machine this says which step took the time.
  const stamp = (chunk: Buffer) => (log += `[${((Date.now() - started) / 1000).toFixed(1)} s] ${chunk.toString()}`);
  child.stdout!.on('data', stamp);
  child.stderr!.on('data', stamp);
  const [code] = (await once(child, 'exit')) as [number | null];
  // TILEHOUSE_IMAGE_BUILD_LOG=FILE keeps the whole stamped log, for timing a build step by step.
  if (process.env.TILEHOUSE_IMAGE_BUILD_LOG) await writeFile(process.env.TILEHOUSE_IMAGE_BUILD_LOG, log);
  if (code !== 0) throw new Error(`buildah bud exited ${code}:\n${log.slice(-4000)}`);
  return { seconds: (Date.now() - started) / 1000, log };
}

export interface ImageConfig {
  env: string[];
  entrypoint: string[];
  cmd: string[];
  user: string;
  workingDir: string;
  sizeBytes: number;
}

/** What the image itself says to run and how (`buildah inspect`), as a container runtime reads it. */
export async function inspectImage(name: string): Promise<ImageConfig> {
  const { stdout } = await run('buildah', [...STORAGE, 'inspect', '--type', 'image', name], { maxBuffer: 64 * 1024 * 1024 });
  const inspected = JSON.parse(stdout) as { OCIv1: { config: { Env?: string[]; Entrypoint?: string[]; Cmd?: string[]; User?: string; WorkingDir?: string } } };
  const config = inspected.OCIv1.config;
  const { stdout: size } = await run('buildah', [...STORAGE, 'images', '--format', '{{.Size}}', '--noheading', name]);
  return {
    env: config.Env ?? [],
    entrypoint: config.Entrypoint ?? [],
    cmd: config.Cmd ?? [],
    user: config.User ?? '',
    workingDir: config.WorkingDir ?? '/',
    sizeBytes: parseSize(size.trim()),
  };
}

function parseSize(text: string): number {
  const match = /^([\d.]+)\s*([kMG]?B)$/.exec(text);
  if (match === null) return Number.NaN;
  const unit = { B: 1, kB: 1e3, MB: 1e6, GB: 1e9 }[match[2]!]!;
  return Number(match[1]) * unit;
}

export interface MountedImage {
  /** The image's root filesystem (a working container's, so the image itself is never changed). */
  root: string;
  remove(): Promise<void>;
}

export async function mountImage(name: string): Promise<MountedImage> {
  const { stdout: container } = await run('buildah', [...STORAGE, 'from', '--pull-never', name]);
  const id = container.trim();
  const { stdout: root } = await run('buildah', [...STORAGE, 'mount', id]);
  return {
    root: root.trim(),
    remove: async () => {
      await run('buildah', [...STORAGE, 'umount', id]).catch(() => undefined);
      await run('buildah', [...STORAGE, 'rm', id]);
    },
  };
}

export async function removeImage(name: string): Promise<void> {
  await run('buildah', [...STORAGE, 'rmi', name]).catch(() => undefined);
}

export interface PodVolumes {
  /** A host directory per configMap volume name (its files become the volume's files). */
  configMaps: Record<string, string>;
  /** The credentials Secret's data, by key. */
  secret: Record<string, string>;
  /** A host directory per emptyDir volume name, so the test can read what the pod wrote. */
  emptyDirs: Record<string, string>;
  /** An empty host directory to hold the Secret volume's files. */
  secretDirectory: string;
}

export interface Pod {
  child: ChildProcess;
  /** The host pid of the container's process (PID 1 in its namespace). */
  pid(): Promise<number>;
  stderr: () => string;
  stdout: () => string;
}

interface Container {
  args?: string[];
  env?: Array<{ name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string }; fieldRef?: { fieldPath: string } } }>;
  securityContext?: { readOnlyRootFilesystem?: boolean; runAsUser?: number };
  volumeMounts: Array<{ name: string; mountPath: string; readOnly?: boolean }>;
}
interface Volume {
  name: string;
  emptyDir?: Manifest;
  configMap?: { name: string };
  secret?: { secretName: string; items: Array<{ key: string; path: string }>; defaultMode?: number };
}

/** Makes a host directory what a volume of that kind looks like to the pod's user. */
async function prepareVolume(volume: Volume, inputs: PodVolumes, fsGroup: number): Promise<string> {
  if (volume.emptyDir !== undefined) {
    const directory = inputs.emptyDirs[volume.name];
    if (directory === undefined) throw new Error(`no host directory for emptyDir volume ${volume.name}`);
    // An emptyDir is world-writable, its group the pod's fsGroup (setgid), as the kubelet makes it.
    await chown(directory, 0, fsGroup);
    await chmod(directory, 0o2777);
    return directory;
  }
  if (volume.configMap !== undefined) {
    const directory = inputs.configMaps[volume.configMap.name];
    if (directory === undefined) throw new Error(`no host directory for configMap ${volume.configMap.name}`);
    // ConfigMap files are root's, 0644: readable by uid 10001, not writable.
    await chmod(directory, 0o755);
    for (const entry of await readdir(directory)) await chmod(path.join(directory, entry), 0o644);
    return directory;
  }
  if (volume.secret !== undefined) {
    const directory = inputs.secretDirectory;
    await chmod(directory, 0o755);
    for (const item of volume.secret.items) {
      const value = inputs.secret[item.key];
      if (value === undefined) throw new Error(`secret key ${item.key} not given`);
      const file = path.join(directory, item.path);
      await writeFile(file, value);
      // defaultMode with fsGroup: root's file, readable by the run's group only.
      await chown(file, 0, fsGroup);
      await chmod(file, volume.secret.defaultMode ?? 0o644);
    }
    return directory;
  }
  throw new Error(`volume ${volume.name}: kind not reproduced here`);
}

/**
 * `containerPath` inside `root` as the container sees it, created when missing: symbolic links are
 * followed within the root (Debian's /var/run is a link to /run; followed from the host, it would
 * lead to the host's /run), as a container runtime resolves mount points.
 */
async function mountPointInRoot(root: string, containerPath: string): Promise<string> {
  const pending = containerPath.split('/').filter((part) => part !== '');
  let resolved = root;
  for (let hops = 0; pending.length > 0; ) {
    const part = pending.shift()!;
    if (part === '.') continue;
    if (part === '..') {
      if (resolved !== root) resolved = path.dirname(resolved);
      continue;
    }
    const next = path.join(resolved, part);
    const stats = await lstat(next).catch(() => undefined);
    if (stats === undefined) {
      await mkdir(next);
      resolved = next;
    } else if (stats.isSymbolicLink()) {
      if (++hops > 40) throw new Error(`${containerPath}: too many symbolic links in ${root}`);
      const link = await readlink(next);
      pending.unshift(...link.split('/').filter((entry) => entry !== ''));
      if (path.isAbsolute(link)) resolved = root;
    } else {
      resolved = next;
    }
  }
  return resolved;
}

/**
 * Runs the pod `spec` (a pod template's spec, as src/deploy/pod-template.ts writes it) around the
 * image's root filesystem: the volumes on their mount points, the pod's user and group (and fsGroup
 * as a supplementary group), a read-only root when the container asks for one, the image's
 * Entrypoint with the container's args (or the image's Cmd), the image's Env overlaid by the
 * container's, in a new PID namespace where the process is PID 1. The network is the host's, so
 * the sandbox on 127.0.0.1 is reachable.
 */
export async function startPod(image: ImageConfig, mounted: MountedImage, spec: Manifest, inputs: PodVolumes): Promise<Pod> {
  const container = (spec.containers as Container[])[0]!;
  const volumes = spec.volumes as Volume[];
  const security = spec.securityContext as { runAsUser: number; runAsGroup: number; fsGroup: number };
  const user = container.securityContext?.runAsUser ?? security.runAsUser;

  const environment = new Map<string, string>();
  for (const entry of image.env) {
    const at = entry.indexOf('=');
    environment.set(entry.slice(0, at), entry.slice(at + 1));
  }
  // The downward API's fields, as the kubelet would fill them for this one pod.
  const podFields: Record<string, string> = {
    'metadata.name': 'tilehouse-image-test',
    'metadata.uid': '00000000-0000-4000-8000-000000000001',
    'metadata.namespace': 'tilehouse',
    'spec.nodeName': 'image-test-node',
  };
  for (const variable of container.env ?? []) {
    const reference = variable.valueFrom?.secretKeyRef;
    const field = variable.valueFrom?.fieldRef;
    const value = reference !== undefined ? inputs.secret[reference.key] : field !== undefined ? podFields[field.fieldPath] : variable.value;
    if (value === undefined) throw new Error(`env ${variable.name}: no value`);
    environment.set(variable.name, value);
  }
  const command = [...image.entrypoint, ...(container.args ?? image.cmd)];

  const root = mounted.root;
  const lines = ['set -eu', `R=${shellQuote(root)}`, 'mount --bind "$R" "$R"'];
  // A container's /dev: a few devices, nothing else of the host's.
  lines.push('mount -t tmpfs -o mode=755,nosuid tmpfs "$R/dev"');
  for (const device of ['null', 'zero', 'full', 'random', 'urandom']) lines.push(`touch "$R/dev/${device}"`, `mount --bind /dev/${device} "$R/dev/${device}"`);
  for (const mount of container.volumeMounts) {
    const volume = volumes.find((candidate) => candidate.name === mount.name);
    if (volume === undefined) throw new Error(`volumeMount ${mount.name}: no such volume`);
    const host = await prepareVolume(volume, inputs, security.fsGroup);
    // The runtime creates missing mount points in the container's own layer, as here.
    const target = shellQuote(await mountPointInRoot(root, mount.mountPath));
    lines.push(`mount --bind ${shellQuote(host)} ${target}`);
    if (mount.readOnly === true || volume.configMap !== undefined || volume.secret !== undefined) lines.push(`mount -o remount,bind,ro ${target}`);
  }
  lines.push('mount -t proc proc "$R/proc"');
  if (container.securityContext?.readOnlyRootFilesystem === true) lines.push('mount -o remount,bind,ro "$R"');
  const envArgs = [...environment].map(([name, value]) => `${name}=${value}`);
  lines.push(
    [
      'exec chroot',
      `--userspec=${user}:${security.runAsGroup}`,
      `--groups=${security.fsGroup}`,
      '"$R"',
      '/usr/bin/env -i',
      `-C ${shellQuote(image.workingDir)}`,
      // No `--` after the assignments: env would take it for the command.
      ...envArgs.map(shellQuote),
      ...command.map(shellQuote),
    ].join(' '),
  );
  const script = lines.join('\n');

  // unshare -f forks: the forked shell is PID 1 of the new namespace and execs into chroot, env
  // and finally the image's entrypoint, which keeps that pid.
  const child = spawn('unshare', ['--mount', '--pid', '--fork', '--mount-proc', '--propagation', 'private', '--', 'sh', '-c', script], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    pid: async () => {
      const deadline = Date.now() + 10_000;
      while (Date.now() < deadline) {
        const children = await readFile(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').catch(() => '');
        const pid = Number(children.trim().split(' ')[0]);
        if (pid > 0) {
          // By its argv once exec'd (sh, chroot and env come first); not by comm: Node 24 names its
          // main thread "MainThread".
          const argv = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split('\0');
          if (argv[0] === command[0] && argv[1] === command[1]) return pid;
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      throw new Error(`the pod's process never started: ${stderr}`);
    },
  };
}

/** The pid namespace view of a host pid: its pid as the container sees it (`NSpid`'s last field). */
export async function pidInContainer(hostPid: number): Promise<number> {
  const status = await readFile(`/proc/${hostPid}/status`, 'utf8');
  const line = status.split('\n').find((entry) => entry.startsWith('NSpid:'))!;
  return Number(line.trim().split(/\s+/).at(-1));
}
