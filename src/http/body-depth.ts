import { SluiceError } from '../errors.js';

/** Deeper than any body of the API; a recursive walk (validation, redaction) stays far from the stack's end. */
export const MAX_BODY_DEPTH = 64;

export class BodyTooDeepError extends SluiceError {
  constructor() {
    super(
      'SLUICE_ERR_BODY_DEPTH',
      400,
      `the body nests objects and arrays deeper than ${MAX_BODY_DEPTH} levels; no request of this API needs that many`,
      { label: 'SLUICE_ERR_BODY_DEPTH' },
    );
  }
}

/**
 * Whether JSON text nests objects and arrays deeper than `limit`, read in one pass before it is
 * parsed (brackets inside strings do not count), so no later recursive walk meets a deep body.
 */
export function nestsDeeperThan(text: string, limit = MAX_BODY_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i += 1) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i += 1; // a backslash escapes the next character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      depth += 1;
      if (depth > limit) return true;
    } else if (c === 0x7d || c === 0x5d) depth -= 1;
  }
  return false;
}
