/**
 * Fault injection: rules that make the sandbox misbehave the way real services and networks do.
 * Rules are added and cleared at run time; each request is checked against the rules in the order
 * they were injected.
 */
export type FaultEndpoint = 'token' | 'export';

/** Which requests a rule affects. */
export interface RequestMatch {
  endpoint: FaultEndpoint;
  /** Export only: requests whose body asks for this `options.pageNumber`. A rule with it never matches token requests. */
  pageNumber?: number;
  /** Only the n-th request to `endpoint`, counted from when the rule was injected (1 = the next one). */
  call?: number;
  /** How many matching requests the rule affects before it is spent; default 1. `Infinity` = for good. */
  times?: number;
}

export type FaultRule =
  /** 429 with a Regular error object. `retryAfter`: seconds (number) or an HTTP-date (Date) or a raw header value (string); null sends no Retry-After; default 1. */
  | (RequestMatch & { kind: 'rate-limit'; retryAfter?: number | Date | string | null })
  /** A server or gateway failure with a Regular error object. */
  | (RequestMatch & { kind: 'server-error'; status: 500 | 502 | 503 | 504; message?: string })
  /** Answers `delayMs` late (then normally, unless another rule applies): for client timeouts. */
  | (RequestMatch & { kind: 'delay'; delayMs: number })
  /** Destroys the socket without any response. */
  | (RequestMatch & { kind: 'connection-reset' })
  /** A 200 whose JSON body is cut in half (content-length matches the cut body). Applies only to a response that would have been 200. */
  | (RequestMatch & { kind: 'malformed-json' })
  /**
   * Each token serves `afterExportCalls` authenticated export calls (counted from injection); the
   * next call with it gets 401 and the token stays dead. `times` = how many tokens die (default 1),
   * so a client that fetches a new token can finish.
   */
  | { kind: 'token-expiry'; afterExportCalls: number; times?: number }
  /** Successful export pages with pageNumber >= `fromPage` report totalRows + `delta`; `times` defaults to Infinity. */
  | { kind: 'total-rows-drift'; delta: number; fromPage: number; times?: number }
  /**
   * A successful export page whose headers differ: `headers` if given, else the last header gets
   * " (changed)" appended. Matches by pageNumber and/or call (both optional); `times` default 1.
   */
  | { kind: 'header-mismatch'; pageNumber?: number; call?: number; times?: number; headers?: string[] };

export type FaultKind = FaultRule['kind'];

/** What happens instead of the normal response. */
export type Interruption =
  | { kind: 'rate-limit'; retryAfter: string | null }
  | { kind: 'server-error'; status: number; message: string }
  | { kind: 'connection-reset' };

/** Faults that apply before the request is processed. */
export interface BeforeFaults {
  delayMs: number;
  interruption: Interruption | null;
  applied: FaultKind[];
}

/** Changes to a response that would have been a 200. */
export interface AfterFaults {
  malformed: boolean;
  totalRowsDelta: number;
  headers: ((original: readonly string[]) => string[]) | null;
  applied: FaultKind[];
}

interface ActiveRule {
  readonly rule: FaultRule;
  remaining: number;
  /** Requests to each endpoint before the rule was injected, so `call` counts from injection. */
  readonly callsBefore: Record<FaultEndpoint, number>;
  /** token-expiry: export calls seen per token since injection. */
  readonly callsPerToken: Map<string, number>;
}

const SERVER_ERROR_MESSAGES: Readonly<Record<number, string>> = {
  500: 'internal server error',
  502: 'bad gateway',
  503: 'service unavailable',
  504: 'gateway timeout',
};

export class FaultBook {
  private rules: ActiveRule[] = [];
  private readonly calls: Record<FaultEndpoint, number> = { token: 0, export: 0 };

  inject(rule: FaultRule): void {
    validate(rule);
    const defaultTimes = rule.kind === 'total-rows-drift' ? Number.POSITIVE_INFINITY : 1;
    this.rules.push({ rule, remaining: rule.times ?? defaultTimes, callsBefore: { ...this.calls }, callsPerToken: new Map() });
  }

  clear(): void {
    this.rules = [];
  }

  /** Counts a request's arrival; returns its 1-based number among requests to the endpoint. */
  arrive(endpoint: FaultEndpoint): number {
    return ++this.calls[endpoint];
  }

  before(endpoint: FaultEndpoint, call: number, pageNumber: number | null): BeforeFaults {
    const result: BeforeFaults = { delayMs: 0, interruption: null, applied: [] };
    for (const active of this.live()) {
      const { rule } = active;
      if (rule.kind === 'delay' && this.matches(active, rule, endpoint, call, pageNumber)) {
        result.delayMs += rule.delayMs;
        this.spend(active, result.applied);
      }
    }
    for (const active of this.live()) {
      const { rule } = active;
      if (rule.kind !== 'rate-limit' && rule.kind !== 'server-error' && rule.kind !== 'connection-reset') continue;
      if (!this.matches(active, rule, endpoint, call, pageNumber)) continue;
      this.spend(active, result.applied);
      switch (rule.kind) {
        case 'rate-limit':
          result.interruption = { kind: 'rate-limit', retryAfter: retryAfterHeader(rule.retryAfter) };
          break;
        case 'server-error':
          result.interruption = { kind: 'server-error', status: rule.status, message: rule.message ?? SERVER_ERROR_MESSAGES[rule.status]! };
          break;
        case 'connection-reset':
          result.interruption = { kind: 'connection-reset' };
          break;
      }
      break;
    }
    return result;
  }

