import { collapsedExcerpt } from '../secret-scrubber.js';
import { Agent, request } from '../source/undici-parts.js';

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
export function agent(timeoutMs: number): Agent {
  return new Agent({ connections: 2, allowH2: false, connectTimeout: timeoutMs, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
}

/** POSTs a JSON body and reads the answer; anything but 2xx is a delivery failure naming its status. */
export async function postJson(dispatcher: Agent, url: string, body: Buffer, headers: Record<string, string>, signal: AbortSignal): Promise<void> {
  const answer = await request(url, { dispatcher, method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body, signal });
  const text = await answer.body.text();
  if (answer.statusCode < 200 || answer.statusCode > 299) {
    throw new LineageDeliveryError(`HTTP ${answer.statusCode}${text === '' ? '' : `: ${collapsedExcerpt(text, 200)}`}`);
  }
}
