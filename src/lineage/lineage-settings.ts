import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { ConfigError } from '../config/config-error.js';
import { yamlValueOf } from '../config/read-yaml.js';
import { lineageTransportSchema, type LineageConfig, type LineageTransportConfig } from '../config/lineage-schema.js';
import { TilehouseError } from '../errors.js';

/**
 * The OpenLineage settings of a process, read the way the OpenLineage clients read theirs, without
 * loading the implementation: the environment file's `lineage:` section, then the clients' YAML
 * file (`OPENLINEAGE_CONFIG`), then `OPENLINEAGE_URL` (+ `OPENLINEAGE_ENDPOINT`,
 * `OPENLINEAGE_API_KEY`), each later one replacing the transport of the one before; then
 * `OPENLINEAGE__TRANSPORT__<KEY>` variables set single keys of it. `OPENLINEAGE_DISABLED=true`
 * (or `disabled: true` in either file) turns it all off. No transport anywhere: off.
 */

export class LineageConfigError extends TilehouseError {
  readonly code = 'lineage_config_invalid';
}

/** An orchestrator's run, as the parent facet names it. */
export interface LineageRunRef {
  namespace: string;
  name: string;
  runId: string;
}

export interface LineageSettings {
  transport: LineageTransportConfig;
  /** The namespace of tilehouse's jobs. */
  namespace: string;
  /** The orchestrator's run (OPENLINEAGE_PARENT_ID or its three-variable form) and its root. */
  parent?: { run: LineageRunRef; root: LineageRunRef } | undefined;
}

const TRUE = /^(1|true|yes|on)$/i;

/** Whether the variables or the section may turn lineage on (cheap: the run id is chosen early then). */
export function lineageWanted(env: NodeJS.ProcessEnv, section?: LineageConfig): boolean {
  if (TRUE.test(env.OPENLINEAGE_DISABLED ?? '') || section?.disabled === true) return false;
  return Boolean(env.OPENLINEAGE_URL || env.OPENLINEAGE_CONFIG || env.OPENLINEAGE__TRANSPORT__TYPE || section?.transport);
}

const fileSchema = z.object({ transport: z.unknown().optional(), disabled: z.boolean().optional() }).loose();

function fail(where: string, message: string): never {
  throw new LineageConfigError(`lineage: ${where}: ${message}`);
}

function issuesOf(error: z.ZodError): string {
  return error.issues.map((issue) => `${issue.path.length === 0 ? '(top)' : issue.path.join('.')}: ${issue.message}`).join('; ');
}

