import { fileURLToPath } from 'node:url';
import { findToolBinary, startLoopbackTool, type RunningTool } from './tool-process.js';

/**
 * The fake-gcs-server process, without vitest: the tests (fake-gcs-server.ts) and the benchmark
 * (bench/support/fake-gcs.ts) find and start it through this one module.
 */

/** Where `npm run setup:fake-gcs` installs the pinned build. */
export const PROJECT_LOCAL_FAKE_GCS = fileURLToPath(new URL('../../.tools/bin/fake-gcs-server', import.meta.url));

/** `origin` is `http://127.0.0.1:PORT`, the value STORAGE_EMULATOR_HOST takes in its conventional form. */
export type RunningFakeGcs = RunningTool;

/** $FAKE_GCS_SERVER_BIN (which must be executable), else the project-local install, else PATH; undefined when absent. */
export function findFakeGcsBinary(env: NodeJS.ProcessEnv = process.env, projectLocal: string = PROJECT_LOCAL_FAKE_GCS): string | undefined {
  return findToolBinary('FAKE_GCS_SERVER_BIN', 'fake-gcs-server', env, projectLocal);
}

/**
 * Starts fake-gcs-server on 127.0.0.1 with a free port: objects in memory, or under
 * `filesystemRoot` (the benchmark: a million-row object held in the server's heap would measure
 * the server). `-external-url` makes the resumable-upload session URIs it returns point back at
 * it (they are built from it, or from the request's Host header without it).
 */
export function startFakeGcs(binary: string, options: { readyTimeoutMs?: number; filesystemRoot?: string } = {}): Promise<RunningFakeGcs> {
  const backend = options.filesystemRoot === undefined ? ['-backend', 'memory'] : ['-backend', 'filesystem', '-filesystem-root', options.filesystemRoot];
  return startLoopbackTool(
    'fake-gcs-server',
    binary,
    (port, origin) => ['-scheme', 'http', ...backend, '-host', '127.0.0.1', '-port', String(port), '-external-url', origin, '-log-level', 'error'],
    {
      readyTimeoutMs: options.readyTimeoutMs ?? 20_000,
      pollMs: 50,
      answers: async (origin) => (await fetch(`${origin}/storage/v1/b`, { signal: AbortSignal.timeout(1_000) })).ok,
    },
  );
}
