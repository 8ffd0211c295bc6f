import type { PutEventsRequestEntry, PutEventsResultEntry } from '@aws-sdk/client-eventbridge';
import type { EventBridgeEvent } from 'aws-lambda';
import { eventTime } from './lambda-context.ts';

/** The envelope EventBridge hands a Lambda target; `detail` is the parsed `Detail` object. */
export type BusEvent = EventBridgeEvent<string, Record<string, unknown>>;

/** At most this many entries per PutEvents call (AWS API reference: Entries, 1 to 10 items). */
export const MAX_ENTRIES_PER_CALL = 10;

/**
 * The limit on the summed entry sizes of one request: 256 KiB, the PutEvents
 * limit in AWS's documentation for years. AWS raised it to 1 MiB in most
 * regions in January 2026; 256 KiB keeps the code within the stricter limit.
 * Exceeding it fails the whole request, not the entry.
 */
export const DEFAULT_MAX_REQUEST_BYTES = 256 * 1024;

/**
 * Thrown for a request AWS rejects as a whole. Named as the SDK names the
 * exception (`name`, `$fault`), so that code classifying SDK errors by name
 * treats both alike.
 */
export class EventBusValidationError extends Error {
  override name = 'ValidationException';
  readonly $fault = 'client';
}

const utf8 = (text: string) => Buffer.byteLength(text, 'utf8');

/**
 * The entry size as EventBridge computes it ("Calculating PutEvents event entry
 * size", EventBridge User Guide): 14 bytes for `Time` if given, plus the UTF-8
 * bytes of `Source`, `DetailType`, `Detail` and each of `Resources`.
 */
export function entrySize(entry: PutEventsRequestEntry): number {
  let size = entry.Time ? 14 : 0;
  size += utf8(entry.Source ?? '') + utf8(entry.DetailType ?? '') + utf8(entry.Detail ?? '');
  for (const resource of entry.Resources ?? []) size += utf8(resource);
  return size;
}

/** Whole-request checks, in the words AWS uses. */
export function validateRequest(
  entries: readonly PutEventsRequestEntry[] | undefined,
  maxBytes: number,
): void {
  const count = entries?.length ?? 0;
  if (count < 1 || count > MAX_ENTRIES_PER_CALL) {
    const bound = count < 1 ? 'greater than or equal to 1' : `less than or equal to ${MAX_ENTRIES_PER_CALL}`;
    throw new EventBusValidationError(
      `1 validation error detected: Value '[PutEventsRequestEntry]' at 'entries' failed to satisfy constraint: Member must have length ${bound}`,
    );
  }
  const total = (entries ?? []).reduce((sum, entry) => sum + entrySize(entry), 0);
  if (total > maxBytes) {
    throw new EventBusValidationError('Total size of the entries in the request is over the limit.');
  }
}

type EntryFailure = Required<Pick<PutEventsResultEntry, 'ErrorCode' | 'ErrorMessage'>>;

function invalid(parameter: string): EntryFailure {
  return {
    ErrorCode: 'InvalidArgument',
    ErrorMessage: `Parameter ${parameter} is not valid. Reason: ${parameter} is a required argument.`,
  };
}

/**
 * Parses one entry into the envelope AWS would deliver, or returns the
 * per-entry failure AWS would report (the rest of the batch goes on).
 */
export function toBusEvent(
  entry: PutEventsRequestEntry,
  meta: { id: string; nowMs: number; account: string; region: string },
): BusEvent | EntryFailure {
  if (!entry.Source) return invalid('Source');
  if (!entry.DetailType) return invalid('DetailType');
  if (!entry.Detail) return invalid('Detail');
  if (entry.Source.startsWith('aws.')) {
    return {
      ErrorCode: 'NotAuthorizedForSourceException',
      ErrorMessage: `Not authorized for the source ${entry.Source}; the aws. prefix is reserved.`,
    };
  }
  let detail: unknown;
  try {
    detail = JSON.parse(entry.Detail);
  } catch {
    detail = undefined;
  }
  if (typeof detail !== 'object' || detail === null || Array.isArray(detail)) {
    return { ErrorCode: 'MalformedDetail', ErrorMessage: 'Detail is malformed.' };
  }
  return {
    version: '0',
    id: meta.id,
    'detail-type': entry.DetailType,
    source: entry.Source,
    account: meta.account,
    time: eventTime(entry.Time ? entry.Time.getTime() : meta.nowMs),
    region: meta.region,
    resources: [...(entry.Resources ?? [])],
    detail: detail as Record<string, unknown>,
  };
}

export function isEntryFailure(value: BusEvent | EntryFailure): value is EntryFailure {
  return 'ErrorCode' in value;
}
