import { type Problem, ValidationError } from '../errors.js';

/**
 * Refuses a body holding the character U+0000 (NUL) with a 400 naming each place, before any route
 * reads it. The metadata store's text refuses NUL, so a name or a definition holding one would fail
 * its write: a 500 after part of the request had run. No field of the API takes it.
 */
export function refuseNul(text: string, body: unknown): ValidationError | undefined {
  // A body without the escape holds no NUL: JSON.parse refuses the raw character in a string.
  if (!/\\u0000/i.test(text)) return undefined;
  const problems: Problem[] = [];
  walk(body, '', problems);
  return problems.length > 0 ? new ValidationError(problems) : undefined;
}

const MESSAGE = 'holds the character U+0000 (NUL), which no text of this API takes: remove it';

/** Depth-first through the body (its depth is bounded by body-depth.ts before it is parsed). */
function walk(value: unknown, path: string, problems: Problem[]): void {
  if (typeof value === 'string') {
    if (value.includes('\u0000')) problems.push({ path, message: MESSAGE });
    return;
  }
  if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) walk(item, `${path}[${index}]`, problems);
    return;
  }
  if (value === null || typeof value !== 'object') return;
  for (const [key, item] of Object.entries(value)) {
    const at = path ? `${path}.${key}` : key;
    if (key.includes('\u0000')) problems.push({ path: at, message: `its name ${MESSAGE}` });
    walk(item, at, problems);
  }
}
