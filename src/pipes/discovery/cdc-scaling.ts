import { type Problem, ValidationError } from '../../errors.js';
import type { IdentityService } from '../../identity/index.js';
import { checker } from '../../schema/index.js';
import type { Store } from '../../store/index.js';
import type { ServiceScope } from '../index.js';
import { withoutUnset } from '../schema/index.js';
import type { CdcCapacityListener } from './port.js';
import { type CdcScaling, CdcScalingBody } from './schema.js';

/**
 * What a service that never set its scaling answers: the hosted service's own default, one compute
 * unit (2 cores, 8 GiB). Sluice limits nothing until a PATCH sets values (README, "Resources of a
 * service's database pipes").
 */
export const DEFAULT_CDC_SCALING: CdcScaling = { replicaCpuMillicores: 2000, replicaMemoryGb: 8 };

const checkBody = checker(CdcScalingBody);

/**
 * The resources a service gives its database (PostgreSQL) pipes, all of them together: stored per
 * service, validated as the hosted service validates them, and handed to the pipe runtime, which
 * reads at most one batch per core at once across the service's PostgreSQL pipes.
 */
export class CdcScalingService {
  private listener: CdcCapacityListener | undefined;

  constructor(
    private readonly store: Store,
    private readonly identity: IdentityService,
  ) {}

  /** The runtime that applies the scaling (absent when pipes do not run here). */
  attach(listener: CdcCapacityListener): void {
    this.listener = listener;
  }

  async get(scope: ServiceScope): Promise<CdcScaling> {
    await this.identity.getService(scope.organizationId, scope.serviceId);
    const row = await this.store.repos.cdcScaling.get(scope.serviceId);
    return row
      ? { replicaCpuMillicores: row.replicaCpuMillicores, replicaMemoryGb: row.replicaMemoryGb }
      : { ...DEFAULT_CDC_SCALING };
  }

  /** Merges the body into the current scaling; the result must hold four GiB per core. */
  async update(scope: ServiceScope, sent: unknown): Promise<CdcScaling> {
    const body = withoutUnset(sent);
    await this.identity.getService(scope.organizationId, scope.serviceId);
    const problems = checkBody(body);
    if (problems.length > 0) throw new ValidationError(problems);
    const next = await this.store.transaction(async (repos) => {
      const stored = await repos.cdcScaling.get(scope.serviceId);
      const merged: CdcScaling = { ...(stored ?? DEFAULT_CDC_SCALING), ...(body as Partial<CdcScaling>) };
      const rules = scalingProblems(merged, body as Partial<CdcScaling>);
      if (rules.length > 0) throw new ValidationError(rules);
      await repos.cdcScaling.put({ serviceId: scope.serviceId, ...merged, updatedAt: new Date() });
      return merged;
    });
    this.listener?.cdcScalingChanged(scope.serviceId, next.replicaCpuMillicores);
    return next;
  }
}

/** Whole cores, memory in multiples of 4 GiB, and four GiB per core (the hosted service's rules). */
function scalingProblems(scaling: CdcScaling, sent: Partial<CdcScaling>): Problem[] {
  const problems: Problem[] = [];
  const { replicaCpuMillicores: cpu, replicaMemoryGb: memory } = scaling;
  if (cpu % 1000 !== 0) {
    problems.push({
      path: 'replicaCpuMillicores',
      message: `Must be a multiple of 1000 (whole cores), got ${cpu}`,
    });
  }
  if (memory % 4 !== 0) {
    problems.push({ path: 'replicaMemoryGb', message: `Must be a multiple of 4, got ${memory}` });
  }
  const expected = (cpu / 1000) * 4;
  if (problems.length === 0 && memory !== expected) {
    // Named by what was sent: the field to change is the one that breaks the pair.
    const path = sent.replicaMemoryGb === undefined ? 'replicaCpuMillicores' : 'replicaMemoryGb';
    problems.push({
      path,
      message: `replicaMemoryGb must be 4 times the cores: ${cpu} millicores (${cpu / 1000} cores) need ${expected} GiB, got ${memory}; send both together`,
    });
  }
  return problems;
}
