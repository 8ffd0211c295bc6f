import type middy from '@middy/core';
import type { Metrics } from '../metrics/emf.ts';
import type { FunctionContext } from './function-context.ts';

/** Metrics that buffer their data points until flushed (one EMF document per invocation, say). */
interface BufferedMetrics extends Metrics {
  flush(): void | Promise<void>;
}

function isBuffered(metrics: Metrics): metrics is BufferedMetrics {
  return 'flush' in metrics && typeof metrics.flush === 'function';
}

/**
 * Flushes buffered metrics when the handler returns or fails, so that an
 * invocation's data points leave with it (a frozen sandbox writes nothing).
 * Metrics written as they happen need no flush and are left alone. An
 * invocation ended early by the release gate records nothing, so there is
 * nothing to flush.
 */
export function flushMetrics(): middy.MiddlewareObj<unknown, unknown, Error, FunctionContext> {
  const flush = async (request: middy.Request<unknown, unknown, Error, FunctionContext>) => {
    const metrics = request.context.deps?.metrics;
    if (metrics && isBuffered(metrics)) await metrics.flush();
  };
  return { name: 'flushMetrics', after: flush, onError: flush };
}
