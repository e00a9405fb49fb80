import { readFile } from 'node:fs/promises';
import { registerSecret } from '../secret-scrubber.js';
import { ConfigError } from './config-error.js';
import { ENV_REFERENCE, type SourceConfig } from './environment-schema.js';

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

async function readSecretFile(configFile: string, fileField: string, filePath: string): Promise<string> {
  try {
    // Kubernetes secret mounts often end with a newline that is not part of the secret.
    const value = (await readFile(filePath, 'utf8')).replace(/\r?\n$/, '');
    if (value === '') throw new Error('file is empty');
    return value;
  } catch (error) {
    throw ConfigError.single({
      file: configFile,
      field: `source.${fileField}`,
      value: JSON.stringify(filePath),
      message: `cannot read the secret file (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
    });
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
    throw ConfigError.single({
      file: configFile,
      field: `source.${field}`,
      message: 'a literal secret is refused (the value is not shown); use ${ENV_NAME} or source.clientSecretFile',
    });
  }
  if (match === null) return { value: reference!, literal: true }; // a literal client id (allowed; ids are not secret)
  const variable = match[1]!;
  const value = env[variable];
  if (value === undefined || value === '') {
    // Name the variable, never a value.
    throw ConfigError.single({
      file: configFile,
      field: `source.${field}`,
      value: JSON.stringify(reference),
      message: `environment variable ${variable} is not set`,
    });
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

/** Resolves the client id and secret from the environment or mounted files. */
export async function resolveCredentials(
  source: SourceConfig,
  configFile: string,
  env: Environment = process.env,
): Promise<ClientCredentials> {
  return {
    clientId: await resolveOne(configFile, { field: 'clientId', reference: source.clientId, fileField: 'clientIdFile', filePath: source.clientIdFile }, env),
    clientSecret: await resolveOne(configFile, { field: 'clientSecret', reference: source.clientSecret, fileField: 'clientSecretFile', filePath: source.clientSecretFile }, env),
  };
}

/** The audience the token is requested for: configured, or the tenant host of baseUrl. */
export function audienceOf(source: SourceConfig): string {
  return source.audience ?? new URL(source.baseUrl).hostname;
}
