/**
 * Where a node's watcher starts (watch-resume.ts): the bookmark, or a
 * relist when the bookmark belongs to another cluster or is ahead of the
 * cluster (an etcd restore).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { WatchBookmark } from '../../lib/pod/watch/watch-bookmark.ts';
import { type ClusterProbe, isResourceVersionAhead, resumePoint } from '../../lib/pod/watch/watch-resume.ts';

function probe(uid: string, current: string): ClusterProbe & { rvReads: number } {
  const p = {
    rvReads: 0,
    uid: async () => uid,
    currentResourceVersion: async () => {
      p.rvReads++;
      return current;
    },
  };
  return p;
}

const bookmark = (resourceVersion: string, clusterUid?: string): WatchBookmark => ({
  node: 'vk-1',
  resourceVersion,
  epoch: 1,
  updatedAt: '',
  ...(clusterUid ? { clusterUid } : {}),
});

describe('resumePoint', () => {
  it('relists without a bookmark', async () => {
    assert.deepEqual(await resumePoint(undefined, probe('c1', '10')), { relist: 'no-bookmark' });
  });

  it('resumes from a bookmark of this cluster at or behind its current resourceVersion', async () => {
    assert.deepEqual(await resumePoint(bookmark('10', 'c1'), probe('c1', '10')), { from: '10' });
    assert.deepEqual(await resumePoint(bookmark('9', 'c1'), probe('c1', '10')), { from: '9' });
  });

  it('relists after a bookmark of another cluster, without reading the resourceVersion', async () => {
    const p = probe('c2', '10');
    assert.deepEqual(await resumePoint(bookmark('5', 'c1'), p), { relist: 'other-cluster' });
    assert.equal(p.rvReads, 0);
  });

  it('relists when the bookmark is ahead of the cluster (an etcd restore keeps the identity)', async () => {
    assert.deepEqual(await resumePoint(bookmark('750', 'c1'), probe('c1', '120')), { relist: 'ahead' });
  });

  it('takes a bookmark without an identity for this cluster, and still checks it is not ahead', async () => {
    assert.deepEqual(await resumePoint(bookmark('100'), probe('c1', '120')), { from: '100' });
    assert.deepEqual(await resumePoint(bookmark('750'), probe('c1', '120')), { relist: 'ahead' });
  });
});

describe('isResourceVersionAhead', () => {
  it('compares decimal resourceVersions as integers, beyond 2^53 too', () => {
    assert.equal(isResourceVersionAhead('750', '120'), true);
    assert.equal(isResourceVersionAhead('120', '750'), false);
    assert.equal(isResourceVersionAhead('99', '100'), false);
    assert.equal(isResourceVersionAhead('100', '100'), false);
    assert.equal(isResourceVersionAhead('9007199254740993', '9007199254740992'), true);
  });

  it('assumes no order for resourceVersions that are not decimal integers (they are formally opaque)', () => {
    assert.equal(isResourceVersionAhead('abc', '1'), false);
    assert.equal(isResourceVersionAhead('2', 'x7'), false);
    assert.equal(isResourceVersionAhead('', '1'), false);
  });
});
