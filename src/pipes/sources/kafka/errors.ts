/** What @platformatic/kafka's errors say, through their nesting (MultipleErrors, causes). */
export function codesOf(error: unknown): string[] {
  return flatten(error).flatMap((e) => [e.code, e.cause?.code].filter((c): c is string => !!c));
}

export function messagesOf(error: unknown): string[] {
  return flatten(error)
    .flatMap((e) => [e.message, e.cause?.message])
    .filter((m): m is string => !!m && !/^Multiple errors|^Performing/.test(m));
}

/** The broker answered this error code (`OFFSET_OUT_OF_RANGE`, ...) somewhere in the response. */
export function brokerSaid(error: unknown, apiId: string): boolean {
  return flatten(error).some((e) => e.apiId === apiId);
}

interface ClientError {
  apiId?: string;
  code?: string;
  message?: string;
  errors?: ClientError[];
  cause?: ClientError;
}

function flatten(error: unknown): ClientError[] {
  const e = error as ClientError;
  if (!e || typeof e !== 'object') return [];
  return [e, ...(e.errors ?? []).flatMap(flatten), ...(e.cause ? flatten(e.cause) : [])];
}

/**
 * A failure of a running pipe's Kafka client, as its status shows it: what went wrong in words a
 * user acts on (the client's own errors name no secret).
 */
export function kafkaFailure(error: unknown): Error {
  const codes = codesOf(error);
  const detail = messagesOf(error).at(-1) ?? String(error);
  const role = messagesOf(error).find((m) => m.startsWith('cannot assume iamRole'));
  if (role) return new Error(`Kafka: ${role}`);
  if (codes.includes('PLT_KFK_AUTHENTICATION'))
    return new Error('Kafka: the brokers refused the credentials');
  if (codes.includes('PLT_KFK_NETWORK') || /connect|ECONNREFUSED|socket/i.test(detail)) {
    return new Error(`Kafka: cannot reach the brokers (${detail})`);
  }
  return new Error(`Kafka: ${detail}`);
}
