import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';

export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * A local webhook receiver: records every POST and answers each path with the statuses it is given
 * for that path, in order (200 once they run out).
 */
export class Receiver {
  readonly received: Received[] = [];
  /** Statuses to answer with per path (without the query string), one per request. */
  readonly replies = new Map<string, number[]>();
  /** Paths whose requests are recorded and never answered (a delivery left in flight). */
  readonly held = new Set<string>();
  /** The answers of held requests, until `release`. */
  private readonly waiting: ServerResponse[] = [];
  private server: Server | undefined;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk) => (body += chunk));
      request.on('end', () => {
        this.received.push({ path: request.url ?? '', headers: request.headers, body });
        const path = (request.url ?? '').split('?')[0] ?? '';
        if (this.held.has(path)) return void this.waiting.push(response);
        response.writeHead(this.replies.get(path)?.shift() ?? 200).end();
      });
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    const address = this.server.address();
    this.url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  }

  /** Answers every held request with 200 (and holds no more). */
  release(): void {
    this.held.clear();
    for (const response of this.waiting.splice(0)) response.writeHead(200).end();
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()));
  }
}
