import { gzipSync } from 'node:zlib';
import { appendFile } from 'node:fs/promises';
import type { LineageTransportConfig } from '../config/lineage-schema.js';
import { Agent, request } from '../source/undici-parts.js';
import { registerSecret } from '../secret-scrubber.js';

/** One way events leave the process. `send` settles when the event is delivered, rejects when not. */
export interface LineageTransport {
  /** Where events go, for the one warning (never a secret). */
  readonly describe: string;
  /** How long one event may take, and the longest the exit waits for those in flight. */
  readonly timeoutMs: number;
  send(event: Record<string, unknown>, signal: AbortSignal): Promise<void>;
  close(): Promise<void>;
}

export interface TransportDependencies {
  /** Where the console transport writes: stderr, since stdout is what a command is asked to print (`--json`). */
  writeConsole(line: string): void;
  env: NodeJS.ProcessEnv;
}

export class LineageDeliveryError extends Error {}

// Consumers answer quickly or not at all; a dedicated agent keeps lineage off the source's connections.
function agent(timeoutMs: number): Agent {
  return new Agent({ connections: 2, allowH2: false, connectTimeout: timeoutMs, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
}

/** POSTs a JSON body and reads the answer; anything but 2xx is a delivery failure naming its status. */
export async function postJson(
  dispatcher: Agent,
  url: string,
  body: Buffer,
  headers: Record<string, string>,
  signal: AbortSignal,
): Promise<void> {
  const answer = await request(url, { dispatcher, method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body, signal });
  const text = await answer.body.text();
  if (answer.statusCode < 200 || answer.statusCode > 299) {
    throw new LineageDeliveryError(`HTTP ${answer.statusCode}${text === '' ? '' : `: ${text.replace(/\s+/g, ' ').slice(0, 200)}`}`);
  }
}

/** The OpenLineage HTTP transport (Marquez and every consumer of its API): POST <url>/<endpoint>. */
function httpTransport(config: Extract<LineageTransportConfig, { type: 'http' }>): LineageTransport {
  const url = new URL(config.endpoint.replace(/^\/+/, ''), config.url.endsWith('/') ? config.url : `${config.url}/`).toString();
  const apiKey = config.auth?.apiKey;
  if (apiKey !== undefined) registerSecret(apiKey);
  const timeoutMs = config.timeout * 1000;
  const dispatcher = agent(timeoutMs);
  return {
    describe: url,
    timeoutMs,
    send: (event, signal) => {
      const json = Buffer.from(JSON.stringify(event));
      const gzip = config.compression === 'gzip';
      const headers: Record<string, string> = {
        ...(apiKey === undefined ? {} : { authorization: `Bearer ${apiKey}` }),
        ...(gzip ? { 'content-encoding': 'gzip' } : {}),
      };
      return postJson(dispatcher, url, gzip ? gzipSync(json) : json, headers, signal);
    },
    close: () => dispatcher.close(),
  };
}

/** One JSON event a line, appended: what a sidecar tails or a test reads back. */
function fileTransport(config: Extract<LineageTransportConfig, { type: 'file' }>): LineageTransport {
  return {
    describe: config.log_file_path,
    timeoutMs: 5_000,
    send: (event) => appendFile(config.log_file_path, `${JSON.stringify(event)}\n`),
    close: async () => undefined,
  };
}

function consoleTransport(dependencies: TransportDependencies): LineageTransport {
  return {
    describe: 'the console (stderr)',
    timeoutMs: 5_000,
    send: async (event) => dependencies.writeConsole(`${JSON.stringify(event)}\n`),
    close: async () => undefined,
  };
}

/** The transport a config names; Google's is loaded only when asked for (it brings the credentials). */
export async function transportOf(config: LineageTransportConfig, dependencies: TransportDependencies): Promise<LineageTransport> {
  switch (config.type) {
    case 'http':
      return httpTransport(config);
    case 'file':
      return fileTransport(config);
    case 'console':
      return consoleTransport(dependencies);
    case 'gcplineage': {
      const { googleLineageTransport } = await import('./google-lineage-transport.js');
      return googleLineageTransport(config, agent(config.timeout * 1000), dependencies.env);
    }
  }
}
