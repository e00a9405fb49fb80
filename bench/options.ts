import { parseArgs } from 'node:util';
import type { PeerCase } from './peers/peers-report.js';

export const SCENARIOS = [
  'transport',
  'sequential',
  'csv',
  'csv-deployed',
  'bigquery',
  'gcs',
  's3',
  'postgres',
  'parquet',
  'parquet-deployed',
  'parquet-s3',
  'iceberg',
  'iceberg-s3',
  'compressed',
  'cold-start',
  'memory',
] as const;
export type ScenarioName = (typeof SCENARIOS)[number];

export interface BenchOptions {
  json: boolean;
  sizes: number[];
  latencies: number[];
  scenarios: Set<ScenarioName>;
  /** Parallel page requests of the transport loop and of tilehouse (its source.concurrency). */
  concurrency: number;
  /** The concurrency of the c/b comparison at non-zero latency. */
  targetConcurrency: number;
  itemsPerPage: number;
  /** Runs per scenario for sizes up to 100k (the median counts); larger sizes run once. */
  repeat: number;
  /**
   * `--rounds N`: every size runs each scenario N times (the 100k cap of repeat lifted), and with
   * --baseline the two checkouts' csv runs swap places each round, so neither is always the one
   * right after the transport loop (issue 62: that place cost as much as the gap measured).
   */
  rounds: number | undefined;
  coldStartRuns: number;
  /** The CLI entry whose cold start is measured (default dist/bundle/tilehouse.js). */
  coldStartCli: string;
  /** 0: the sequential client reads every page; else it stops after this many and extrapolates. */
  sequentialMaxPages: number;
  /** Write a CPU profile of each tilehouse CSV run here (node --cpu-prof). */
  cpuProfDir: string | undefined;
  /** Page latencies of the compressed-source group (tilehouse against a plain and a gzipping sandbox). */
  compressedLatencies: number[];
  /** The link speed both sandboxes of the compressed-source group simulate, Mbit/s. */
  bandwidthMbps: number;
  /** Also write the JSON report to this file. */
  out: string | undefined;
  /** Runs of each case of the memory part (medians kept). */
  memoryRuns: number;
  /** A second checkout (built) whose bundle the memory part measures too, as the baseline. */
  memoryBaseline: string | undefined;
  /**
   * A second checkout (built) whose bundle runs the csv scenario too, right after this one's at
   * each concurrency (scenario csv-baseline): both heads' c/a from one run.
   */
  baseline: string | undefined;
  /** `--peers`: tilehouse beside dlt and Airbyte's CDK (bench/peers/), nothing else. */
  peers: boolean;
  /** Runs of each tool in each peers' case (medians kept). */
  peersRuns: number;
  /** The peers' cases: rows and page latency. */
  peersCases: PeerCase[];
  /** tilehouse's concurrency in the peers' cases (default 4 at 0 ms, 8 with latency). */
  peersTilehouseConcurrency: number | undefined;
  /** The memory part's 1M-row Parquet and gs:// cases too. */
  memorySinks: boolean;
  /** Where each memory case's memory is at its peak (heap spaces, external, file-backed). */
  memoryBreakdown: boolean;
  /** Only these memory cases (names as the report prints them); undefined: all. */
  memoryCases: string[] | undefined;
}

