// Health alerts asked for in a pipe's create body: the one place the pipes and the alerts areas
// meet (README, "Pipe history"), composed by the HTTP route that creates a pipe.
export { type CreatedPipe, type HealthPlan, PipeHealth } from './pipe-health.js';
export { HealthAlertsMade, HealthAlertsRequest } from './schema.js';