  /** Called for each authenticated export call: whether its token must die now (token-expiry). */
  expiresToken(token: string): boolean {
    for (const active of this.live()) {
      if (active.rule.kind !== 'token-expiry') continue;
      const seen = (active.callsPerToken.get(token) ?? 0) + 1;
      active.callsPerToken.set(token, seen);
      if (seen > active.rule.afterExportCalls) {
        active.remaining--;
        return true;
      }
    }
    return false;
  }

  after(endpoint: FaultEndpoint, call: number, pageNumber: number | null): AfterFaults {
    const result: AfterFaults = { malformed: false, totalRowsDelta: 0, headers: null, applied: [] };
    for (const active of this.live()) {
      const { rule } = active;
      switch (rule.kind) {
        case 'malformed-json':
          if (!result.malformed && this.matches(active, rule, endpoint, call, pageNumber)) {
            result.malformed = true;
            this.spend(active, result.applied);
          }
          break;
        case 'total-rows-drift':
          if (endpoint === 'export' && pageNumber !== null && pageNumber >= rule.fromPage) {
            result.totalRowsDelta += rule.delta;
            this.spend(active, result.applied);
          }
          break;
        case 'header-mismatch':
          if (result.headers === null && this.matches(active, { ...rule, endpoint: 'export' }, endpoint, call, pageNumber)) {
            const replacement = rule.headers;
            result.headers = (original) => (replacement ? [...replacement] : original.map((h, i) => (i === original.length - 1 ? `${h} (changed)` : h)));
            this.spend(active, result.applied);
          }
          break;
        default:
          break;
      }
    }
    return result;
  }

  private live(): ActiveRule[] {
    return this.rules.filter((active) => active.remaining > 0);
  }

  private matches(
    active: ActiveRule,
    rule: { endpoint: FaultEndpoint; pageNumber?: number; call?: number },
    endpoint: FaultEndpoint,
    call: number,
    pageNumber: number | null,
  ): boolean {
    if (active.remaining <= 0 || rule.endpoint !== endpoint) return false;
    if (rule.pageNumber !== undefined && rule.pageNumber !== pageNumber) return false;
    if (rule.call !== undefined && rule.call !== call - active.callsBefore[endpoint]) return false;
    return true;
  }

  private spend(active: ActiveRule, applied: FaultKind[]): void {
    active.remaining--;
    applied.push(active.rule.kind);
  }
}

function retryAfterHeader(value: number | Date | string | null | undefined): string | null {
  if (value === null) return null;
  if (value === undefined) return '1';
  if (value instanceof Date) return value.toUTCString();
  return String(value);
}

function validate(rule: FaultRule): void {
  const fail = (problem: string): never => {
    throw new TypeError(`invalid fault rule ${JSON.stringify(rule)}: ${problem}`);
  };
  if (rule.times !== undefined && !(rule.times === Number.POSITIVE_INFINITY || (Number.isInteger(rule.times) && rule.times > 0))) {
    fail('times must be a positive integer or Infinity');
  }
  if ('call' in rule && rule.call !== undefined && !(Number.isInteger(rule.call) && rule.call > 0)) fail('call is 1-based');
  if ('pageNumber' in rule && rule.pageNumber !== undefined && !(Number.isInteger(rule.pageNumber) && rule.pageNumber >= 0)) {
    fail('pageNumber is a 0-based integer');
  }
  if ('endpoint' in rule && rule.endpoint !== 'token' && rule.endpoint !== 'export') fail("endpoint is 'token' or 'export'");
  switch (rule.kind) {
    case 'server-error':
      if (!(rule.status in SERVER_ERROR_MESSAGES)) fail('status must be 500, 502, 503 or 504');
      break;
    case 'delay':
      if (!(Number.isFinite(rule.delayMs) && rule.delayMs >= 0)) fail('delayMs must be >= 0');
      break;
    case 'token-expiry':
      if (!(Number.isInteger(rule.afterExportCalls) && rule.afterExportCalls >= 0)) fail('afterExportCalls must be an integer >= 0');
      break;
    case 'total-rows-drift':
      if (!Number.isInteger(rule.delta) || !(Number.isInteger(rule.fromPage) && rule.fromPage >= 0)) fail('delta and fromPage must be integers');
      break;
    case 'rate-limit':
    case 'connection-reset':
    case 'malformed-json':
    case 'header-mismatch':
      break;
    default:
      fail(`unknown kind '${(rule as { kind: unknown }).kind}'`);
  }
}
