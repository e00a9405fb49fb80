import { createServer, type Server, type Socket, connect } from 'node:net';
import { once } from 'node:events';

/** One message a client sent (after the startup message): its type byte and its body. */
export interface ClientMessage {
  /** `Q` simple query, `d` CopyData, `c` CopyDone, `P`/`B`/`E` extended query, ... */
  type: string;
  body: Buffer;
  /** The simple query's text, for `Q`. */
  text?: string;
  /** How many connections the proxy had accepted when this one opened (1 = the first). */
  connection: number;
}

/** What the proxy does with a message: pass it, drop it and cut the connection, or pass it and cut before the answer. */
export type Verdict = 'pass' | 'cut-before' | 'cut-after';

export interface PostgresProxy {
  port: number;
  /** Replaces the rule for messages from now on. */
  rule(decide: (message: ClientMessage) => Verdict): void;
  /** How many connections were cut so far. */
  readonly cuts: number;
  stop(): Promise<void>;
}

/**
 * A TCP proxy of the tests' own between a PostgreSQL client and the server, reading the
 * frontend protocol's framing (type byte, length) so a test can cut the connection at a chosen
 * message: before a COMMIT reaches the server (it rolls back), right after it (the server commits,
 * the client never hears), in the middle of a COPY. Plain text only (sslmode: disable).
 */
export async function startPostgresProxy(target: { host: string; port: number }): Promise<PostgresProxy> {
  let decide: (message: ClientMessage) => Verdict = () => 'pass';
  let cuts = 0;
  let accepted = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    accepted += 1;
    const connection = accepted;
    const upstream = connect(target);
    sockets.add(client);
    sockets.add(upstream);
    let cut = false;
    let buffered = Buffer.alloc(0);
    let started = false;
    const cutNow = (afterForward: Buffer | undefined) => {
      cut = true;
      cuts += 1;
      client.destroy();
      if (afterForward === undefined) upstream.destroy();
      else upstream.end(afterForward);
    };
    upstream.on('data', (chunk: Buffer) => {
      if (!cut) client.write(chunk);
    });
    client.on('data', (chunk: Buffer) => {
      if (cut) return;
      buffered = Buffer.concat([buffered, chunk]);
      let forward = Buffer.alloc(0);
      for (;;) {
        if (!started) {
          // The startup message (or an SSLRequest) has no type byte: int32 length first.
          if (buffered.length < 4) break;
          const length = buffered.readInt32BE(0);
          if (buffered.length < length) break;
          forward = Buffer.concat([forward, buffered.subarray(0, length)]);
          buffered = buffered.subarray(length);
          started = true;
          continue;
        }
        if (buffered.length < 5) break;
        const length = buffered.readInt32BE(1);
        if (buffered.length < 1 + length) break;
        const whole = buffered.subarray(0, 1 + length);
        buffered = buffered.subarray(1 + length);
        const type = String.fromCharCode(whole[0]!);
        const body = whole.subarray(5);
        const message: ClientMessage = { type, body, connection, ...(type === 'Q' ? { text: body.subarray(0, -1).toString('utf8') } : {}) };
        const verdict = decide(message);
        if (verdict === 'cut-before') {
          if (forward.length > 0) upstream.write(forward);
          cutNow(undefined);
          return;
        }
        forward = Buffer.concat([forward, whole]);
        if (verdict === 'cut-after') {
          cutNow(forward);
          return;
        }
      }
      if (forward.length > 0) upstream.write(forward);
    });
    const close = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('error', close);
    upstream.on('error', close);
    client.on('close', () => {
      if (!cut) upstream.end();
    });
    upstream.on('close', () => client.destroy());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('proxy has no port');
  return {
    port: address.port,
    rule(next) {
      decide = next;
    },
    get cuts() {
      return cuts;
    },
    async stop() {
      for (const socket of sockets) socket.destroy();
      server.close();
      await once(server, 'close');
    },
  };
}
