import { createRequire } from 'node:module';
import type { History } from '@temporalio/common/lib/proto-utils.js';

/**
 * historyToJSON / historyFromJSON, in the JSON format of other Temporal tools (what
 * `@temporalio/common/lib/proto-utils` writes and reads, and `temporal workflow show -o json`).
 *
 * Why not those functions: with this lockfile npm gives @temporalio/common and
 * @temporalio/proto each their own copy of protobufjs 8 (the root holds protobufjs 7 for
 * @grpc/proto-loader), and proto-utils then fails with "type must be a Type" because the
 * history type comes from the other copy. Here the JSON codec is taken from the copy that
 * @temporalio/proto itself uses, so it works whatever npm's layout is.
 */
interface ProtoJson {
  toJson(type: unknown, message: unknown): unknown;
  fromJson(type: unknown, json: unknown, options?: { ignoreUnknownFields?: boolean }): unknown;
}
interface ProtoRoot {
  lookupType(name: string): unknown;
  temporal: { api: { history: { v1: { History: { fromObject(object: unknown): History } } } } };
}

const require = createRequire(import.meta.url);
const protoEntry = require.resolve('@temporalio/proto');
const root = require(protoEntry) as ProtoRoot;
const protojson = createRequire(protoEntry)('protobufjs/ext/protojson') as ProtoJson;
const historyType = root.lookupType('temporal.api.history.v1.History');

export function historyToJSON(history: History): string {
  const message = root.temporal.api.history.v1.History.fromObject(history);
  return JSON.stringify(protojson.toJson(historyType, message), null, 2);
}

export function historyFromJSON(json: unknown): History {
  if (typeof json !== 'object' || json === null || !Array.isArray((json as History).events)) {
    throw new TypeError('expected a history: an object with an array of events');
  }
  return protojson.fromJson(historyType, json, { ignoreUnknownFields: true }) as History;
}
