import { type Problem, ValidationError } from '../errors.js';
import { CheckedShape, type Checker, checker } from '../schema/index.js';
import { databaseDestinationRules, settingsRules, tableDestinationRules } from './destination-rules.js';
import type { CreatePipeBody, PipeSchemas } from './schema/index.js';
import type { AnySourceKind, SourceKinds } from './sources/index.js';

/**
 * A create body checked once against the schema of the kinds a Sluice runs, then the rules of the
 * hosted service (README, "Pipes": validation beyond the field types) that a JSON schema cannot
 * express, on the typed parts whose shape passed: a client learns of every problem in one round
 * trip, and no rule reads a value its schema did not check.
 */
export class PipeRules {
  private readonly checkCreate: Checker;
  private readonly checkUpdate: Checker;

  constructor(
    private readonly kinds: SourceKinds,
    schemas: PipeSchemas,
  ) {
    this.checkCreate = checker(schemas.CreatePipeBody);
    this.checkUpdate = checker(schemas.UpdatePipeBody);
  }

  /** The body, typed, when it has no problem; else a ValidationError naming every one. */
  validCreateBody(body: unknown): CreatePipeBody {
    const problems = this.createProblems(body);
    if (problems.length > 0) throw new ValidationError(problems);
    return body as CreatePipeBody;
  }

  /** The problems of a PATCH body's shape; the pipe it makes is checked whole (update.ts). */
  updateShapeProblems(body: unknown): Problem[] {
    return this.checkUpdate(body);
  }

  /** Every problem of a create body: its schema and the rules together. */
  createProblems(body: unknown): Problem[] {
    const problems = this.checkCreate(body);
    const shape = new CheckedShape(problems);
    if (!shape.readable('')) return problems;
    const pipe = body as CreatePipeBody;
    const kind = this.sourceRules(pipe.source, shape, problems);
    if (kind?.writesTablesItNames) databaseDestinationRules(pipe, shape, kind, problems);
    else tableDestinationRules(pipe, shape, problems);
    settingsRules(pipe, shape, kind, this.kinds, problems);
    const config = kind && shape.valid(`source.${kind.name}`) ? sourceOf(pipe.source, kind) : undefined;
    if (kind?.mappingRules && config !== undefined && shape.valid('fieldMappings')) {
      kind.mappingRules(config, pipe.fieldMappings, problems);
    }
    return problems;
  }

  /**
   * Exactly one kind under `source`, and that kind's rules when its own shape passed; the kind, or
   * undefined when there is not exactly one. `shape` is the check of the body `source` is in.
   */
  sourceRules(source: unknown, shape: CheckedShape, problems: Problem[]): AnySourceKind | undefined {
    if (!shape.readable('source')) return undefined;
    const given = this.kinds.list.filter((kind) => sourceOf(source, kind) !== undefined);
    if (given.length === 0) {
      problems.push({
        path: 'source',
        message: `Required: give one source kind, one of ${this.kinds.names.join(', ')}`,
      });
    } else if (given.length > 1) {
      problems.push({
        path: 'source',
        message: `Give exactly one source kind, got ${given.map((kind) => kind.name).join(' and ')}`,
      });
    }
    const kind = given.length === 1 ? given[0] : undefined;
    if (kind && shape.valid(`source.${kind.name}`)) {
      kind.rules(sourceOf(source, kind), `source.${kind.name}`, problems);
    }
    return kind;
  }
}

function sourceOf(source: unknown, kind: AnySourceKind): unknown {
  return (source as Record<string, unknown>)[kind.name];
}
