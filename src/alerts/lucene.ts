import { ident, literal } from '../engine/index.js';
import type { ErrorCode } from '../errors.js';

/** A Lucene query the subset does not cover, or does not parse, with where it went wrong. */
export class LuceneError extends Error {
  readonly code: ErrorCode = 'SLUICE_ERR_LUCENE_SYNTAX';
}

type Token =
  | { kind: 'word'; text: string }
  | { kind: 'quoted'; text: string }
  | { kind: 'op'; text: '(' | ')' | '[' | ']' | '{' | '}' | ':' | '-' };

/**
 * Translates the Lucene subset of tile filters to a ClickHouse boolean expression (issue #5):
 * `field:value`, quoted phrases, wildcards `*` and `?`, ranges `[a TO b]` and `{a TO b}` (with `*`
 * for an open end), comparisons `field:>30` (`>=`, `<`, `<=`), AND / OR / NOT (and `-`), parentheses, and implicit AND between terms. Every
 * value becomes a quoted literal and every field a quoted identifier, so nothing reaches the SQL
 * unescaped.
 */
export function luceneToSql(query: string): string {
  const tokens = tokenize(query);
  if (tokens.length === 0) return '1';
  const parser = new Parser(tokens);
  const sql = parser.or();
  if (!parser.done()) throw new LuceneError(`unexpected "${parser.peekText()}"`);
  return sql;
}

function tokenize(query: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < query.length) {
    const c = query[i] as string;
    if (/\s/.test(c)) {
      i += 1;
    } else if (c === '"') {
      let text = '';
      i += 1;
      while (i < query.length && query[i] !== '"') {
        if (query[i] === '\\' && i + 1 < query.length) i += 1;
        text += query[i];
        i += 1;
      }
      if (i >= query.length) throw new LuceneError('a quoted phrase is not closed');
      i += 1;
      tokens.push({ kind: 'quoted', text });
    } else if ('()[]{}:'.includes(c) || (c === '-' && (tokens.length === 0 || isBoundary(tokens.at(-1))))) {
      tokens.push({ kind: 'op', text: c as '(' });
      i += 1;
    } else {
      let text = '';
      while (i < query.length && !/[\s()[\]{}:"]/.test(query[i] as string)) {
        if (query[i] === '\\' && i + 1 < query.length) i += 1;
        text += query[i];
        i += 1;
      }
      tokens.push({ kind: 'word', text });
    }
  }
  return tokens;
}

function isBoundary(token: Token | undefined): boolean {
  return (
    token === undefined ||
    (token.kind === 'op' && token.text !== ')' && token.text !== ']' && token.text !== '}')
  );
}

class Parser {
  private at = 0;
  constructor(private readonly tokens: Token[]) {}

  done(): boolean {
    return this.at >= this.tokens.length;
  }

  peekText(): string {
    return this.tokens[this.at]?.text ?? '';
  }

  or(): string {
    const parts = [this.and()];
    while (this.keyword('OR')) parts.push(this.and());
    return parts.length === 1 ? (parts[0] as string) : `(${parts.join(' OR ')})`;
  }

  private and(): string {
    const parts = [this.not()];
    for (;;) {
      if (this.keyword('AND')) {
        parts.push(this.not());
        continue;
      }
      const next = this.tokens[this.at];
      const startsTerm =
        next && !(next.kind === 'op' && next.text === ')') && !(next.kind === 'word' && next.text === 'OR');
      if (!startsTerm) break;
      parts.push(this.not()); // implicit AND
    }
    return parts.length === 1 ? (parts[0] as string) : `(${parts.join(' AND ')})`;
  }

  private not(): string {
    if (this.keyword('NOT') || this.op('-')) return `NOT ${this.not()}`;
    return this.primary();
  }

  private primary(): string {
    if (this.op('(')) {
      const inner = this.or();
      if (!this.op(')')) throw new LuceneError('a parenthesis is not closed');
      return inner; // groups of several terms come back parenthesised already
    }
    const field = this.tokens[this.at];
    if (field?.kind !== 'word')
      throw new LuceneError(`expected field:value, got "${field?.text ?? 'the end'}"`);
    this.at += 1;
    if (!this.op(':')) throw new LuceneError(`"${field.text}" needs a field: write field:value`);
    const column = columnOf(field.text);
    if (this.op('[')) return this.range(column, true, ']');
    if (this.op('{')) return this.range(column, false, '}');
    const value = this.tokens[this.at];
    if (!value || value.kind === 'op') throw new LuceneError(`${field.text}: expected a value`);
    this.at += 1;
    // field:>30, field:>=30, field:<30, field:<=30 (the original's search syntax has them).
    const comparison = value.kind === 'word' ? /^(>=|<=|>|<)(.+)$/.exec(value.text) : null;
    if (comparison) return `${column} ${comparison[1]} ${literal(comparison[2] as string)}`;
    if (value.kind === 'word' && /[*?]/.test(value.text)) {
      if (value.text === '*') return `${column} IS NOT NULL`;
      return `toString(${column}) LIKE ${literal(likePattern(value.text))}`;
    }
    return `${column} = ${literal(value.text)}`;
  }

  private range(column: string, inclusive: boolean, close: ']' | '}'): string {
    const low = this.word();
    if (!this.keyword('TO')) throw new LuceneError('a range reads [low TO high]');
    const high = this.word();
    if (!this.op(close)) throw new LuceneError(`a range is not closed with ${close}`);
    const conditions = [
      low === '*' ? '' : `${column} ${inclusive ? '>=' : '>'} ${literal(low)}`,
      high === '*' ? '' : `${column} ${inclusive ? '<=' : '<'} ${literal(high)}`,
    ].filter(Boolean);
    return conditions.length === 0 ? '1' : `(${conditions.join(' AND ')})`;
  }

  private word(): string {
    const token = this.tokens[this.at];
    if (!token || token.kind === 'op') throw new LuceneError('a range needs two values');
    this.at += 1;
    return token.text;
  }

  private keyword(word: 'AND' | 'OR' | 'NOT' | 'TO'): boolean {
    const token = this.tokens[this.at];
    if (token?.kind === 'word' && token.text === word) {
      this.at += 1;
      return true;
    }
    return false;
  }

  private op(text: Token['text']): boolean {
    const token = this.tokens[this.at];
    if (token?.kind === 'op' && token.text === text) {
      this.at += 1;
      return true;
    }
    return false;
  }
}

/** `service.name` reads the subcolumn `service`.`name`; each part is quoted. */
function columnOf(field: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_.]*$/.test(field) || field.endsWith('.')) {
    throw new LuceneError(`"${field}" is not a field name`);
  }
  return field.split('.').map(ident).join('.');
}

/** `*` and `?` become LIKE's `%` and `_`; the LIKE specials of the text itself are escaped. */
function likePattern(text: string): string {
  return text
    .replace(/[\\%_]/g, (c) => `\\${c}`)
    .replace(/\*/g, '%')
    .replace(/\?/g, '_');
}
