// A static import in a module only s3:// targets load (the store is imported dynamically, index.ts):
// a dynamic import of the SDK's CommonJS build loses its classes in the bundle's interop.
import { S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';

/** The environment's `sinks.s3` settings (config/environment-schema.ts). */
export interface S3Settings {
  region?: string;
  endpoint?: string;
  forcePathStyle?: boolean;
  requestTimeoutMs?: number;
  allowInsecureHttp?: boolean;
}

/**
 * A client for the given settings. Loaded on demand: the AWS SDK adds to every start, which runs
 * writing no s3:// target never pay (test/cli/bundle-s3.test.ts checks it).
 *
 * Credentials come from the SDK's default chain, never from tilehouse's files: environment
 * variables, the shared config and credentials files (profiles, SSO), web identity (IRSA on EKS:
 * AWS_ROLE_ARN + AWS_WEB_IDENTITY_TOKEN_FILE), EKS Pod Identity and the container or instance
 * metadata. The region: the setting, else the chain's (AWS_REGION, the profile), else us-east-1
 * for an S3-compatible endpoint (which usually ignores it but must sign with one).
 *
 * The SDK's own retry is off (maxAttempts 1): every request is retried by tilehouse's one loop
 * (s3-requests.ts), with the run's budget, and a lost answer to the publishing copy must be judged
 * by reading the target, which only the writer knows how to do. Checksums are computed only where
 * S3 requires them: S3-compatible stores disagree about the newer flexible checksums, and the
 * writer sends Content-MD5 on every upload itself.
 *
 * `credentials`, when given, replace the chain: the ones a table's catalog vended (vended-identity.ts).
 */
export async function createS3Client(
  settings: S3Settings = {},
  env: NodeJS.ProcessEnv = process.env,
  credentials?: S3ClientConfig['credentials'],
): Promise<S3Client> {
  const region = settings.region ?? env.AWS_REGION ?? env.AWS_DEFAULT_REGION ?? (settings.endpoint !== undefined ? 'us-east-1' : undefined);
  return new S3Client({
    ...(region !== undefined ? { region } : {}),
    ...(settings.endpoint !== undefined ? { endpoint: settings.endpoint } : {}),
    forcePathStyle: settings.forcePathStyle ?? settings.endpoint !== undefined,
    maxAttempts: 1,
    ...(credentials !== undefined ? { credentials } : {}),
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}
