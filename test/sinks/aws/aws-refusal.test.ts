import { describe, expect, it } from 'vitest';
import { awsRefusalOf } from '../../../src/sinks/aws/aws-refusal.js';
import { registerSecret } from '../../../src/secret-scrubber.js';

const json = (type: string | undefined) =>
  new Headers(type === undefined ? {} : { 'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.coral.service/` });

describe('awsRefusalOf', () => {
  it('tells a wrong secret key, a skewed clock and an expired session token apart, as AWS’s JSON services say them', () => {
    expect(
      awsRefusalOf(
        json('InvalidSignatureException'),
        JSON.stringify({ message: 'The request signature we calculated does not match the signature you provided.' }),
      ),
    ).toEqual({
      code: 'aws_signature_mismatch',
      type: 'InvalidSignatureException',
      message: 'The request signature we calculated does not match the signature you provided.',
    });
    expect(
      awsRefusalOf(
        json('InvalidSignatureException'),
        JSON.stringify({ message: 'Signature expired: 20261208T000000Z is now earlier than 20261208T000500Z (20261208T001000Z - 5 min.)' }),
      ).code,
    ).toBe('aws_clock_skewed');
    expect(
      awsRefusalOf(json(undefined), JSON.stringify({ __type: 'com.amazonaws.glue#InvalidSignatureException', message: 'Signature not yet current: x' })),
    ).toMatchObject({
      code: 'aws_clock_skewed',
      type: 'InvalidSignatureException',
    });
    expect(awsRefusalOf(json('ExpiredTokenException'), JSON.stringify({ message: 'The security token included in the request is expired' })).code).toBe(
      'aws_credentials_expired',
    );
  });

  it('reads an Iceberg error model and S3’s XML too', () => {
    expect(
      awsRefusalOf(
        new Headers(),
        JSON.stringify({ error: { code: 403, type: 'SignatureDoesNotMatch', message: 'Credential should be scoped to correct service' } }),
      ),
    ).toEqual({ code: 'aws_signature_mismatch', type: 'SignatureDoesNotMatch', message: 'Credential should be scoped to correct service' });
    expect(awsRefusalOf(new Headers(), '<Error><Code>RequestTimeTooSkewed</Code><Message>The difference is too large.</Message></Error>')).toEqual({
      code: 'aws_clock_skewed',
      type: 'RequestTimeTooSkewed',
      message: 'The difference is too large.',
    });
  });

  it('gives no code of its own to an unknown key or a permission, and scrubs what the message echoes', () => {
    registerSecret('echoed-session-token-0123456789');
    expect(
      awsRefusalOf(
        json('UnrecognizedClientException'),
        JSON.stringify({ message: 'The security token included in the request is invalid: echoed-session-token-0123456789' }),
      ),
    ).toEqual({ code: undefined, type: 'UnrecognizedClientException', message: 'The security token included in the request is invalid: [redacted]' });
    expect(awsRefusalOf(json('AccessDeniedException'), JSON.stringify({ Message: 'User is not authorized to perform glue:GetCatalog' })).code).toBeUndefined();
  });
});
