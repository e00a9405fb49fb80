/// <reference path="./undici-lib.d.ts" />
/**
 * The parts of undici tilehouse uses, loaded from undici's own files rather than its index.
 *
 * Why: `import ... from 'undici'` evaluates the whole package at start-up: fetch, WebSocket,
 * EventSource, the mock and snapshot agents, the SQLite cache store, every interceptor. A run
 * uses none of them. Measured on Node 24.21, requiring the index adds ~28 MB to a bare process's
 * peak RSS, the agent and request files ~16 MB, and it was the larger of the bundle's two big
 * chunks. The files are the same ones the index loads, so an Agent made here and one made from
 * 'undici' (as tests do) are the same class.
 */
import type { Dispatcher } from 'undici';
import AgentClass from 'undici/lib/dispatcher/agent.js';
import DecoratorHandlerClass from 'undici/lib/handler/decorator-handler.js';
import dispatcherRequest from 'undici/lib/api/api-request.js';

export const Agent = AgentClass;
export type Agent = InstanceType<typeof AgentClass>;
export const DecoratorHandler = DecoratorHandlerClass;

export type RequestOptions = Omit<Dispatcher.RequestOptions, 'origin' | 'path'> & { dispatcher: Dispatcher };

/**
 * undici's `request(url, options)` for a full URL and an explicit dispatcher: what the index's
 * wrapper does for such a call (origin and path from the URL), without undici's global dispatcher.
 */
export function request(url: string | URL, options: RequestOptions): Promise<Dispatcher.ResponseData> {
  const parsed = typeof url === 'string' ? new URL(url) : url;
  const { dispatcher, ...rest } = options;
  return dispatcherRequest.call(dispatcher, { ...rest, origin: parsed.origin, path: `${parsed.pathname}${parsed.search}` });
}
