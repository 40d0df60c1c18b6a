// What the AWS-backed sources (S3, MSK IAM, Kinesis) share: keys and roles assumed through STS.
export { type AwsKeys, assumeRole } from './assume-role.js';
export { AccessKey } from './config.js';
export { iamRoleRule, keyRule } from './rules.js';
