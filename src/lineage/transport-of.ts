import { appendFile } from 'node:fs/promises';
import { gzipSync } from 'node:zlib';
import type { LineageTransportConfig } from '../config/lineage-schema.js';
import { redactedJson } from '../redaction.js';
import { registerSecret } from '../secret-scrubber.js';
import { agent, postJson, type LineageTransport, type TransportDependencies } from './lineage-transport.js';

/** The OpenLineage HTTP transport (Marquez and every consumer of its API): POST <url>/<endpoint>. */
function httpTransport(config: Extract<LineageTransportConfig, { type: 'http' }>): LineageTransport {
  const url = new URL(config.endpoint.replace(/^\/+/, ''), config.url.endsWith('/') ? config.url : `${config.url}/`).toString();
  const apiKey = config.auth?.apiKey;
  // Kept for the process's life like every registered value (it was once a "recent" value, evicted by tokens).
  if (apiKey !== undefined) registerSecret(apiKey, { permanent: true });
  const timeoutMs = config.timeout * 1000;
  const dispatcher = agent(timeoutMs);
  return {
    describe: url,
    timeoutMs,
    send: (event, signal) => {
      const json = Buffer.from(redactedJson(event));
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
    send: (event) => appendFile(config.log_file_path, `${redactedJson(event)}\n`),
    close: async () => undefined,
  };
}

function consoleTransport(dependencies: TransportDependencies): LineageTransport {
  return {
    describe: 'the console (stderr)',
    timeoutMs: 5_000,
    send: async (event) => dependencies.writeConsole(`${redactedJson(event)}\n`),
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
