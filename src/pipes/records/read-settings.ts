import type { PipeConfig } from '../model.js';

/**
 * The engine settings every source reads records with: bounded memory whatever the size
 * (bench/memory.ts: blocks are written as they reach 16 MB, and local files are read with pread,
 * not mapped into the engine's memory), the pipe's `engine_*` settings, unknown fields skipped
 * and dates read as they come.
 */
export function readSettings(settings: PipeConfig['settings']): Record<string, string | number> {
  const s = settings;
  return {
    min_insert_block_size_bytes: s.engine_min_insert_block_size_bytes || 16 * 1024 * 1024,
    storage_file_read_method: 'pread',
    ...(s.engine_max_threads ? { max_threads: s.engine_max_threads } : {}),
    ...(s.engine_max_insert_threads ? { max_insert_threads: s.engine_max_insert_threads } : {}),
    input_format_skip_unknown_fields: 1,
    date_time_input_format: 'best_effort',
  };
}
