import { readFile } from 'node:fs/promises';
import { ConfigError } from './config-error.js';
import { ENV_REFERENCE, type SourceConfig } from './environment-schema.js';

export interface ClientCredentials {
  clientId: string;
  clientSecret: string;
}

type Environment = Readonly<Record<string, string | undefined>>;

async function resolveOne(
  configFile: string,
  field: string,
  reference: string | undefined,
  fileField: string,
  filePath: string | undefined,
  env: Environment,
): Promise<string> {
  if (filePath !== undefined) {
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
  const match = reference === undefined ? null : ENV_REFERENCE.exec(reference);
  if (match === null) return reference!; // a literal client id (allowed; ids are not secret)
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
  return value;
}

/** Resolves the client id and secret from the environment or mounted files. */
export async function resolveCredentials(
  source: SourceConfig,
  configFile: string,
  env: Environment = process.env,
): Promise<ClientCredentials> {
  return {
    clientId: await resolveOne(configFile, 'clientId', source.clientId, 'clientIdFile', source.clientIdFile, env),
    clientSecret: await resolveOne(configFile, 'clientSecret', source.clientSecret, 'clientSecretFile', source.clientSecretFile, env),
  };
}

/** The audience the token is requested for: configured, or the tenant host of baseUrl. */
export function audienceOf(source: SourceConfig): string {
  return source.audience ?? new URL(source.baseUrl).hostname;
}
