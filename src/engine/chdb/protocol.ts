/** Messages between the API process and an embedded service's engine process. */
export interface EngineRequest {
  id: number;
  sql: string;
  /** Output format; JSON for queries that return rows, absent for statements. */
  format?: 'JSON';
}

export type EngineReply = { id: number; ok: true; text: string } | { id: number; ok: false; error: string };
