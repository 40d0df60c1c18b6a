/**
 * What each sealed value is bound to (AES-GCM associated data): a sealed blob opens only in its
 * own place, so one cannot be copied to another pipe or webhook. One list, for the modules that
 * seal and for the key rotation that opens and seals them all again (src/cli/rotate-master-key.ts).
 */
export const SEALED_CONTEXT = {
  pipe: (pipeId: string) => `pipe:${pipeId}`,
  webhook: (webhookId: string) => `webhook:${webhookId}`,
  masterKeyCheck: 'master-key-check',
} as const;
