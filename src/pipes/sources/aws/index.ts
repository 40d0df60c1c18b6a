// What the AWS-backed sources (S3, MSK IAM, Kinesis) share: keys and roles assumed through STS.
export { type AwsKeys, assumeRole } from './assume-role.js';
