import { BadRequestError, ConflictError } from '../errors.js';

/** Every state of the hosted service (README, "Pipe states"). */
export const PIPE_STATES = [
  'Unknown',
  'Provisioning',
  'Running',
  'Degraded',
  'Stopping',
  'Stopped',
  'Failed',
  'Completed',
  'InternalError',
  'Setup',
  'Snapshot',
  'Paused',
  'Pausing',
  'Modifying',
  'Resync',
] as const;
export type PipeState = (typeof PIPE_STATES)[number];

/** States in which a pipe may have no worker, so that its status asks its source directly (a stopped pipe's slot). */
export const IDLE_STATES: readonly PipeState[] = ['Stopped', 'Failed', 'Paused', 'Degraded'];

export const PIPE_COMMANDS = ['start', 'stop', 'resync'] as const;
export type PipeCommand = (typeof PIPE_COMMANDS)[number];

/** A state change to write, with the reason kept in the pipe's history. */
export interface Transition {
  to: PipeState;
  reason: string;
}

const STARTABLE: PipeState[] = ['Stopped', 'Failed'];
const ACTIVE: PipeState[] = ['Provisioning', 'Setup', 'Snapshot', 'Running', 'Degraded', 'Resync'];
const RESYNCABLE: PipeState[] = ['Running', 'Stopped', 'Paused', 'Failed', 'Completed', 'Degraded'];

/**
 * The transitions a command asks for, per README, "Pipe states": stop from any state, start only from
 * Stopped or Failed, resync only for database pipes. Returns [] when the pipe is already where the
 * command leads. A stop writes Stopping; the pipes service writes Stopped once the runtime has
 * stopped the pipe's worker.
 */
export function transitionsFor(
  command: PipeCommand,
  current: PipeState,
  /** The pipe's kind takes `resync` (sources/kind.ts `resyncs`). */
  resyncs: boolean | undefined,
): Transition[] {
  switch (command) {
    case 'stop':
      if (current === 'Stopped') return [];
      return [{ to: 'Stopping', reason: 'stop requested' }];
    case 'start':
      // A 400 saying "is already running", as the hosted service answers: its Terraform provider
      // takes exactly that as success when it starts a pipe after an update.
      if (ACTIVE.includes(current))
        throw new BadRequestError('SLUICE_ERR_PIPE_STATE', `the pipe is already running (state ${current})`);
      if (!STARTABLE.includes(current)) {
        throw new ConflictError(
          'SLUICE_ERR_PIPE_STATE',
          `cannot start a pipe in state ${current}: start works from Stopped or Failed`,
        );
      }
      return [{ to: 'Provisioning', reason: 'start requested' }];
    case 'resync':
      if (!resyncs) {
        throw new BadRequestError(
          'SLUICE_ERR_PIPE_IMMUTABLE',
          'command: resync is only for database (postgres) pipes',
        );
      }
      if (!RESYNCABLE.includes(current)) {
        throw new ConflictError(
          'SLUICE_ERR_PIPE_STATE',
          `cannot resync a pipe in state ${current}: resync works from ${RESYNCABLE.join(', ')}`,
        );
      }
      return [{ to: 'Resync', reason: 'resync requested' }];
  }
}

/** Table mappings of a database pipe may change only while it is paused or stopped. */
export function canModifyTableMappings(state: PipeState): boolean {
  return state === 'Stopped' || state === 'Paused';
}
