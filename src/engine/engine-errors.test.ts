import { describe, expect, it } from 'vitest';
import {
  EngineError,
  EngineUnavailableError,
  isBadDataEngineError,
  isDefinitionError,
  isTransientEngineError,
  StatementTimeLimitError,
} from './engine.js';

const engineError = (code: number | undefined) => new EngineError('the engine said no', code);

describe('isTransientEngineError: only what may pass on a retry', () => {
  it('a syntax error or an unknown type is not transient, and is a definition error', () => {
    for (const code of [62, 50, 46, 497]) {
      expect(isTransientEngineError(engineError(code)), `code ${code}`).toBe(false);
      expect(isDefinitionError(engineError(code))).toBe(true);
    }
    expect(engineError(62).condition).toBe('SLUICE_ERR_ENGINE_DEFINITION');
  });

  it('a table that no longer fits the pipe is not transient', () => {
    expect(isTransientEngineError(engineError(16))).toBe(false);
    expect(engineError(16).condition).toBe('SLUICE_ERR_DESTINATION_MISMATCH');
  });

  it('data the engine cannot read is not transient, and is bad data', () => {
    expect(isTransientEngineError(engineError(6))).toBe(false);
    expect(isBadDataEngineError(engineError(6))).toBe(true);
    expect(engineError(6).condition).toBe('SLUICE_ERR_ENGINE_BAD_DATA');
  });

  it('the engine unavailable, a time limit, an unknown or absent code, and other errors are transient', () => {
    expect(isTransientEngineError(new EngineUnavailableError('the engine is closed'))).toBe(true);
    expect(new EngineUnavailableError('x').condition).toBe('SLUICE_ERR_ENGINE_UNAVAILABLE');
    expect(isTransientEngineError(new StatementTimeLimitError(1000))).toBe(true);
    expect(new StatementTimeLimitError(1000).condition).toBe('SLUICE_ERR_STATEMENT_TIME_LIMIT');
    expect(isTransientEngineError(engineError(159))).toBe(true); // TIMEOUT_EXCEEDED
    expect(isTransientEngineError(engineError(999_999))).toBe(true);
    expect(isTransientEngineError(engineError(undefined))).toBe(true);
    expect(engineError(undefined).condition).toBe('SLUICE_ERR_ENGINE');
    expect(isTransientEngineError(Object.assign(new Error('reset'), { code: 'ECONNRESET' }))).toBe(true);
    expect(isBadDataEngineError(new Error('reset'))).toBe(false);
  });
});
