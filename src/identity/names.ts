import type { Problem } from '../errors.js';

/** Names of organizations, services, keys, teams and users: short, printable, no surrounding space. */
export function checkName(path: string, name: unknown, problems: Problem[]): void {
  if (typeof name !== 'string' || name.length === 0) {
    problems.push({ path, message: 'Required: give a non-empty name' });
  } else if (name.length > 255) {
    problems.push({ path, message: 'Too long: use at most 255 characters' });
  } else if (name.trim() !== name || /\p{Cc}/u.test(name)) {
    problems.push({ path, message: 'Use printable characters without leading or trailing spaces' });
  }
}
