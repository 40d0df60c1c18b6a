import type { Problem } from '../../../errors.js';

/** An access key is given exactly when the authentication takes one. */
export function keyRule(
  config: { accessKey?: unknown },
  path: string,
  needed: boolean,
  auth: string,
  problems: Problem[],
): void {
  if (needed && config.accessKey === undefined) {
    problems.push({
      path: `${path}.accessKey`,
      message: `Required for ${auth}: give accessKeyId and secretKey`,
    });
  }
  if (!needed && config.accessKey !== undefined) {
    problems.push({ path: `${path}.accessKey`, message: `Only used with authentication ${auth}` });
  }
}

/** A role to assume is given exactly when the authentication is IAM_ROLE. */
export function iamRoleRule(
  config: { iamRole?: string },
  path: string,
  needed: boolean,
  problems: Problem[],
): void {
  if (needed && config.iamRole === undefined) {
    problems.push({ path: `${path}.iamRole`, message: 'Required for IAM_ROLE: give the role to assume' });
  }
  if (!needed && config.iamRole !== undefined) {
    problems.push({ path: `${path}.iamRole`, message: 'Only used with authentication IAM_ROLE' });
  }
}
