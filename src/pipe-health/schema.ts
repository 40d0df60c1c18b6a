import { type Static, Type as T } from '@sinclair/typebox';
import { alertSchemas } from '../alerts/index.js';
import { StrictObject, StringEnum } from '../schema/index.js';

/**
 * `healthAlerts` of a pipe's create body, a field of Sluice's own (README, "Pipe history"): the
 * alerts on the pipe's history to make with it. Clients that do not send it are unaffected.
 */
export const HealthAlertsRequest = StrictObject(
  {
    webhookId: T.String({
      pattern: '^[0-9a-f]{24}$',
      description:
        "A webhook of a team of the pipe's organization: the alerts are that team's, and notify it",
    }),
    maxLag: T.Optional(
      T.Integer({ minimum: 0, description: 'Alert when the largest lag over 5 minutes is above this' }),
    ),
    badRecords: T.Optional(
      T.Boolean({ description: 'Alert when a minute sets records aside (default true)' }),
    ),
    noRowsFor: T.Optional(
      StringEnum(alertSchemas.INTERVALS, { description: 'Alert when the pipe writes no row for this long' }),
    ),
    notRunningFor: T.Optional(
      StringEnum(alertSchemas.INTERVALS, {
        description:
          'Alert when the pipe is Degraded or Failed in a minute of a window this long (default 5m)',
      }),
    ),
  },
  { description: 'Sluice: alerts on the pipe\'s history made with it (README, "Pipe history")' },
);
export type HealthAlertsRequest = Static<typeof HealthAlertsRequest>;

/** What a create answers of the alerts it made, beside the pipe. */
export const HealthAlertsMade = T.Object({
  dashboardId: T.String(),
  alertIds: T.Array(T.String()),
});
export type HealthAlertsMade = Static<typeof HealthAlertsMade>;
