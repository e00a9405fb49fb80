import { once } from 'node:events';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';

/**
 * Every scenario asks for its token here (its `authUrl`), and this bench-process server notes when
 * the first request of the current run arrived before passing it on to the sandbox. That splits
 * each run's wall time into start-up (spawn → first token request: the cold start) and the run
 * proper (token → exit), measured the same way for the baselines and for tilehouse.
 */
export class TokenProxy {
  private first: number | undefined;

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(target: string): Promise<TokenProxy> {
    let proxy: TokenProxy | undefined;
    const server = createServer((req, res) => {
      proxy!.first ??= performance.now();
      const upstream = request(new URL(req.url ?? '/', target), { method: req.method, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      upstream.on('error', () => res.destroy());
      req.pipe(upstream);
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    proxy = new TokenProxy(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return proxy;
  }

  /** Forget the last run's arrival; call right before starting the next run. */
  arm(): void {
    this.first = undefined;
  }

  /** performance.now() of the first token request since `arm`, if any came. */
  get firstArrival(): number | undefined {
    return this.first;
  }

  async close(): Promise<void> {
    this.server.close();
    this.server.closeAllConnections();
    await once(this.server, 'close');
  }
}
