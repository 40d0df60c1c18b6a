import {
  type API,
  type Callback,
  Consumer,
  createAPI,
  fetchV12,
  fetchV13,
  fetchV14,
  fetchV15,
  fetchV16,
  fetchV17,
  kGetApi,
  type Reader,
  type RequestCreator,
  ResponseError,
} from '@platformatic/kafka';
import type { AbortedTransaction } from './record-batches.js';
import { sectionOf } from './sections.js';

/** A partition of a Fetch answer with its records section as the broker sent it. */
export interface RawFetchPartition {
  partitionIndex: number;
  errorCode: number;
  highWatermark: bigint;
  abortedTransactions: AbortedTransaction[];
  /** The record batches, not decoded (record-batches.ts walks them); undefined when none came. */
  records: Buffer | undefined;
}

export interface RawFetchResponse {
  responses: { topicId: string; partitions: RawFetchPartition[] }[];
}

/** The Fetch versions the client speaks (its fetch-v12 ... fetch-v17), each one's request as it writes it. */
const REQUESTS: Record<number, RequestCreator> = {
  12: fetchV12.createRequest,
  13: fetchV13.createRequest,
  14: fetchV14.createRequest,
  15: fetchV15.createRequest,
  16: fetchV16.createRequest,
  17: fetchV17.createRequest,
};

/**
 * The client's Fetch answer, read as its fetch-v12 ... v17 parseResponse reads it (the same
 * fields, the same errors), except that each partition's records stay bytes: the client would
 * decode every record into an object of its own.
 */
function parseRawFetch(_correlationId: number, apiKey: number, apiVersion: number, reader: Reader) {
  const errors: [string, number][] = [];
  reader.readInt32(); // throttle_time_ms
  const errorCode = reader.readInt16();
  if (errorCode !== 0) errors.push(['', errorCode]);
  reader.readInt32(); // session_id
  const response: RawFetchResponse = {
    responses: reader.readArray((r, i) => ({
      // Topic ids since version 13; names before.
      topicId: apiVersion >= 13 ? r.readUUID() : (r.readString() ?? ''),
      partitions: r.readArray((r, j) => {
        const partitionIndex = r.readInt32();
        const partitionError = r.readInt16();
        const highWatermark = r.readInt64();
        r.readInt64(); // last_stable_offset
        r.readInt64(); // log_start_offset
        const abortedTransactions =
          r.readArray((r) => ({ producerId: r.readInt64(), firstOffset: r.readInt64() })) ?? [];
        r.readInt32(); // preferred_read_replica
        if (partitionError !== 0) errors.push([`/responses/${i}/partitions/${j}`, partitionError]);
        // COMPACT_RECORDS: the length plus one.
        const size = r.readUnsignedVarInt() - 1;
        let records: Buffer | undefined;
        if (size > 0) {
          records = sectionOf(r.buffer.subarray(r.position, r.position + size).buffers, size);
          r.skip(size);
        }
        return { partitionIndex, errorCode: partitionError, highWatermark, abortedTransactions, records };
      }),
    })),
  };
  if (errors.length > 0) throw new ResponseError(apiKey, apiVersion, Object.fromEntries(errors), response);
  return response;
}

const rawApis = new Map<number, API<unknown[], RawFetchResponse>>();

function rawFetchApi(version: number): API<unknown[], RawFetchResponse> | undefined {
  const request = REQUESTS[version];
  if (!request) return undefined;
  let api = rawApis.get(version);
  if (!api) {
    api = createAPI<unknown[], RawFetchResponse>(1, version, request, parseRawFetch);
    rawApis.set(version, api);
  }
  return api;
}

/**
 * The client's consumer (its connections, its retries, its group membership) whose Fetch answers
 * keep the records as bytes: `fetch` resolves to a RawFetchResponse.
 */
export class RawFetchConsumer extends Consumer<Buffer, Buffer, Buffer, Buffer> {
  override [kGetApi]<RequestArguments extends Array<unknown>, ResponseType>(
    name: string,
    callback: Callback<API<RequestArguments, ResponseType>>,
  ): void {
    if (name !== 'Fetch') {
      super[kGetApi](name, callback);
      return;
    }
    super[kGetApi]<RequestArguments, ResponseType>(name, (error, api) => {
      if (error) {
        callback(error, undefined as never);
        return;
      }
      const raw = rawFetchApi(api.version);
      if (!raw) {
        callback(
          new Error(`Sluice reads Fetch versions 12 to 17; the broker offered ${api.version}`),
          undefined as never,
        );
        return;
      }
      callback(null, raw as unknown as API<RequestArguments, ResponseType>);
    });
  }
}
