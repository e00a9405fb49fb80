/**
 * What an AWS endpoint's host says of the signature its requests need: AWS names its endpoints
 * `<signing name>.<region>.amazonaws.com` (`glue.eu-west-1.amazonaws.com`,
 * `s3tables.us-east-1.amazonaws.com`; `-fips` after the name, `.amazonaws.com.cn` in China,
 * `.api.aws` for dual-stack), and pyiceberg and Iceberg's Java client take the same two values as
 * `rest.signing-name` / `rest.signing-region`. Pure: the schema asks it, and so does the signer.
 */
const AWS_ENDPOINT = /^([a-z0-9]+)(?:-fips)?\.(?:dualstack\.)?([a-z]{2}(?:-[a-z]+)+-\d+)\.(?:amazonaws\.com|amazonaws\.com\.cn|api\.aws)$/;

export interface AwsSigningScope {
  signingName?: string;
  signingRegion?: string;
}

/** The signing name and region an endpoint's host gives, or nothing for a host AWS does not name so. */
export function awsSigningScopeOf(uri: string): AwsSigningScope {
  let host: string;
  try {
    host = new URL(uri).hostname.toLowerCase();
  } catch {
    return {};
  }
  const match = AWS_ENDPOINT.exec(host);
  return match === null ? {} : { signingName: match[1]!, signingRegion: match[2]! };
}
