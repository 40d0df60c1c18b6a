import type { Problem } from '../../../errors.js';
import { iamRoleRule } from '../aws/index.js';
import type { PostgresConfig, TableMappingConfig } from './config.js';

export function postgresRules(postgres: PostgresConfig, path: string, problems: Problem[]): void {
  const authentication = postgres.authentication ?? 'basic';
  if (authentication === 'basic' && postgres.credentials === undefined) {
    problems.push({
      path: `${path}.credentials`,
      message: 'Required for basic authentication: give username and password',
    });
  }
  iamRoleRule(postgres, path, authentication === 'IAM_ROLE', problems);
  const settings = postgres.settings;
  if (settings?.replicationSlotName !== undefined && settings.replicationMode !== 'cdc_only') {
    problems.push({
      path: `${path}.settings.replicationSlotName`,
      message: 'Only used with replicationMode cdc_only',
    });
  }
  tableMappingRules(postgres.tableMappings, `${path}.tableMappings`, problems);
}

/** Target tables are unique; a custom sorting key is given exactly when asked for. */
export function tableMappingRules(mappings: TableMappingConfig[], path: string, problems: Problem[]): void {
  const targets = new Map<string, number>();
  mappings.forEach((mapping, index) => {
    const at = `${path}[${index}]`;
    const first = targets.get(mapping.targetTable);
    if (first !== undefined) {
      problems.push({
        path: `${at}.targetTable`,
        message: `Already used by ${path}[${first}]: target tables must be unique`,
      });
    } else {
      targets.set(mapping.targetTable, index);
    }
    const custom = mapping.useCustomSortingKey === true;
    const keys = mapping.sortingKeys;
    if (custom && (!keys || keys.length === 0)) {
      problems.push({
        path: `${at}.sortingKeys`,
        message: 'Required with useCustomSortingKey: give at least one column',
      });
    }
    if (!custom && keys !== undefined) {
      problems.push({ path: `${at}.sortingKeys`, message: 'Only used with useCustomSortingKey: true' });
    }
  });
}
