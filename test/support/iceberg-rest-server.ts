import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { freePort } from './bigquery-emulator-process.js';
import { underCi } from './ci.js';
import { stopProcess } from './child-process.js';
import { waitUntil } from './wait-until.js';

/**
 * Apache Iceberg's own REST catalog test server (`org.apache.iceberg.rest.RESTCatalogServer`,
 * `npm run setup:iceberg-rest`: jars from Maven under .tools/iceberg-rest/lib), started once per
 * test file on a free port with a temporary warehouse. Its catalog is Iceberg's JdbcCatalog on a
 * SQLite file of that warehouse, or on `catalogUri` (the suite's PostgreSQL). `GET /v1/config`
 * answers 8-22 s after the start on a loaded machine: start it in `beforeAll`, not per test.
 *
 * Its main binds all interfaces (`new Server(port)`, no host setting); the port is a fresh one,
 * and nothing but the test's own client is told it.
 */

/** Where `npm run setup:iceberg-rest` puts the jars. */
export const PROJECT_LOCAL_ICEBERG_REST = fileURLToPath(new URL('../../.tools/iceberg-rest/lib', import.meta.url));

const SERVER_JAR = 'iceberg-open-api-1.11.0-test-fixtures.jar';

/** $ICEBERG_REST_LIB or the project-local directory, when it holds the server's jar; else null (a failure under CI). */
export function icebergRestLibOrSkip(env: NodeJS.ProcessEnv = process.env, projectLocal = PROJECT_LOCAL_ICEBERG_REST): string | null {
  const lib = env.ICEBERG_REST_LIB || projectLocal;
  if (existsSync(join(lib, SERVER_JAR))) return lib;
  if (underCi(env))
    throw new Error(`CI is set but the Iceberg REST catalog server is not installed in ${lib}: run \`npm run setup:iceberg-rest\` (java 17 and mvn needed).`);
  return null;
}

export interface RunningIcebergRest {
  /** `http://127.0.0.1:PORT`: the catalog's URI (`/v1/config` under it). */
  uri: string;
  /** The warehouse directory (a `file://` location to the server). */
  warehouse: string;
  pid: number;
  stop(): Promise<void>;
}

/** Starts the server; `java` from PATH (17 or later). */
export async function startIcebergRest(
  lib: string,
  options: { catalogUri?: string; catalogUser?: string; catalogPassword?: string } = {},
): Promise<RunningIcebergRest> {
  if (!readdirSync(lib).includes(SERVER_JAR)) throw new Error(`${lib} does not hold ${SERVER_JAR}`);
  const root = await mkdtemp(join(tmpdir(), 'tilehouse-iceberg-rest-'));
  const warehouse = join(root, 'warehouse');
  const port = await freePort();
  const uri = `http://127.0.0.1:${port}`;
  // CATALOG_<NAME> variables become catalog properties (`_` → `.`): rest.port, warehouse, uri, jdbc.*.
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: root,
    CATALOG_REST_PORT: String(port),
    CATALOG_WAREHOUSE: pathToFileURL(warehouse).href,
    CATALOG_URI: options.catalogUri ?? `jdbc:sqlite:file:${join(root, 'catalog.db')}`,
    ...(options.catalogUser === undefined ? {} : { CATALOG_JDBC_USER: options.catalogUser }),
    ...(options.catalogPassword === undefined ? {} : { CATALOG_JDBC_PASSWORD: options.catalogPassword }),
  };
  const child = spawn('java', ['-Xmx512m', '-cp', `${lib}/*`, 'org.apache.iceberg.rest.RESTCatalogServer'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let tail = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    tail = (tail + chunk.toString('utf8')).slice(-6_000);
  });
  const stop = async () => {
    await stopProcess(child);
    await rm(root, { recursive: true, force: true });
  };
  try {
    await waitUntil(
      async () => {
        try {
          return (await fetch(`${uri}/v1/config`, { signal: AbortSignal.timeout(2_000) })).ok;
        } catch {
          return false;
        }
      },
      `the Iceberg REST catalog server answering on ${uri}`,
      { withinMs: 120_000, everyMs: 200, gaveUp: () => child.exitCode !== null },
    );
  } catch (error) {
    await stop();
    throw new Error(`${(error as Error).message}\n${tail}`);
  }
  return { uri, warehouse, pid: child.pid!, stop };
}