const HELP = `Usage: npm run bench -- [options]

Measures, against the sandbox in its own process, side by side in one run:
  transport   a bare undici loop at the same concurrency, bodies parsed and discarded (a)
  sequential  one page at a time, parsed, rows written naively to a CSV file (b)
  csv         tilehouse (compiled CLI, a separate process) into CSV (c)
  csv-deployed  the same, started as the image starts node (the Dockerfile's NODE_OPTIONS and flags)
  bigquery    tilehouse into the BigQuery emulator, when installed (d)
  gcs         (c) into a gs:// CSV directory on fake-gcs-server (loopback), when installed,
              at each concurrency (c) runs, interleaved with it
  s3          (c) into an s3:// CSV directory on moto (loopback), when installed, likewise
  postgres    (c) into a PostgreSQL table (a durable throwaway cluster on loopback, when installed),
              the second night measured (the first night's table in place); psql \\copy of the
              same rows as the physical limit; a reader's longest wait during the publish
  parquet     (c) with a Parquet sink instead of CSV (same job, local file), at each concurrency
              (c) runs, right after it
  parquet-deployed  the same with NODE_OPTIONS as the Kubernetes manifests set it (beside csv-deployed)
  parquet-s3  the Parquet sink into an s3:// directory on moto (loopback), when installed, at the
              target concurrency: the store iceberg-s3 is compared with
  iceberg     an Iceberg table (replace) through the JDBC catalog on the bench's PostgreSQL, its
              location a local directory, the second night measured (last night's snapshot in
              place); the table's total-records checked; beside parquet at the target concurrency
  iceberg-s3  the same with the table's location an s3:// prefix on moto, beside parquet-s3
  compressed  (c) at the target concurrency against a sandbox that gzips its answers (as real
              services do) and against one that does not, both behind a link of --bandwidth-mbps
  cold-start  process start -> first token request of the compiled CLI, vs bare node
  memory      issue 29: peak RSS of bare \`node -e 0\`, --help, validate, runs of 5 rows, 100k
              (0 ms, concurrency 4) and 1M (50 ms, concurrency 8) into CSV, each under the
              Dockerfile's node flags, as multiples of bare node; CPU per row against
              --memory-baseline (fixed sizes: --sizes and --latencies do not apply)

Options:
  --json                    print one JSON object instead of tables (npm run -s bench -- --json
                            keeps npm's own lines off stdout)
  --out FILE                also write the JSON object to FILE
  --quick                   sizes 10000,100000; repeat 1; 3 cold starts (a smoke run)
  --sizes N,N,...           rows (default 10000,100000,1000000)
  --latencies MS,MS,...     per-page latency of the sandbox (default 0,50)
  --compressed-latencies MS,...  latencies of the compressed-source group (default 50)
  --bandwidth-mbps N        link speed of the compressed-source group's sandboxes (default 100)
  --scenarios A,B,...       any of ${SCENARIOS.join(', ')} (default all)
  --concurrency N           page requests in flight (default 4)
  --target-concurrency N    concurrency for c/b at latency > 0 (default 8)
  --items-per-page N        page size (default 1000)
  --repeat N                runs per scenario for sizes <= 100k, median kept (default 3)
  --rounds N                runs per scenario at every size, median kept; with --baseline the
                            two checkouts' csv runs alternate which goes first each round
  --cold-start-runs N       (default 9)
  --cold-start-cli FILE     the CLI entry whose cold start is measured (default dist/bundle/tilehouse.js)
  --sequential-max-pages N  stop the sequential client after N pages and extrapolate (default: all pages)
  --cpu-prof DIR            write a .cpuprofile of every tilehouse CSV run into DIR
  --baseline DIR            a second checkout, built (npm run build): its bundle runs the csv
                            scenario too, right after this one's at each concurrency
                            (csv-baseline), so both heads' c/a come from one run
  --memory                  the memory part only (same as --scenarios memory), ~1-2 min
  --memory-runs N           runs of each memory case, median kept (default 3; 1 with --quick)
  --memory-baseline DIR     a second checkout, built (npm run build), measured alongside under
                            its own Dockerfile's flags: RSS and CPU per row against it
  --peers                   tilehouse beside dlt and Airbyte's declarative CDK on the same export
                            into one CSV (bench/peers/; needs its Python venv: bash
                            bench/peers/setup.sh, else exit 2); the peers part only
  --peers-runs N            runs of each tool in each case, median kept (default 3)
  --peers-cases R@MS,...    rows@latency of the peers' cases (default 100000@0,1000000@50)
  --peers-tilehouse-concurrency N  tilehouse's concurrency there (default 4 at 0 ms, 8 with
                            latency; the peers page one request at a time)
  --memory-sinks            also 1M rows into a local Parquet file and into gs:// (fake-gcs-server)
  --memory-breakdown        sample each process every 10 ms: heap spaces, external memory and
                            file-backed pages at its highest RSS (costs the runs a little CPU)
  --memory-cases 'A;B'      only these memory cases, by name (e.g. 'bare node;run 1M')
`;

function list(text: string, name: string): number[] {
  return text.split(',').map((part) => {
    const value = Number(part.trim());
    if (part.trim() === '' || !Number.isInteger(value) || value < 0) throw new Error(`--${name}: not a whole number: ${JSON.stringify(part)}`);
    return value;
  });
}

function positive(text: string, name: string): number {
  const [value] = list(text, name);
  if (value === undefined || value < 1) throw new Error(`--${name} must be at least 1`);
  return value;
}

/** `100000@0,1000000@50`: rows (at least 1) at a page latency in ms. */
function peerCases(text: string): PeerCase[] {
  return text.split(',').map((part) => {
    const match = /^\s*(\d+)@(\d+)\s*$/.exec(part);
    if (match === null || Number(match[1]) < 1) throw new Error(`--peers-cases: not rows@latency-ms: ${JSON.stringify(part)}`);
    return { rows: Number(match[1]), latencyMs: Number(match[2]) };
  });
}

