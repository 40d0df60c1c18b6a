/** Allowed values, from the hosted service's API and Terraform provider (README, "Pipes"). */
export const TABLE_ENGINES = ['MergeTree', 'ReplacingMergeTree', 'SummingMergeTree', 'Null'] as const;
