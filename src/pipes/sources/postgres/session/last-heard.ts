/**
 * How long a server has said nothing on a connection, for the checks that take a silent one as
 * lost (the replication stream, a range's COPY). Time this side was not reading (paused for room)
 * does not count: what the server sent then waits unread.
 */
export class LastHeard {
  private at = Date.now();

  heard(): void {
    this.at = Date.now();
  }

  /** Milliseconds since the server was last heard; zero while this side is not `reading`. */
  silentMs(reading: boolean): number {
    if (!reading) this.heard();
    return Date.now() - this.at;
  }
}
