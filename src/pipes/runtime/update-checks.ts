import type { Problem } from '../../errors.js';
import { type PipeConfig, sameSource } from '../model.js';
import { type ChangeContext, checksChanges, type SourceConnector } from '../sources/index.js';

/**
 * What a PATCH of a pipe's source must pass before it is stored, checked against the real source as
 * at create: a new password, key or role is tried (an IAM role STS refuses is a 400, not a pipe
 * that fails later), and a connector whose position lives at the source checks that the change
 * keeps it (a database pipe moved to another address: the same server, its slot still there).
 * Nothing changed in the source object: nothing to check.
 */
export async function updateProblems(
  before: PipeConfig,
  after: PipeConfig,
  context: ChangeContext,
  /** The connector of the pipe's kind (sources/kind.ts). */
  connector: SourceConnector | undefined,
): Promise<Problem[]> {
  if (sameSource(before, after)) return [];
  if (!connector) return [];
  if (checksChanges(connector)) return connector.changedProblems(before, after, context);
  return connector.createProblems(after, { ...context, validateSamples: false });
}
