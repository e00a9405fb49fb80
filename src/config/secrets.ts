import { constants } from 'node:fs';
import { access, readFile } from 'node:fs/promises';
import { registerSecret } from '../secret-scrubber.js';
import { ConfigError, type ConfigProblem } from './config-error.js';
import { ENV_REFERENCE, type SourceConfig } from './environment-schema.js';
import { lineOf } from './read-yaml.js';

export interface ClientCredentials {
  clientId: string;
  clientSecret: string;
}

type Environment = Readonly<Record<string, string | undefined>>;

interface Resolved {
  value: string;
  /** Written in the YAML itself (allowed for the client id only). */
  literal: boolean;
}

/** A credential problem located in the config file (`file:line`), as every config problem is. */
async function locatedProblem(configFile: string, field: string, problem: Omit<ConfigProblem, 'file' | 'field' | 'line'>): Promise<ConfigProblem> {
  const line = await lineOf(configFile, ['source', field]);
  return { file: configFile, field: `source.${field}`, ...(line === undefined ? {} : { line }), ...problem };
}

async function readSecretFile(configFile: string, fileField: string, filePath: string): Promise<string> {
  try {
    // Kubernetes secret mounts often end with a newline that is not part of the secret.
    const value = (await readFile(filePath, 'utf8')).replace(/\r?\n$/, '');
    if (value === '') throw new Error('file is empty');
    return value;
  } catch (error) {
    throw ConfigError.single(
      await locatedProblem(configFile, fileField, {
        value: JSON.stringify(filePath),
        message: `cannot read the secret file (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
      }),
    );
  }
}

/** Where one credential comes from: a `${ENV}` reference (or a literal id), or a file. */
interface CredentialSpec {
  field: 'clientId' | 'clientSecret';
  reference: string | undefined;
  fileField: string;
  filePath: string | undefined;
}

async function readOne(configFile: string, { field, reference, fileField, filePath }: CredentialSpec, env: Environment): Promise<Resolved> {
  if (filePath !== undefined) return { value: await readSecretFile(configFile, fileField, filePath), literal: false };
  const match = reference === undefined ? null : ENV_REFERENCE.exec(reference);
  if (match === null && field === 'clientSecret') {
    // The schema refuses this already; the rule is kept here too, where secrets are resolved.
    // The value is never printed back: it is the secret.
    throw ConfigError.single(
      await locatedProblem(configFile, field, { message: 'a literal secret is refused (the value is not shown); use ${ENV_NAME} or source.clientSecretFile' }),
    );
  }
  if (match === null) return { value: reference!, literal: true }; // a literal client id (allowed; ids are not secret)
  const variable = match[1]!;
  const value = env[variable];
  if (value === undefined || value === '') {
    // Name the variable, never a value.
    throw ConfigError.single(
      await locatedProblem(configFile, field, { value: JSON.stringify(reference), message: `environment variable ${variable} is not set` }),
    );
  }
  return { value, literal: false };
}

/**
 * One credential's value. A value from a file or the environment is registered with the secret
 * scrubber, so it is redacted wherever it is echoed (an issuer's error_description, a log line);
 * a literal client id is not (it is in the YAML for anyone to read, and redacting it would only
 * mangle output).
 */
async function resolveOne(configFile: string, spec: CredentialSpec, env: Environment): Promise<string> {
  const { value, literal } = await readOne(configFile, spec, env);
  if (!literal) registerSecret(value, { permanent: true });
  return value;
}

function credentialSpecs(source: SourceConfig): CredentialSpec[] {
  return [
    { field: 'clientId', reference: source.clientId, fileField: 'clientIdFile', filePath: source.clientIdFile },
    { field: 'clientSecret', reference: source.clientSecret, fileField: 'clientSecretFile', filePath: source.clientSecretFile },
  ];
}

/**
 * For `tilehouse validate`, which runs where the secrets are not (a config repository's CI, a
 * laptop before `tilehouse k8s`): each credential that could not be resolved here, as a located
 * problem saying why, without reading any secret value. A set variable or a readable file is
 * taken as resolvable (whether the value is right is what `tilehouse check` finds out); a
 * literal secret in the YAML is still refused, since no place makes it right.
 */
export async function uncheckedCredentials(source: SourceConfig, configFile: string, env: Environment = process.env): Promise<ConfigProblem[]> {
  const unchecked: ConfigProblem[] = [];
  for (const { field, reference, fileField, filePath } of credentialSpecs(source)) {
    if (filePath !== undefined) {
      // access(), not a read: the file's bytes are the secret, and validate never holds one.
      const code = await access(filePath, constants.R_OK).then(
        () => undefined,
        (error: NodeJS.ErrnoException) => error.code ?? error.message,
      );
      if (code !== undefined)
        unchecked.push(
          await locatedProblem(configFile, fileField, { value: JSON.stringify(filePath), message: `the secret file cannot be read here (${code})` }),
        );
      continue;
    }
    const match = reference === undefined ? null : ENV_REFERENCE.exec(reference);
    if (match === null) {
      if (field === 'clientSecret') {
        throw ConfigError.single(
          await locatedProblem(configFile, field, {
            message: 'a literal secret is refused (the value is not shown); use ${ENV_NAME} or source.clientSecretFile',
          }),
        );
      }
      continue; // a literal client id: nothing to resolve
    }
    const variable = match[1]!;
    if (env[variable] === undefined || env[variable] === '')
      unchecked.push(
        await locatedProblem(configFile, field, { value: JSON.stringify(reference), message: `environment variable ${variable} is not set here` }),
      );
  }
  return unchecked;
}

/** Resolves the client id and secret from the environment or mounted files. */
export async function resolveCredentials(source: SourceConfig, configFile: string, env: Environment = process.env): Promise<ClientCredentials> {
  const [clientId, clientSecret] = credentialSpecs(source);
  return {
    clientId: await resolveOne(configFile, clientId!, env),
    clientSecret: await resolveOne(configFile, clientSecret!, env),
  };
}

/** The audience the token is requested for: configured, or the tenant host of baseUrl. */
export function audienceOf(source: SourceConfig): string {
  return source.audience ?? new URL(source.baseUrl).hostname;
}
