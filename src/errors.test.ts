import { describe, expect, it } from 'vitest';
import { ERROR_CODES, isRetried } from './error-codes.js';
import { BadRequestError, CodedError, codeOf, NotFoundError, ValidationError } from './errors.js';

describe('the catalog of error codes', () => {
  it('names every code SLUICE_ERR_<CONDITION> and describes it in one line', () => {
    for (const [code, entry] of Object.entries(ERROR_CODES)) {
      expect(code).toMatch(/^SLUICE_ERR_[A-Z0-9_]+$/);
      expect(entry.description, code).not.toMatch(/\n/);
      expect(entry.description.length, code).toBeGreaterThan(10);
    }
  });

  it('says which codes the runtime retries; an unknown code is retried as an internal error', () => {
    expect(isRetried('SLUICE_ERR_SOURCE_UNREACHABLE')).toBe(true);
    expect(isRetried('SLUICE_ERR_ENGINE_UNAVAILABLE')).toBe(true);
    expect(isRetried('SLUICE_ERR_DESTINATION_MISSING')).toBe(false);
    expect(isRetried('SLUICE_ERR_SOURCE_PRIVILEGE')).toBe(false);
    expect(isRetried('SLUICE_ERR_ENGINE_DEFINITION')).toBe(false);
    expect(isRetried('SLUICE_ERR_SOURCE_PROTOCOL')).toBe(true);
    expect(isRetried('SOMETHING_ELSE')).toBe(true);
  });

  it("codeOf reads an error's catalog code, and nothing from a code outside the catalog", () => {
    expect(codeOf(new ValidationError([{ path: 'name', message: 'Required' }]))).toBe(
      'SLUICE_ERR_VALIDATION',
    );
    expect(codeOf(new NotFoundError('SLUICE_ERR_PIPE_NOT_FOUND', 'pipe'))).toBe('SLUICE_ERR_PIPE_NOT_FOUND');
    expect(codeOf(new CodedError('SLUICE_ERR_SOURCE', 'x'))).toBe('SLUICE_ERR_SOURCE');
    expect(codeOf(Object.assign(new Error('x'), { code: 'ECONNREFUSED' }))).toBeUndefined();
    expect(codeOf(undefined)).toBeUndefined();
  });

  it("keeps the /v1 error text's first word as clients match it, beside the condition's code", () => {
    const error = new BadRequestError('SLUICE_ERR_PIPE_STATE', 'the pipe is already running (state Running)');
    expect(error.label).toBe('BAD_REQUEST');
    expect(error.code).toBe('SLUICE_ERR_PIPE_STATE');
  });
});