async function configFileOf(file: string): Promise<z.infer<typeof fileSchema>> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    fail(`OPENLINEAGE_CONFIG ${file}`, `cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  let document: unknown;
  try {
    // The parser's own message quotes the text (an API key, a URL's password): the place is told instead.
    document = yamlValueOf(text, file) ?? {};
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    fail(`OPENLINEAGE_CONFIG ${file}`, `is not YAML (${error.problems.map((problem) => `line ${problem.line ?? '?'}: ${problem.message}`).join('; ')})`);
  }
  const parsed = fileSchema.safeParse(document);
  if (!parsed.success) fail(`OPENLINEAGE_CONFIG ${file}`, issuesOf(parsed.error));
  return parsed.data;
}

// The keys OPENLINEAGE__TRANSPORT__<KEY> may set, as the clients spell them in YAML.
const NESTED_KEYS: Record<string, string[]> = {
  TYPE: ['type'],
  URL: ['url'],
  ENDPOINT: ['endpoint'],
  TIMEOUT: ['timeout'],
  COMPRESSION: ['compression'],
  AUTH__TYPE: ['auth', 'type'],
  AUTH__API_KEY: ['auth', 'apiKey'],
  AUTH__APIKEY: ['auth', 'apiKey'],
  LOG_FILE_PATH: ['log_file_path'],
  APPEND: ['append'],
  PROJECT_ID: ['project_id'],
  LOCATION: ['location'],
};

function withNestedVariables(transport: Record<string, unknown> | undefined, env: NodeJS.ProcessEnv): Record<string, unknown> | undefined {
  const prefix = 'OPENLINEAGE__TRANSPORT__';
  const set = Object.entries(env).filter(([name, value]) => name.startsWith(prefix) && value !== undefined);
  if (set.length === 0) return transport;
  // A different type starts from nothing: the keys of another transport would be refused.
  const type = env[`${prefix}TYPE`];
  const merged: Record<string, unknown> = structuredClone(type !== undefined && type !== transport?.type ? {} : (transport ?? {}));
  for (const [name, value] of set) {
    const keyPath = NESTED_KEYS[name.slice(prefix.length)];
    if (keyPath === undefined) fail(name, `is not a key tilehouse reads (${Object.keys(NESTED_KEYS).join(', ')})`);
    const [first, second] = keyPath as [string, string?];
    const typed = /^\d+(\.\d+)?$/.test(value as string) ? Number(value) : value === 'true' ? true : value;
    if (second === undefined) merged[first] = typed;
    else merged[first] = { ...(merged[first] as Record<string, unknown> | undefined), [second]: typed };
  }
  return merged;
}

function runRefOf(where: string, value: { namespace?: string | undefined; name?: string | undefined; runId?: string | undefined }): LineageRunRef | undefined {
  const { namespace, name, runId } = value;
  if (namespace === undefined && name === undefined && runId === undefined) return undefined;
  if (!namespace || !name || !runId) fail(where, 'needs a namespace, a job name and a run id');
  if (!z.uuid().safeParse(runId).success) fail(where, `the run id ${JSON.stringify(runId)} is not a UUID`);
  return { namespace, name, runId };
}

/** `namespace/job/runId` as dbt-ol and Airflow's `lineage_parent_id` macro write it (a job name may hold '/'). */
function runRefOfId(variable: string, id: string | undefined): LineageRunRef | undefined {
  if (id === undefined || id === '') return undefined;
  const first = id.indexOf('/');
  const last = id.lastIndexOf('/');
  if (first <= 0 || last <= first) fail(variable, `${JSON.stringify(id)} is not namespace/job/runId`);
  return runRefOf(variable, { namespace: id.slice(0, first), name: id.slice(first + 1, last), runId: id.slice(last + 1) });
}

function runRefOfVariables(env: NodeJS.ProcessEnv, prefix: 'OPENLINEAGE_PARENT' | 'OPENLINEAGE_ROOT_PARENT'): LineageRunRef | undefined {
  return (
    runRefOfId(`${prefix}_ID`, env[`${prefix}_ID`]) ??
    runRefOf(`${prefix}_RUN_ID / _JOB_NAMESPACE / _JOB_NAME`, {
      namespace: env[`${prefix}_JOB_NAMESPACE`] || undefined,
      name: env[`${prefix}_JOB_NAME`] || undefined,
      runId: env[`${prefix}_RUN_ID`] || undefined,
    })
  );
}

/**
 * A consumer's URL with a user or password in it (`http://user:pass@marquez:5000`) is refused, its
 * value not shown: the clients disagree on it (Python's requests turns it into Basic auth, the Java
 * client drops it), an undici error or a log line that names the URL would print the password, and
 * a URL is rarely kept as a secret (a ConfigMap, a pod spec). The key goes in OPENLINEAGE_API_KEY.
 */
function refuseCredentialsIn(where: string, url: string): void {
  const parsed = new URL(url);
  if (parsed.username === '' && parsed.password === '') return;
  fail(
    where,
    'the URL carries a user or password (user:password@host), which tilehouse does not send and will not print (the value is not shown): ' +
      "remove it from the URL and give the consumer's key in OPENLINEAGE_API_KEY (sent as Authorization: Bearer <key>), from a Secret",
  );
}

/** The settings, or undefined when lineage is off. Throws LineageConfigError for what cannot be used. */
export async function lineageSettingsOf(env: NodeJS.ProcessEnv, section: LineageConfig | undefined): Promise<LineageSettings | undefined> {
  if (!lineageWanted(env, section)) return undefined;
  let transport: Record<string, unknown> | undefined = section?.transport;
  let where = 'lineage.transport of the environment file';
  if (env.OPENLINEAGE_CONFIG) {
    const file = await configFileOf(env.OPENLINEAGE_CONFIG);
    if (file.disabled === true) return undefined;
    if (file.transport !== undefined) {
      transport = file.transport as Record<string, unknown>;
      where = `OPENLINEAGE_CONFIG ${env.OPENLINEAGE_CONFIG}: transport`;
    }
  }
  if (env.OPENLINEAGE_URL) {
    transport = {
      type: 'http',
      url: env.OPENLINEAGE_URL,
      ...(env.OPENLINEAGE_ENDPOINT ? { endpoint: env.OPENLINEAGE_ENDPOINT } : {}),
      ...(env.OPENLINEAGE_API_KEY ? { auth: { type: 'api_key', apiKey: env.OPENLINEAGE_API_KEY } } : {}),
    };
    where = 'OPENLINEAGE_URL';
  }
  const nested = withNestedVariables(transport, env);
  // Where the URL came from, for its refusal: a nested variable only when one set it (or a new type started over).
  let urlFrom = where;
  if (nested !== transport) {
    where = 'OPENLINEAGE__TRANSPORT__*';
    if (env.OPENLINEAGE__TRANSPORT__URL !== undefined || nested?.type !== transport?.type) urlFrom = 'OPENLINEAGE__TRANSPORT__URL';
  }
  if (nested === undefined) return undefined;
  const parsed = lineageTransportSchema.safeParse(nested);
  if (!parsed.success) fail(where, issuesOf(parsed.error));
  if (parsed.data.type === 'http') refuseCredentialsIn(urlFrom, parsed.data.url);
  const run = runRefOfVariables(env, 'OPENLINEAGE_PARENT');
  const root = runRefOfVariables(env, 'OPENLINEAGE_ROOT_PARENT');
  if (root !== undefined && run === undefined) fail('OPENLINEAGE_ROOT_PARENT_ID', 'a root is given without a parent (OPENLINEAGE_PARENT_ID)');
  return {
    transport: parsed.data,
    namespace: env.OPENLINEAGE_NAMESPACE || section?.namespace || 'tilehouse',
    // A parent without a root is the root itself (the spec's rule for a run started by a top-level one).
    parent: run === undefined ? undefined : { run, root: root ?? run },
  };
}
