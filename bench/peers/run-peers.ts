/**
 * `npm run bench -- --peers`: tilehouse beside dlt and Airbyte's declarative CDK on the same
 * export (the bench query, 11 columns, into one CSV), each run in its own process tree, measured
 * alike (peak RSS of the tree, its CPU, wall time), interleaved round by round; every peer's CSV
 * is checked against tilehouse's. The peers run from the bench-only Python venv that
 * bench/peers/setup.sh makes.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { BENCH_JOB_NAME, pageQuery } from '../bench-query.js';
import { writeBenchWorkspace } from '../support/bench-workspace.js';
import { imageNodeOf, type ImageNode } from '../support/image-node.js';
import { repoRoot } from '../support/repo-root.js';
import { startSandboxProcess, type SandboxProcess } from '../support/sandbox-process.js';
import { digestCsv, rowDifferences, type CsvDigest } from './csv-check.js';
import { peerGroup, TOOL_LABELS, TOOLS, type PeerCase, type PeerSample, type PeersReport, type Tool } from './peers-report.js';
import { runTree, type TreeRun } from './tree-run.js';

export const PEERS_VENV = '.tools/peers-venv';
export const PEERS_SETUP = 'bash bench/peers/setup.sh';

export interface PeersOptions {
  runs: number;
  itemsPerPage: number;
  cases: PeerCase[];
  /** tilehouse's concurrency in every case instead of 4 at 0 ms and 8 with latency. */
  tilehouseConcurrency?: number;
  progress: (message: string) => void;
}

/** tilehouse's concurrency in each case: the memory part's (4 at 0 ms, 8 with latency), unless given. */
const tilehouseConcurrency = (latencyMs: number, given: number | undefined) => given ?? (latencyMs > 0 ? 8 : 4);

/**
 * The peers' concurrency: both page through the export one request after another. dlt's
 * RESTClient.paginate is a generator that asks for the next page after the last one was
 * yielded; the CDK's concurrency (concurrency_level) runs partitions side by side, and the pages
 * of one partition one after another.
 */
const PEER_CONCURRENCY = 1;

interface Measured {
  sample: PeerSample;
  digest: CsvDigest;
}

/** The Python of the venv, or undefined when it has not been made. */
export function venvPython(root: string): string | undefined {
  const python = join(root, PEERS_VENV, 'bin/python');
  return existsSync(python) ? python : undefined;
}

function failed(what: string, run: TreeRun): Error {
  return new Error(`${what} failed (exit ${run.exitCode}):\n${run.stderr.slice(-3000)}`);
}

async function runTilehouse(
  sandbox: SandboxProcess,
  concurrency: number,
  image: ImageNode,
  itemsPerPage: number,
  root: string,
  keyValue: string,
): Promise<Measured> {
  const workspace = await writeBenchWorkspace(root, sandbox, { concurrency, itemsPerPage, sink: { type: 'csv' } });
  const args = [...image.nodeArgs, 'dist/bundle/tilehouse.js', 'run', '--config', workspace.configFile, '--jobs', workspace.jobsDir];
  const env = image.nodeOptions === undefined ? workspace.env : { ...workspace.env, NODE_OPTIONS: image.nodeOptions };
  const run = await runTree(process.execPath, args, env, repoRoot());
  if (run.exitCode !== 0) throw failed('tilehouse', run);
  const digest = await digestCsv([join(workspace.outDir, `${BENCH_JOB_NAME}.csv`)], 'Number', keyValue);
  return { sample: run, digest };
}

async function runPeer(
  tool: 'dlt' | 'airbyte',
  python: string,
  sandbox: SandboxProcess,
  itemsPerPage: number,
  root: string,
  keyValue: string,
): Promise<Measured> {
  const input = {
    url: sandbox.url,
    authUrl: sandbox.url,
    tileId: sandbox.tileId,
    clientId: sandbox.clientId,
    clientSecret: sandbox.clientSecret,
    audience: new URL(sandbox.url).hostname,
    query: pageQuery(0, itemsPerPage),
    table: BENCH_JOB_NAME,
    outDir: join(root, 'out'),
    workDir: root,
  };
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: root,
    BENCH_PEER: JSON.stringify(input),
    // No __pycache__ beside the manifest's components.py in the checkout.
    PYTHONDONTWRITEBYTECODE: '1',
    // dlt: no usage reporting; the filesystem destination's files uncompressed, as tilehouse's.
    RUNTIME__DLTHUB_TELEMETRY: 'false',
    NORMALIZE__DATA_WRITER__DISABLE_COMPRESSION: 'true',
  };
  const script = join(repoRoot(), 'bench/peers', tool === 'dlt' ? 'dlt_peer.py' : 'airbyte_peer.py');
  const run = await runTree(python, [script], env, root);
  const line = run.stdout.trim().split('\n').at(-1) ?? '';
  if (run.exitCode !== 0 || !line.startsWith('{')) throw failed(tool, run);
  const { files } = JSON.parse(line) as { files: string[] };
  if (files.length === 0) throw new Error(`${tool}: wrote no CSV file`);
  const digest = await digestCsv(files, 'Number', keyValue);
  return { sample: run, digest };
}

