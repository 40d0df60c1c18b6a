export type { BootstrapResult, BootstrapValues, CreatedKey, CreatedToken } from './identity-service.js';
export { IdentityService, isUuid } from './identity-service.js';
export { checkName } from './names.js';
export type { KeyPrincipal, TokenPrincipal } from './principal.js';
export { roleAtLeast } from './principal.js';
export {
  checkSignInBody,
  DEFAULT_CONSOLE_USER,
  type SignInBody,
  TeamChoiceError,
} from './session-input.js';
export {
  type ActiveSession,
  alertsUnavailable,
  ConsoleSessions,
  type ConsoleSessionsOptions,
  type ConsoleSessionView,
  type SignIn,
} from './sessions.js';
export * from './views.js';
