import { describe, expect, it } from 'vitest';
import { awsSigningScopeOf } from '../../src/config/aws-signing-scope.js';

describe('awsSigningScopeOf', () => {
  it('reads the signing name and region of AWS Glue’s and Amazon S3 Tables’ endpoints, FIPS, China and dual-stack ones too', () => {
    expect(awsSigningScopeOf('https://glue.eu-west-1.amazonaws.com/iceberg')).toEqual({ signingName: 'glue', signingRegion: 'eu-west-1' });
    expect(awsSigningScopeOf('https://s3tables.us-east-1.amazonaws.com/iceberg')).toEqual({ signingName: 's3tables', signingRegion: 'us-east-1' });
    expect(awsSigningScopeOf('https://glue-fips.us-gov-west-1.amazonaws.com/iceberg')).toEqual({ signingName: 'glue', signingRegion: 'us-gov-west-1' });
    expect(awsSigningScopeOf('https://glue.cn-north-1.amazonaws.com.cn/iceberg')).toEqual({ signingName: 'glue', signingRegion: 'cn-north-1' });
    expect(awsSigningScopeOf('https://glue.ap-southeast-2.api.aws/iceberg')).toEqual({ signingName: 'glue', signingRegion: 'ap-southeast-2' });
  });

  it('says nothing of a host AWS does not name so', () => {
    expect(awsSigningScopeOf('http://127.0.0.1:8181/iceberg')).toEqual({});
    expect(awsSigningScopeOf('https://glue.example.com/iceberg')).toEqual({});
    expect(awsSigningScopeOf('https://amazonaws.com.evil.example/iceberg')).toEqual({});
    expect(awsSigningScopeOf('not a url')).toEqual({});
  });
});
