import { excerpt } from '../../secret-scrubber.js';

/**
 * What an AWS service's refusal of a signed request says, read the way the AWS SDKs read it: the
 * error type from the `x-amzn-ErrorType` header (JSON protocols: Glue, S3 Tables), a body's
 * `__type` / `code` / Iceberg `error.type`, or S3's XML `<Code>`, and the message beside it. Three
 * causes have a code of their own, because each has one fix the person on call must be told:
 *
 * - `aws_signature_mismatch`: `InvalidSignatureException` / `SignatureDoesNotMatch` ("The request
 *   signature we calculated does not match…", or a credential scoped to another service or region);
 * - `aws_clock_skewed`: "Signature expired: … is now earlier than …" / "Signature not yet current",
 *   `RequestTimeTooSkewed` (AWS takes a signature within 5 minutes of its own time);
 * - `aws_credentials_expired`: `ExpiredTokenException` / `ExpiredToken` ("The security token
 *   included in the request is expired").
 *
 * Anything else (an unknown access key, `AccessDeniedException`) keeps the caller's own code. Pure.
 */
export type AwsRefusalCode = 'aws_signature_mismatch' | 'aws_clock_skewed' | 'aws_credentials_expired';

export interface AwsRefusal {
  /** Undefined: an AWS refusal without a code of its own. */
  code: AwsRefusalCode | undefined;
  /** `InvalidSignatureException`, as the service named it. */
  type: string | undefined;
  /** The service's message, scrubbed and cut (a gateway may echo what it was sent). */
  message: string | undefined;
}

const XML_CODE = /<Code>([^<]+)<\/Code>/;
const XML_MESSAGE = /<Message>([^<]*)<\/Message>/;

export function awsRefusalOf(headers: Headers, text: string): AwsRefusal {
  let type = headers.get('x-amzn-errortype')?.split(':')[0]?.trim() || undefined;
  let message: string | undefined;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (typeof body === 'object' && body !== null) {
    const record = body as Record<string, unknown> & { error?: Record<string, unknown> };
    const nested = typeof record.error === 'object' && record.error !== null ? record.error : {};
    type ??= [record.__type, record.code, record.Code, nested.type, nested.code].find((value): value is string => typeof value === 'string');
    message = [record.message, record.Message, nested.message].find((value): value is string => typeof value === 'string');
  } else {
    type ??= XML_CODE.exec(text)?.[1];
    message = XML_MESSAGE.exec(text)?.[1];
  }
  // `com.amazonaws.glue#InvalidSignatureException` → InvalidSignatureException.
  type = type?.split('#').at(-1);
  const said = `${type ?? ''} ${message ?? ''}`;
  const code: AwsRefusalCode | undefined = /ExpiredToken|security token included in the request is expired/i.test(said)
    ? 'aws_credentials_expired'
    : /RequestTimeTooSkewed|Signature expired|Signature not yet current/i.test(said)
      ? 'aws_clock_skewed'
      : /InvalidSignature|SignatureDoesNotMatch|signature we calculated does not match/i.test(said)
        ? 'aws_signature_mismatch'
        : undefined;
  return { code, type, message: message === undefined ? undefined : excerpt(message, 300, { collapse: true }) };
}
