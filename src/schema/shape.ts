import type { Problem } from '../errors.js';

/**
 * What a schema check found, asked by path: which parts of a checked value can be read as their
 * schema types them. Rules read a body once it is checked, through this, so a client still learns
 * of every rule broken in the parts that passed, in the same answer as the schema's problems.
 */
export class CheckedShape {
  constructor(private readonly problems: readonly Problem[]) {}

  /** The value at `path` is there with its schema's type: its own fields may still be wrong. */
  readable(path: string): boolean {
    return !this.problems.some((p) => p.path === path || isInside(path, p.path));
  }

  /** The value at `path` passed its schema whole (absent counts, when its schema lets it be). */
  valid(path: string): boolean {
    return this.readable(path) && !this.problems.some((p) => isInside(p.path, path));
  }
}

/** `path` lies strictly inside `parent`: `a.b` and `a[0]` inside `a`; everything inside the root. */
function isInside(path: string, parent: string): boolean {
  if (parent === '') return path !== '';
  return path.startsWith(`${parent}.`) || path.startsWith(`${parent}[`);
}
