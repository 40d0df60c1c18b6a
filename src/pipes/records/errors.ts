import { EngineError, isBadDataEngineError, SCHEMA_CODES } from '../../engine/index.js';
import { CodedError, type PermanentCode } from '../../errors.js';

/**
 * A failure that retrying cannot fix (a missing table, an unsupported option): the pipe Fails.
 * Its code is one the catalog does not retry (src/error-codes.ts), checked by the type.
 */
export class PermanentError extends CodedError {
  constructor(
    override readonly code: PermanentCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
  }
}

/**
 * A part of a batch's range the engine could not read at all (a corrupt or mislabelled file): it
 * is set aside into the error table, and the rest of the batch is read again without it.
 */
export class UnreadablePartError extends CodedError {
  constructor(
    readonly key: string,
    message: string,
  ) {
    super('SLUICE_ERR_UNREADABLE_PART', message);
  }
}

/**
 * The service's engine refused a part of a batch it loaded itself (records/copy-load.ts), after it
 * may have written some of its rows: the runtime empties the batch's stages and reads the batch
 * again, which the source then reads through the source reader (EngineFirst), as it would have
 * without the engine's own load. The source logs the refusal (EngineFirst).
 */
export class ReadAgainError extends CodedError {
  constructor(
    readonly key: string,
    options: { cause: unknown },
  ) {
    super('SLUICE_ERR_READ_AGAIN', `the engine refused ${key}: the batch is read again`, options);
  }
}

/** Turns an engine failure on one part into a set-aside part, unless it may pass on a retry. */
export function asUnreadablePart(error: unknown, key: string, redact: (text: string) => string): unknown {
  if (error instanceof EngineError && error.code !== undefined && SCHEMA_CODES.has(error.code)) {
    // The destination no longer fits the pipe: no part is to blame, and retrying will not help.
    return new PermanentError(
      'SLUICE_ERR_DESTINATION_MISMATCH',
      `the destination table no longer fits the pipe: ${redact(error.message)}`,
    );
  }
  // Only what the engine says of the part's bytes sets it aside: anything else is the pipe's.
  if (!isBadDataEngineError(error)) return error;
  return new UnreadablePartError(key, redact(error instanceof Error ? error.message : String(error)));
}
