import { EngineError, isTransientEngineError, SCHEMA_CODES } from '../../engine/index.js';

/** A failure that retrying cannot fix (a missing table, an unsupported option): the pipe Fails. */
export class PermanentError extends Error {}

/**
 * A part of a batch's range the engine could not read at all (a corrupt or mislabelled file): it
 * is set aside into the error table, and the rest of the batch is read again without it.
 */
export class UnreadablePartError extends Error {
  constructor(
    readonly key: string,
    message: string,
  ) {
    super(message);
  }
}

/** Turns an engine failure on one part into a set-aside part, unless it may pass on a retry. */
export function asUnreadablePart(error: unknown, key: string, redact: (text: string) => string): unknown {
  if (error instanceof EngineError && error.code !== undefined && SCHEMA_CODES.has(error.code)) {
    // The destination no longer fits the pipe: no part is to blame, and retrying will not help.
    return new PermanentError(`the destination table no longer fits the pipe: ${redact(error.message)}`);
  }
  if (isTransientEngineError(error)) return error;
  return new UnreadablePartError(key, redact(error instanceof Error ? error.message : String(error)));
}
