import { fileURLToPath } from 'node:url';
import { findToolBinary, startLoopbackTool, type RunningTool } from './tool-process.js';

/**
 * The moto server process (an S3-compatible stand-in, `npm run setup:moto`), without vitest: the
 * tests (s3-server.ts) and the benchmark find and start it through this one module.
 */

/** Where `npm run setup:moto` installs the launcher of the pinned moto. */
export const PROJECT_LOCAL_MOTO = fileURLToPath(new URL('../../.tools/bin/moto_server', import.meta.url));

/** `origin` is `http://127.0.0.1:PORT`: the endpoint (`sinks.s3.endpoint`), path-style. */
export type RunningMoto = RunningTool;

/** $MOTO_SERVER_BIN (which must be executable), else the project-local install, else PATH; undefined when absent. */
export function findMotoBinary(env: NodeJS.ProcessEnv = process.env, projectLocal: string = PROJECT_LOCAL_MOTO): string | undefined {
  return findToolBinary('MOTO_SERVER_BIN', 'moto_server', env, projectLocal);
}

/** Starts moto's server on 127.0.0.1 with a free port; its objects live in its memory. */
export function startMoto(binary: string, options: { readyTimeoutMs?: number } = {}): Promise<RunningMoto> {
  return startLoopbackTool('moto_server', binary, (port) => ['-H', '127.0.0.1', '-p', String(port)], {
    readyTimeoutMs: options.readyTimeoutMs ?? 30_000,
    pollMs: 100,
    // Any answer (moto refuses unsigned calls with 403 once it has seen one) means it listens.
    answers: async (origin) => {
      await fetch(`${origin}/moto-api/`, { signal: AbortSignal.timeout(1_000) });
      return true;
    },
  });
}
