import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hintResource, hintsOf } from '../../lib/events/pod-event.ts';
import { hintsFor, syncProjection, type WatchedPod, WatchHints } from '../../lib/pod/watch/watch-hints.ts';

/** A pod as a watch delivers it: JSON, dates as strings. */
function watched(
  options: {
    rv?: string;
    image?: string;
    phase?: string;
    running?: boolean;
    deleting?: string;
    grace?: number;
    finalizers?: string[];
  } = {},
): WatchedPod {
  return {
    metadata: {
      uid: 'u1',
      resourceVersion: options.rv ?? '10',
      managedFields: [{ manager: 'x', time: `2024-05-01T12:00:${options.rv ?? '10'}Z` }],
      ...(options.deleting ? { deletionTimestamp: options.deleting } : {}),
      ...(options.grace !== undefined ? { deletionGracePeriodSeconds: options.grace } : {}),
      ...(options.finalizers ? { finalizers: options.finalizers } : {}),
    },
    spec: { nodeName: 'vk', containers: [{ name: 'c', image: options.image ?? 'nginx:1' }] },
    status: {
      phase: options.phase ?? (options.running ? 'Running' : 'Pending'),
      ...(options.running ? { containerStatuses: [{ state: { running: {} } }] } : {}),
    },
  };
}

describe('pod-watch hints', () => {
  it('a status write changes nothing pod-sync decides from; a spec change, a delete or a finish does', () => {
    const created = syncProjection(watched());
    assert.equal(syncProjection(watched({ rv: '11', running: true })), created, 'status and managedFields');
    assert.notEqual(syncProjection(watched({ image: 'nginx:2' })), created);
    assert.notEqual(syncProjection(watched({ deleting: '2024-05-01T12:01:00Z', grace: 30 })), created);
    assert.notEqual(syncProjection(watched({ phase: 'Succeeded' })), created);
    // While terminating, whether a container runs decides between deleting in the provider and force-deleting.
    assert.notEqual(
      syncProjection(watched({ deleting: '2024-05-01T12:01:00Z', grace: 30, running: true })),
      syncProjection(watched({ deleting: '2024-05-01T12:01:00Z', grace: 30 })),
    );
  });

  it('unchanged since the previous event of the uid; deleted-next for grace 0 without finalizers; not-running when terminating', () => {
    const p = watched();
    assert.deepEqual(hintsFor('ADDED', p, undefined, syncProjection(p)), []);
    assert.deepEqual(hintsFor('MODIFIED', p, syncProjection(p), syncProjection(p)), ['unchanged']);
    const graceZero = watched({ deleting: '2024-05-01T12:00:00Z', grace: 0 });
    assert.deepEqual(hintsFor('MODIFIED', graceZero, undefined, syncProjection(graceZero)), ['deleted-next']);
    const finalized = watched({ deleting: '2024-05-01T12:00:00Z', grace: 0, finalizers: ['x/y'] });
    assert.deepEqual(hintsFor('MODIFIED', finalized, undefined, syncProjection(finalized)), ['not-running']);
    const stopping = watched({ deleting: '2024-05-01T12:01:00Z', grace: 30, running: true });
    assert.deepEqual(hintsFor('MODIFIED', stopping, undefined, syncProjection(stopping)), []);
    assert.deepEqual(hintsFor('DELETED', p, syncProjection(p), syncProjection(p)), []);
  });

  it('a watch request remembers each uid from its previous announced event, and forgets it on DELETED', () => {
    const hints = new WatchHints();
    assert.deepEqual(hints.announce('ADDED', watched()), { resources: [] });
    // A status write: pod-sync would skip it, so it is not announced.
    assert.equal(hints.announce('MODIFIED', watched({ rv: '11', running: true })), undefined);
    assert.deepEqual(hints.announce('MODIFIED', watched({ rv: '12', image: 'nginx:2' })), { resources: [] });
    assert.deepEqual(hints.announce('DELETED', watched({ rv: '13' })), { resources: [] });
    assert.deepEqual(hints.announce('MODIFIED', watched({ rv: '14', image: 'nginx:2' })), { resources: [] });
  });

  it('announces not-running; a grace-0 delete is left to its DELETED event, compared with what was announced', () => {
    const hints = new WatchHints();
    hints.announce('ADDED', watched({ running: true }));
    const stopped = watched({ rv: '11', deleting: '2024-05-01T12:01:00Z', grace: 30 });
    assert.deepEqual(hintsOf(hints.announce('MODIFIED', stopped)?.resources ?? []), ['not-running']);
    const graceZero = watched({ rv: '12', deleting: '2024-05-01T12:01:00Z', grace: 0 });
    assert.equal(hints.announce('MODIFIED', graceZero), undefined);
    // Had it been followed by anything but DELETED, that event is compared with the not-running one.
    assert.equal(
      hints.announce('MODIFIED', watched({ rv: '13', deleting: '2024-05-01T12:01:00Z', grace: 30 })),
      undefined,
    );
    assert.deepEqual(hints.announce('DELETED', graceZero), { resources: [] });
  });

  it('hints travel as resources; other resources and unknown hints are ignored', () => {
    assert.deepEqual(
      hintsOf([hintResource('unchanged'), 'arn:aws:events:x', 'serverless-virtual-kubelet:hint/x']),
      ['unchanged'],
    );
  });
});