export function parseBenchOptions(argv: string[]): BenchOptions | 'help' {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      json: { type: 'boolean', default: false },
      quick: { type: 'boolean', default: false },
      sizes: { type: 'string' },
      latencies: { type: 'string' },
      'compressed-latencies': { type: 'string', default: '50' },
      'bandwidth-mbps': { type: 'string', default: '100' },
      scenarios: { type: 'string' },
      concurrency: { type: 'string', default: '4' },
      'target-concurrency': { type: 'string', default: '8' },
      'items-per-page': { type: 'string', default: '1000' },
      repeat: { type: 'string' },
      rounds: { type: 'string' },
      'cold-start-runs': { type: 'string' },
      'cold-start-cli': { type: 'string', default: 'dist/bundle/tilehouse.js' },
      'sequential-max-pages': { type: 'string', default: '0' },
      'cpu-prof': { type: 'string' },
      out: { type: 'string' },
      memory: { type: 'boolean', default: false },
      'memory-runs': { type: 'string' },
      'memory-baseline': { type: 'string' },
      baseline: { type: 'string' },
      peers: { type: 'boolean', default: false },
      'peers-runs': { type: 'string', default: '3' },
      'peers-cases': { type: 'string', default: '100000@0,1000000@50' },
      'peers-tilehouse-concurrency': { type: 'string' },
      'memory-sinks': { type: 'boolean', default: false },
      'memory-breakdown': { type: 'boolean', default: false },
      'memory-cases': { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) return 'help';
  if (values.memory && values.scenarios !== undefined && values.scenarios !== 'memory')
    throw new Error('--memory runs the memory part only; it cannot be combined with --scenarios');
  if (values.peers && (values.memory || values.scenarios !== undefined))
    throw new Error('--peers runs the peers part only; it cannot be combined with --memory or --scenarios');
  const scenarios = new Set<ScenarioName>();
  for (const name of (values.memory ? 'memory' : (values.scenarios ?? SCENARIOS.join(','))).split(',').map((s) => s.trim())) {
    if (!(SCENARIOS as readonly string[]).includes(name))
      throw new Error(`--scenarios: unknown scenario ${JSON.stringify(name)}; known: ${SCENARIOS.join(', ')}`);
    scenarios.add(name as ScenarioName);
  }
  const itemsPerPage = positive(values['items-per-page'], 'items-per-page');
  // The API (and the sandbox) take at most 10,000 rows per page.
  if (itemsPerPage > 10_000) throw new Error('--items-per-page must be at most 10000');
  return {
    json: values.json,
    sizes: list(values.sizes ?? (values.quick ? '10000,100000' : '10000,100000,1000000'), 'sizes'),
    latencies: list(values.latencies ?? '0,50', 'latencies'),
    scenarios,
    concurrency: positive(values.concurrency, 'concurrency'),
    targetConcurrency: positive(values['target-concurrency'], 'target-concurrency'),
    itemsPerPage,
    repeat: positive(values.repeat ?? (values.quick ? '1' : '3'), 'repeat'),
    rounds: values.rounds === undefined ? undefined : positive(values.rounds, 'rounds'),
    coldStartRuns: positive(values['cold-start-runs'] ?? (values.quick ? '3' : '9'), 'cold-start-runs'),
    coldStartCli: values['cold-start-cli'],
    sequentialMaxPages: list(values['sequential-max-pages'], 'sequential-max-pages')[0] ?? 0,
    cpuProfDir: values['cpu-prof'],
    compressedLatencies: list(values['compressed-latencies'], 'compressed-latencies'),
    bandwidthMbps: positive(values['bandwidth-mbps'], 'bandwidth-mbps'),
    out: values.out,
    memoryRuns: positive(values['memory-runs'] ?? (values.quick ? '1' : '3'), 'memory-runs'),
    memoryBaseline: values['memory-baseline'],
    baseline: values.baseline,
    peers: values.peers,
    peersRuns: positive(values['peers-runs'], 'peers-runs'),
    peersCases: peerCases(values['peers-cases']),
    peersTilehouseConcurrency:
      values['peers-tilehouse-concurrency'] === undefined ? undefined : positive(values['peers-tilehouse-concurrency'], 'peers-tilehouse-concurrency'),
    memorySinks: values['memory-sinks'],
    memoryBreakdown: values['memory-breakdown'],
    memoryCases: values['memory-cases']?.split(';').map((name) => name.trim()),
  };
}

export const BENCH_HELP = HELP;