/** The peers' versions as the venv has them. */
async function peerVersions(python: string): Promise<string> {
  const { stdout } = await promisify(execFile)(python, [
    '-c',
    "import importlib.metadata as m, sys; print(f\"Python {sys.version.split()[0]}, dlt {m.version('dlt')}, airbyte-cdk {m.version('airbyte-cdk')}\")",
  ]);
  return stdout.trim();
}

function check(tool: Tool, digest: CsvDigest, peerCase: PeerCase, reference: CsvDigest | undefined, keyValue: string): void {
  if (digest.rows !== peerCase.rows) throw new Error(`${tool}: its CSV holds ${digest.rows} rows, expected ${peerCase.rows}`);
  if (digest.row === undefined) throw new Error(`${tool}: no row with Number ${keyValue} in its CSV`);
  if (reference?.row === undefined) return;
  const differences = rowDifferences({ header: reference.header, row: reference.row }, { header: digest.header, row: digest.row });
  if (differences.length > 0) throw new Error(`${tool}: row Number ${keyValue} differs from tilehouse's: ${differences.join('; ')}`);
}

async function measureCase(peerCase: PeerCase, python: string, image: ImageNode, options: PeersOptions) {
  const sandbox = await startSandboxProcess({ incidents: peerCase.rows, latencyMs: peerCase.latencyMs, itemsPerPage: options.itemsPerPage });
  const samples = new Map<Tool, PeerSample[]>(TOOLS.map((tool) => [tool, []]));
  // A row from the middle of the export, compared across the tools' files.
  const keyValue = String(Math.ceil(peerCase.rows / 2));
  let reference: CsvDigest | undefined;
  const concurrencyOf = (tool: Tool) => (tool === 'tilehouse' ? tilehouseConcurrency(peerCase.latencyMs, options.tilehouseConcurrency) : PEER_CONCURRENCY);
  // tilehouse at one page in flight only where its default differs (`--peers-tilehouse-concurrency 1` measures it once).
  const tools = TOOLS.filter((tool) => tool !== 'tilehouse-1' || concurrencyOf('tilehouse') !== 1);
  try {
    for (let round = 1; round <= options.runs; round++) {
      // tilehouse first in every round: its CSV is the reference the peers' rows are held to.
      for (const tool of tools) {
        options.progress(`peers: ${peerCase.rows} rows, ${peerCase.latencyMs} ms: ${TOOL_LABELS[tool]} (run ${round}/${options.runs})`);
        const root = await mkdtemp(join(tmpdir(), `tilehouse-bench-peers-${tool}-`));
        try {
          const measured =
            tool === 'tilehouse' || tool === 'tilehouse-1'
              ? await runTilehouse(sandbox, concurrencyOf(tool), image, options.itemsPerPage, root, keyValue)
              : await runPeer(tool, python, sandbox, options.itemsPerPage, root, keyValue);
          check(tool, measured.digest, peerCase, reference, keyValue);
          if (tool === 'tilehouse') reference ??= measured.digest;
          const { wallMs, cpuMs, peakRssMb, largestProcessMb } = measured.sample;
          samples.get(tool)!.push({ wallMs, cpuMs, peakRssMb, largestProcessMb });
        } finally {
          await rm(root, { recursive: true, force: true });
        }
      }
    }
  } finally {
    await sandbox.stop();
  }
  return peerGroup(peerCase, samples, concurrencyOf);
}

/** The report, or 2 when the venv is missing (with how to make it on stderr). */
export async function runPeers(options: PeersOptions): Promise<PeersReport | 2> {
  const root = repoRoot();
  const python = venvPython(root);
  if (python === undefined) {
    process.stderr.write(
      `bench: --peers needs the peers' Python venv (${PEERS_VENV}, not found): make it with \`${PEERS_SETUP}\` (python3 with venv and pip, PyPI reachable)\n`,
    );
    return 2;
  }
  const dockerfile = join(root, 'Dockerfile');
  const image = imageNodeOf(await readFile(dockerfile, 'utf8'), dockerfile);
  const report: PeersReport = {
    settings: {
      node: process.version,
      peers: await peerVersions(python),
      cpus: cpus().length,
      'tilehouse flags': `${image.nodeArgs.join(' ')} NODE_OPTIONS="${image.nodeOptions ?? ''}" (the Dockerfile's)`,
      'items per page': options.itemsPerPage,
      runs: options.runs,
      measured:
        'each run its whole process tree: peak RSS max(Σ VmRSS sampled every 20 ms, any one process VmHWM), CPU user+system of the tree, wall spawn → exit',
    },
    groups: [],
  };
  for (const peerCase of options.cases) report.groups.push(await measureCase(peerCase, python, image, options));
  return report;
}
