/** A failure that retrying cannot fix (a missing table, an unsupported option): the pipe Fails. */
export class PermanentError extends Error {}
