import { PodEventPublisher, type PodEventPublisherOptions } from '../events/publisher.ts';
import type { LocalEventBus } from './event-bus.ts';

/**
 * The publisher the functions get in tests and `npm start`: the same
 * PodEventPublisher as in AWS, with the in-process bus's PutEvents in place
 * of EventBridge's, so batching, partial failures and resends run for real.
 */
export function createLocalBusPublisher(
  bus: LocalEventBus,
  options: Omit<PodEventPublisherOptions, 'send'> = {},
): PodEventPublisher {
  return new PodEventPublisher({ ...options, send: (entries) => bus.putEvents(entries) });
}
