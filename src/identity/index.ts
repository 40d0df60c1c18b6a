export type { BootstrapResult, BootstrapValues, CreatedKey, CreatedToken } from './identity-service.js';
export { IdentityService, isUuid } from './identity-service.js';
export { checkName } from './names.js';
export type { KeyPrincipal, TokenPrincipal } from './principal.js';
export { roleAtLeast } from './principal.js';
export * from './views.js';
