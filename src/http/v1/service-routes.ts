import { Type as T } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import type { ServiceScope } from '../../pipes/index.js';
import { Envelope, V1_ERRORS } from '../envelope.js';

/** What every route under a service shares: its path and params, roles, and answer. */
export const SERVICE_PATH = '/v1/organizations/:organizationId/services/:serviceId';
export const ServiceParams = T.Object({ organizationId: T.String(), serviceId: T.String() });
export const pipeTags = ['pipes'];
export const readAccess = { access: { role: 'read-only' as const } };
export const writeAccess = { access: { role: 'developer' as const } };

export const enveloped = <R extends Parameters<typeof Envelope>[0]>(result: R) => ({
  200: Envelope(result),
  ...V1_ERRORS,
});

export function scopeOf(request: FastifyRequest): ServiceScope {
  const { organizationId, serviceId } = request.params as ServiceScope;
  return { organizationId, serviceId };
}
