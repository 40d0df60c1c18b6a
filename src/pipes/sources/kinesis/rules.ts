import type { Problem } from '../../../errors.js';
import { iamRoleRule, keyRule } from '../aws/index.js';
import type { KinesisConfig } from './config.js';

export function kinesisRules(kinesis: KinesisConfig, path: string, problems: Problem[]): void {
  const authentication = kinesis.authentication ?? (kinesis.iamRole !== undefined ? 'IAM_ROLE' : 'IAM_USER');
  keyRule(kinesis, path, authentication === 'IAM_USER', 'IAM_USER', problems);
  iamRoleRule(kinesis, path, authentication === 'IAM_ROLE', problems);
  const atTimestamp = kinesis.iteratorType === 'AT_TIMESTAMP';
  if (atTimestamp && kinesis.timestamp === undefined) {
    problems.push({ path: `${path}.timestamp`, message: 'Required with iteratorType AT_TIMESTAMP' });
  }
  const written = kinesis.timestamp;
  if (
    typeof written === 'string' &&
    Number.isNaN(Date.parse(written.endsWith('Z') ? written : `${written}Z`))
  ) {
    problems.push({
      path: `${path}.timestamp`,
      message: `${written} is not a date: write YYYY-MM-DDThh:mm (UTC)`,
    });
  }
  if (!atTimestamp && kinesis.timestamp !== undefined) {
    problems.push({ path: `${path}.timestamp`, message: 'Only used with iteratorType AT_TIMESTAMP' });
  }
}
