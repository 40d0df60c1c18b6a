import type { QueryOptions } from '../engine.js';
import { EngineError } from '../engine.js';
import { settingsClause } from '../sql.js';
import type { EngineRequest } from './protocol.js';

/**
 * Sluice's own statements carry their settings in a SETTINGS clause on a line of its own. A
 * caller's statement is sent as written; its settings are given when its connection opens.
 */
export function request(sql: string, options: QueryOptions): Omit<EngineRequest, 'id'> {
  const settings: Record<string, string | number | boolean> = { ...options.settings };
  if (options.timeoutMs !== undefined)
    settings.max_execution_time = Math.max(1, Math.ceil(options.timeoutMs / 1000));
  const caller = options.caller ?? (options.readonly ? 'reader' : undefined);
  if (caller) return { sql, caller, settings: connectionSettings(settings) };
  const clause = settingsClause(settings);
  return { sql: `${sql.trim().replace(/;\s*$/, '')}${clause ? `\n${clause.trim()}` : ''}` };
}

/** Settings as `--name=value` arguments take them: names are the engine's, values plain. */
function connectionSettings(settings: Record<string, string | number | boolean>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(settings).map(([name, value]) => {
      const text = typeof value === 'boolean' ? (value ? '1' : '0') : String(value);
      if (!/^[a-z_][a-z0-9_]*$/i.test(name) || text.includes('\0'))
        throw new EngineError(`not a setting the engine can be given: ${name}`, undefined);
      return [name, text];
    }),
  );
}

/**
 * chDB (3.4) leaves the partial output of a failed query in the session and prepends it to the
 * next result; the result asked for is always the last JSON document of the text.
 */
export function lastJsonDocument(text: string): string {
  const start = text.lastIndexOf('{\n\t"meta":');
  return start > 0 ? text.slice(start) : text;
}
