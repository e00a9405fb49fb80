// Types for the undici files src/source/undici-parts.ts loads directly (undici ships types for its
// index only). Each is the class or function the index re-exports under the same name.
declare module 'undici/lib/dispatcher/agent.js' {
  import type { Agent } from 'undici';
  const AgentClass: typeof Agent;
  export default AgentClass;
}

declare module 'undici/lib/handler/decorator-handler.js' {
  import type { DecoratorHandler } from 'undici';
  const DecoratorHandlerClass: typeof DecoratorHandler;
  export default DecoratorHandlerClass;
}

declare module 'undici/lib/api/api-request.js' {
  import type { Dispatcher } from 'undici';
  /** Dispatcher.prototype.request: called with the dispatcher as `this`. */
  function request(this: Dispatcher, options: Dispatcher.RequestOptions): Promise<Dispatcher.ResponseData>;
  export default request;
}
