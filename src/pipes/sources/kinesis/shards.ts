import type { KinesisConnection } from './client.js';

/** A shard of the stream, as ListShards gives it. */
export interface ShardInfo {
  id: string;
  /** The shards it was split or merged from: it starts only when they are finished. */
  parents: string[];
  /** Closed by a split or a merge: its records end, and its children go on. */
  closed: boolean;
}

/** Every shard of the stream still within its retention, open or closed, in the stream's order. */
export async function listShards(connection: KinesisConnection, streamName: string): Promise<ShardInfo[]> {
  const { client, sdk } = connection;
  const shards: ShardInfo[] = [];
  let nextToken: string | undefined;
  do {
    const page = await client.send(
      new sdk.ListShardsCommand(nextToken ? { NextToken: nextToken } : { StreamName: streamName }),
    );
    for (const shard of page.Shards ?? []) {
      if (!shard.ShardId) continue;
      shards.push({
        id: shard.ShardId,
        parents: [shard.ParentShardId, shard.AdjacentParentShardId].filter(
          (id): id is string => typeof id === 'string' && id.length > 0,
        ),
        closed: Boolean(shard.SequenceNumberRange?.EndingSequenceNumber),
      });
    }
    nextToken = page.NextToken;
  } while (nextToken);
  return shards;
}
