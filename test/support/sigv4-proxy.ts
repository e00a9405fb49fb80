import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { underCi } from './ci.js';
import { startLoopbackTool } from './tool-process.js';

/**
 * A front that verifies AWS Signature Version 4 as AWS does, with botocore's own signer
 * recomputing every signature (`sigv4_proxy.py` beside this file says what it checks and how it
 * answers), in front of Apache Iceberg's REST server and shaped like AWS Glue's Iceberg endpoint:
 * `<origin>/iceberg` is the catalog's uri, the warehouse an account id, the prefix
 * `catalogs/<account id>`. botocore comes with moto (`npm run setup:moto`): its venv's python runs it.
 */

/** Where `npm run setup:moto` builds the venv whose python has botocore. */
export const PROJECT_LOCAL_MOTO_PYTHON = fileURLToPath(new URL('../../.tools/moto/bin/python', import.meta.url));
const SCRIPT = fileURLToPath(new URL('./sigv4_proxy.py', import.meta.url));

/** $MOTO_PYTHON or moto's venv's python, or null when absent (a failure under CI). */
export function botocorePythonOrSkip(env: NodeJS.ProcessEnv = process.env, projectLocal = PROJECT_LOCAL_MOTO_PYTHON): string | null {
  const python = env.MOTO_PYTHON || projectLocal;
  if (existsSync(python)) return python;
  if (underCi(env)) throw new Error(`CI is set but moto's venv (botocore) is not installed at ${python}: run \`npm run setup:moto\`.`);
  return null;
}

export interface ProxyKey {
  secret: string;
  sessionToken?: string;
  /** When the session token expires, epoch seconds. */
  expiresAt?: number;
}

/** One request as the front judged it: `valid`, or why it refused (`mismatch`, `skewed`, `token-expired`, `unknown-key`, `scope`, …). */
export interface VerifiedRequest {
  method: string;
  path: string;
  verdict: string;
  status: number;
  accessKeyId?: string;
  region?: string;
  service?: string;
  signedHeaders?: string;
}

export interface SigV4Proxy {
  /** The catalog's uri (`http://127.0.0.1:PORT/iceberg`). */
  uri: string;
  /** The keys it knows, its clock's offset from this machine's, and the text its refusals echo. */
  setState(state: { keys?: Record<string, ProxyKey>; clockOffsetSeconds?: number; echo?: string | null }): Promise<void>;
  requests(): Promise<VerifiedRequest[]>;
  stop(): Promise<void>;
}

/** `requireSigned`: headers that, when a request carries them, must be among those it signed (sigv4_proxy.py's `--require-signed`). */
export async function startSigV4Proxy(
  python: string,
  options: { upstream: string; region: string; service: string; warehouse: string; requireSigned?: readonly string[] },
): Promise<SigV4Proxy> {
  const tool = await startLoopbackTool(
    'sigv4_proxy.py',
    python,
    (port) => [
      SCRIPT,
      '--port',
      String(port),
      '--upstream',
      options.upstream,
      '--region',
      options.region,
      '--service',
      options.service,
      '--warehouse',
      options.warehouse,
      ...(options.requireSigned ?? []).flatMap((name) => ['--require-signed', name]),
    ],
    { readyTimeoutMs: 30_000, pollMs: 100, answers: async (origin) => (await fetch(`${origin}/_proxy/log`, { signal: AbortSignal.timeout(1_000) })).ok },
  );
  return {
    uri: `${tool.origin}/iceberg`,
    async setState(state) {
      const answer = await fetch(`${tool.origin}/_proxy/state`, { method: 'POST', body: JSON.stringify(state) });
      if (!answer.ok) throw new Error(`the SigV4 front refused its state: ${answer.status}`);
    },
    requests: async () => (await (await fetch(`${tool.origin}/_proxy/log`)).json()) as VerifiedRequest[],
    stop: () => tool.stop(),
  };
}
