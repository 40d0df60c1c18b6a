import { describe, expect, it } from 'vitest';
import { libraryFailureCode } from './failure-code.js';

const withCode = (code: string, message = 'the library failed') =>
  Object.assign(new Error(message), { code });

describe('libraryFailureCode reads structured fields, never words', () => {
  it("Node's network and TLS codes, also under a client's causes and aggregates", () => {
    expect(libraryFailureCode(withCode('ECONNREFUSED'))).toBe('SLUICE_ERR_SOURCE_UNREACHABLE');
    expect(libraryFailureCode(new Error('outer', { cause: withCode('ENOTFOUND') }))).toBe(
      'SLUICE_ERR_SOURCE_UNREACHABLE',
    );
    expect(libraryFailureCode(new AggregateError([withCode('DEPTH_ZERO_SELF_SIGNED_CERT')]))).toBe(
      'SLUICE_ERR_SOURCE_TLS',
    );
    expect(libraryFailureCode(withCode('ERR_TLS_CERT_ALTNAME_INVALID'))).toBe('SLUICE_ERR_SOURCE_TLS');
  });

  it("PostgreSQL's SQLSTATE classes 28 and 08, Kafka's client codes, AWS's names", () => {
    expect(libraryFailureCode(withCode('28P01'))).toBe('SLUICE_ERR_SOURCE_AUTH_REFUSED');
    expect(libraryFailureCode(withCode('08006'))).toBe('SLUICE_ERR_SOURCE_UNREACHABLE');
    expect(libraryFailureCode(withCode('PLT_KFK_AUTHENTICATION'))).toBe('SLUICE_ERR_SOURCE_AUTH_REFUSED');
    const aws = (name: string) => Object.assign(new Error('AWS said no'), { name, $metadata: {} });
    expect(libraryFailureCode(aws('UnrecognizedClientException'))).toBe('SLUICE_ERR_SOURCE_AUTH_REFUSED');
    expect(libraryFailureCode(aws('ResourceInUseException'))).toBe('SLUICE_ERR_SOURCE');
  });

  it('words alone name nothing: an error whose message says ECONNREFUSED has no code', () => {
    expect(libraryFailureCode(new Error('connect ECONNREFUSED 127.0.0.1:5432, certificate'))).toBeUndefined();
    expect(libraryFailureCode('a string')).toBeUndefined();
  });
});
