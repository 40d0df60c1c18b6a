import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions } from 'pino';

type LogMethod = (...args: unknown[]) => void;

/**
 * Fastify's `childLoggerFactory`: a request's logger that makes its pino child (the request id as
 * `requestId`, redaction as the parent's) only when something logs through it. Every request used
 * to pay for a child, serialising its bindings, about 4% of a GET (bench/api.ts), while at the
 * default level a request logs nothing unless it fails. A route with a level of its own gets its
 * child at once, as the level decides what the child's methods do.
 */
export function lazyRequestLogger(
  logger: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  if (options.level !== undefined) return logger.child(bindings, options);
  return new LazyChild(logger, bindings, options) as unknown as FastifyBaseLogger;
}

/** Methods on the prototype: nothing but the three fields is allocated per request. */
class LazyChild {
  private made: FastifyBaseLogger | undefined;

  constructor(
    private readonly parent: FastifyBaseLogger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  private get real(): FastifyBaseLogger {
    this.made ??= this.parent.child(this.bindings, this.options);
    return this.made;
  }

  /** The parent's level until a child exists: a child without a level of its own inherits it. */
  get level(): string {
    return this.made?.level ?? this.parent.level;
  }

  set level(level: string) {
    this.real.level = level;
  }

  fatal(...args: unknown[]): void {
    (this.real.fatal as LogMethod).apply(this.real, args);
  }
  error(...args: unknown[]): void {
    (this.real.error as LogMethod).apply(this.real, args);
  }
  warn(...args: unknown[]): void {
    (this.real.warn as LogMethod).apply(this.real, args);
  }
  info(...args: unknown[]): void {
    (this.real.info as LogMethod).apply(this.real, args);
  }
  debug(...args: unknown[]): void {
    (this.real.debug as LogMethod).apply(this.real, args);
  }
  trace(...args: unknown[]): void {
    (this.real.trace as LogMethod).apply(this.real, args);
  }
  silent(...args: unknown[]): void {
    (this.real.silent as LogMethod).apply(this.real, args);
  }

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.real.child(bindings, options);
  }
}
